/**
 * Memory for arriving active messages that the application gave back (`AmMessage.release()`),
 * reused for later ones on the executor's thread. Without it every large message costs a fresh
 * zero-filled ArrayBuffer (a 1 MiB one: page faults, zeroing, and the garbage collector's
 * external-memory pressure), which held 1 MiB AM windows to a few percent of ucx_perftest.
 *
 * Only memory the application released explicitly comes here, and by then its views of it are
 * detached (the buffer was transferred), so a message never sees its bytes change underneath it.
 * Buffers are kept by size class (powers of two): class k holds buffers of 2^k up to 2^(k+1)-1
 * bytes. A message of length L looks first in its own class (floor(log2 L)) for one at least L
 * long, which a stream of equal-sized messages always finds, then takes any from the class
 * above; either way its buffer is large enough and less than 4x its size.
 */

/** Messages below this size are copied into a fresh buffer: reuse would not pay its bookkeeping. */
export const AM_POOL_MIN_BYTES = 8 * 1024;
/** The most memory one worker's pool keeps; a buffer given back beyond it is left to the collector. */
export const AM_POOL_MAX_BYTES = 64 * 1024 * 1024;

/** How many buffers of a message's own class `take` looks at. */
const SCAN = 8;
/** log2 of the smallest power of two at or above `n` (n >= 1). */
const ceilLog2 = (n: number) => 32 - Math.clz32(n - 1);
/** log2 of the largest power of two at or below `n` (n >= 1). */
const floorLog2 = (n: number) => 31 - Math.clz32(n);

export class AmBufferPool {
  private readonly classes: ArrayBuffer[][] = [];
  private bytes = 0;

  /** Memory kept for reuse (bytes). */
  get size(): number {
    return this.bytes;
  }

  /** A buffer of at least `length` bytes from the pool (contents unspecified), or undefined. */
  take(length: number): ArrayBuffer | undefined {
    if (length < AM_POOL_MIN_BYTES || length > 0x80000000) return undefined;
    const own = this.classes[floorLog2(length)];
    let buffer: ArrayBuffer | undefined;
    // The newest few of its own class (a bounded look: a class of mixed sizes is rare).
    for (let i = (own?.length ?? 0) - 1, last = i - SCAN; own && i >= 0 && i > last; i--) {
      if (own[i]!.byteLength < length) continue;
      buffer = own[i]!;
      own[i] = own[own.length - 1]!;
      own.pop();
      break;
    }
    buffer ??= ceilLog2(length) !== floorLog2(length) ? this.classes[ceilLog2(length)]?.pop() : undefined;
    if (buffer) this.bytes -= buffer.byteLength;
    return buffer;
  }

  /** Keep `buffer` (no view of it may remain: it was transferred here) if it fits the bound. */
  give(buffer: ArrayBuffer): void {
    const n = buffer.byteLength;
    if (n < AM_POOL_MIN_BYTES || this.bytes + n > AM_POOL_MAX_BYTES) return;
    (this.classes[floorLog2(Math.min(n, 0x80000000))] ??= []).push(buffer);
    this.bytes += n;
  }

  /** Forget everything kept (the worker is closing). */
  clear(): void {
    this.classes.length = 0;
    this.bytes = 0;
  }
}
