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
 *
 * Buffers not taken for `AM_POOL_IDLE_MS` are dropped (left to the collector), checked at most
 * twice per that period when the pool is used: the pool holds what the traffic keeps reusing,
 * not the high-water mark of every size it ever saw. Without it, messages of random sizes filled
 * each size class with buffers too small for the next message of that class, and one soak's
 * process (GPU active messages, sizes 0-4 MiB) held 42 MiB in the pool after 50 seconds, on its
 * way to the 64 MiB cap, while no more than a few messages were ever in flight (issue 26).
 */

/** Messages below this size are copied into a fresh buffer: reuse would not pay its bookkeeping. */
export const AM_POOL_MIN_BYTES = 8 * 1024;
/** The most memory one worker's pool keeps; a buffer given back beyond it is left to the collector. */
export const AM_POOL_MAX_BYTES = 64 * 1024 * 1024;

/** A buffer kept this long (ms) without being taken is dropped. */
export const AM_POOL_IDLE_MS = 2000;

/** How many buffers of a message's own class `take` looks at. */
const SCAN = 8;
/** log2 of the smallest power of two at or above `n` (n >= 1). */
const ceilLog2 = (n: number) => 32 - Math.clz32(n - 1);
/** log2 of the largest power of two at or below `n` (n >= 1). */
const floorLog2 = (n: number) => 31 - Math.clz32(n);

export class AmBufferPool {
  /** Per size class, the buffers kept and when each was given (the pool's clock). */
  private readonly classes: { buffer: ArrayBuffer; at: number }[][] = [];
  private bytes = 0;
  private nextTrim = 0;

  /** `now`: a clock in ms (tests pass their own). */
  constructor(
    private readonly now: () => number = () => performance.now(),
    private readonly idleMs = AM_POOL_IDLE_MS,
  ) {}

  /** Memory kept for reuse (bytes). */
  get size(): number {
    return this.bytes;
  }

  /** A buffer of at least `length` bytes from the pool (contents unspecified), or undefined. */
  take(length: number): ArrayBuffer | undefined {
    if (length < AM_POOL_MIN_BYTES || length > 0x80000000 || this.bytes === 0) return undefined;
    this.trimIfDue(this.now());
    const own = this.classes[floorLog2(length)];
    let buffer: ArrayBuffer | undefined;
    // The newest few of its own class (a bounded look: a class of mixed sizes is rare).
    for (let i = (own?.length ?? 0) - 1, last = i - SCAN; own && i >= 0 && i > last; i--) {
      if (own[i]!.buffer.byteLength < length) continue;
      buffer = own[i]!.buffer;
      own[i] = own[own.length - 1]!;
      own.pop();
      break;
    }
    buffer ??= ceilLog2(length) !== floorLog2(length) ? this.classes[ceilLog2(length)]?.pop()?.buffer : undefined;
    if (buffer) this.bytes -= buffer.byteLength;
    return buffer;
  }

  /** Keep `buffer` (no view of it may remain: it was transferred here) if it fits the bound. */
  give(buffer: ArrayBuffer): void {
    const n = buffer.byteLength;
    if (n < AM_POOL_MIN_BYTES) return;
    const at = this.now();
    this.trimIfDue(at);
    if (this.bytes + n > AM_POOL_MAX_BYTES) return;
    (this.classes[floorLog2(Math.min(n, 0x80000000))] ??= []).push({ buffer, at });
    this.bytes += n;
  }

  /** Drop the buffers kept longer than the idle time, if the last look was half that ago. */
  private trimIfDue(now: number): void {
    if (now < this.nextTrim) return;
    this.nextTrim = now + this.idleMs / 2;
    const oldest = now - this.idleMs;
    for (const kept of this.classes) {
      if (!kept) continue;
      let w = 0;
      for (const k of kept) {
        if (k.at >= oldest) kept[w++] = k;
        else this.bytes -= k.buffer.byteLength;
      }
      kept.length = w;
    }
  }

  /** Forget everything kept (the worker is closing). */
  clear(): void {
    this.classes.length = 0;
    this.bytes = 0;
  }
}
