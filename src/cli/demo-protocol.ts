/**
 * What the two processes of `ucx-ts demo` agree on without telling each other: the schedule of
 * messages for each size, their tags and their content, and a byte reader for the node:net side.
 *
 * Content: message `seed` of `size` bytes is `window(pattern, size, seed)`, a view into one
 * pattern buffer where byte k is (k * 31) & 255, starting at byte 8 * (seed mod 31). Messages
 * that share a receive buffer one after the other differ in every byte, so a receive that left
 * stale data behind is caught, and checking a message is one memcmp (`Buffer.equals`) against
 * the expected view: every byte of every message is compared.
 */
import { Buffer } from "node:buffer";
import { closeSync, openSync, readSync } from "node:fs";
import type { Socket } from "node:net";

export const TAG_PING = 0x7563_0001;
export const TAG_PONG = 0x7563_0002;
export const TAG_BULK = 0x7563_0003;
export const TAG_ACK = 0x7563_0004;
/** The end: the listener side sends FIN once it has asked for its transports, the peer answers
 * BYE and closes first (an endpoint whose peer closed fails, so neither side may still need it). */
export const TAG_FIN = 0x7563_0005;
export const TAG_BYE = 0x7563_0006;

export const KiB = 1024;
export const MiB = 1024 * KiB;
export const DEFAULT_SIZES: readonly number[] = [8, KiB, 64 * KiB, MiB, 16 * MiB, 64 * MiB];

/** How many messages of one size each phase sends; both processes compute the same. */
export interface Plan {
  readonly size: number;
  /** Ping-pongs timed for the latency (the first `warmup` of them are not counted). */
  readonly pings: number;
  readonly warmup: number;
  /** One-way transfers timed for the bandwidth. */
  readonly transfers: number;
  /** Messages per sendMany / recvMany window of the bulk phase. */
  readonly window: number;
  /** sendMany windows the sender keeps in flight before it waits for the oldest one. */
  readonly inFlight: number;
}

export function plan(size: number): Plan {
  const pings = size <= 64 * KiB ? 200 : size <= MiB ? 40 : size <= 16 * MiB ? 8 : 4;
  const warmup = size <= 64 * KiB ? 10 : 1;
  // 20,000 small messages (160 KB at 8 B): with 2,000 the timed burst lasted a few milliseconds,
  // and one scheduler stall or collection of either process (10-30 ms on 2 cores) was the row.
  const transfers = size <= KiB ? 20000 : Math.min(500, Math.max(3, Math.ceil((32 * MiB) / size)));
  // Small messages go in windows of 256 (one sendMany/recvMany each): a stream of them costs
  // per window, not per message.
  const window = size <= KiB ? 256 : size <= 64 * KiB ? 32 : size <= MiB ? 8 : 2;
  // Small messages: every window at once (the messages are views of one pattern, nothing to
  // hold back), as node:net's writes queue without waiting; waiting for a window of 8 B sends
  // cost the sender a wake-up per window, which node:net never pays.
  const inFlight = size <= KiB ? Math.ceil(transfers / window) : 2;
  return { size, pings, warmup, transfers, window: Math.min(window, transfers), inFlight };
}

/**
 * Each size's bulk phase runs this many times on each side, for ucx-ts and for node:net alike;
 * only the last is timed. The first burst of a size ran cold (the send and receive paths'
 * first calls at that shape, UCX's first unexpected-message and pending-queue allocations): 2,000
 * 8 B messages took 20-125 ms the first time and 3-6 ms from the third on (two processes,
 * 2026-12-07), so one untimed burst made the table a measure of the warm-up, where its ping
 * phase already leaves its first round trips out. Every byte of every round is verified.
 */
export const BULK_ROUNDS = 2;

/** Seeds: pings use 0..pings-1, bulk transfers pings..pings+transfers-1. */
export function bulkSeed(p: Plan, i: number): number {
  return p.pings + i;
}

// Seed offsets 0, 8, ..., 240: 8-byte aligned views with distinct content. 31 shifts, not 32,
// so that buffers reused every 2, 8 or 32 messages (the windows) never see the same content twice
// in a row.
const SHIFTS = 31;

/** The pattern buffer for messages of up to `size` bytes. */
export function patternFor(size: number): Uint8Array {
  const out = new Uint8Array(size + SHIFTS * 8);
  for (let k = 0; k < out.length; k++) out[k] = (k * 31) & 255;
  return out;
}

/** Message `seed` of `size` bytes: a view, never a copy. */
export function window(pattern: Uint8Array, size: number, seed: number): Uint8Array {
  const at = (seed % SHIFTS) * 8;
  return pattern.subarray(at, at + size);
}

/**
 * A receive buffer, its pages touched now: the first write into fresh memory page-faults, and
 * that cost belongs to no transport (it would land in the first timed transfer). Touched twice:
 * by the kernel (a read from /dev/zero), then by this thread (the fill that shows stale data).
 * On some VMs (this project's: a PVM guest) the kernel's first write into a page costs as much
 * as the page fault itself, ~15 us a page, even after the process wrote it (measured with
 * process_vm_readv, 2026-11-26: 0.3-0.45 GB/s into pages written by memset, 5-11 GB/s after).
 * UCX's shared-memory rendezvous copies with process_vm_readv (cma) straight into the receive
 * buffer, so every fresh bulk buffer paid it inside the timed part, where node:net's kernel copy
 * lands in its own reused read buffer: 1-64 MiB ran at 1.0-1.3 GB/s for that alone.
 */
export function receiveBuffer(size: number): Uint8Array {
  const buffer = new Uint8Array(size);
  touchByKernel(buffer);
  return buffer.fill(0xee);
}

/** Have the kernel write every page of `buffer` once (zeros); nothing if /dev/zero cannot be read. */
export function touchByKernel(buffer: Uint8Array): void {
  let fd: number;
  try {
    fd = openSync("/dev/zero", "r");
  } catch {
    return; // no /dev/zero: the buffer is only touched by the fill
  }
  try {
    for (let at = 0; at < buffer.length; ) {
      const n = readSync(fd, buffer, at, Math.min(buffer.length - at, 16 << 20), null);
      if (n <= 0) break;
      at += n;
    }
  } finally {
    closeSync(fd);
  }
}

/** Is `got` exactly message `seed`? Throws a VerifyError naming the first bad byte if not. */
export function verify(got: Uint8Array, pattern: Uint8Array, size: number, seed: number, what: string): void {
  const want = window(pattern, size, seed);
  if (got.length === want.length && Buffer.from(got.buffer, got.byteOffset, got.byteLength).equals(want)) return;
  let at = 0;
  while (at < Math.min(got.length, want.length) && got[at] === want[at]) at++;
  throw new VerifyError(
    got.length !== want.length
      ? `${what}: received ${got.length} bytes, expected ${want.length}`
      : `${what}: byte ${at} of ${size} is ${got[at]}, expected ${want[at]}`,
  );
}

export class VerifyError extends Error {
  override name = "VerifyError";
}

/**
 * Reads exact byte counts from a socket: incoming chunks are copied into the caller's buffer,
 * as a receive into a user buffer does. One read at a time.
 */
export class StreamReader {
  private readonly chunks: Buffer[] = [];
  private offset = 0;
  private pending: { target: Uint8Array; filled: number; resolve: () => void; reject: (e: Error) => void } | undefined;
  private ended: Error | undefined;

  constructor(socket: Socket) {
    socket.on("data", (chunk: Buffer) => {
      this.chunks.push(chunk);
      this.pump();
    });
    const end = (e?: Error) => {
      this.ended ??= e ?? new Error("the node:net connection closed");
      if (this.pending) {
        const { reject } = this.pending;
        this.pending = undefined;
        reject(this.ended);
      }
    };
    socket.on("error", end);
    socket.on("close", () => end());
  }

  read(target: Uint8Array): Promise<void> {
    if (this.pending) throw new Error("StreamReader: one read at a time");
    return new Promise<void>((resolve, reject) => {
      this.pending = { target, filled: 0, resolve, reject };
      this.pump();
      if (this.pending && this.ended) {
        this.pending = undefined;
        reject(this.ended);
      }
    });
  }

  private pump(): void {
    const p = this.pending;
    if (!p) return;
    while (p.filled < p.target.length && this.chunks.length > 0) {
      const chunk = this.chunks[0]!;
      const n = Math.min(chunk.length - this.offset, p.target.length - p.filled);
      p.target.set(chunk.subarray(this.offset, this.offset + n), p.filled);
      p.filled += n;
      this.offset += n;
      if (this.offset === chunk.length) {
        this.chunks.shift();
        this.offset = 0;
      }
    }
    if (p.filled === p.target.length) {
      this.pending = undefined;
      p.resolve();
    }
  }
}

/** Write `bytes` and resolve once the socket has handed them to the kernel. */
export function writeAll(socket: Socket, bytes: Uint8Array): Promise<void> {
  return new Promise((resolve, reject) => socket.write(bytes, (e) => (e ? reject(e) : resolve())));
}

/** `8 B`, `64 KiB`, `16 MiB`. */
export function formatSize(n: number): string {
  if (n >= MiB && n % MiB === 0) return `${n / MiB} MiB`;
  if (n >= KiB && n % KiB === 0) return `${n / KiB} KiB`;
  return `${n} B`;
}

/** `8`, `1k`, `64KiB`, `16M`, `1mib` -> bytes; NaN when not a size. */
export function parseSize(text: string): number {
  const m = /^(\d+)\s*(b|k|kb|kib|m|mb|mib|g|gb|gib)?$/i.exec(text.trim());
  if (!m) return NaN;
  const unit = (m[2] ?? "b").toLowerCase()[0]!;
  return Number(m[1]) * ({ b: 1, k: KiB, m: MiB, g: 1024 * MiB } as Record<string, number>)[unit]!;
}

/** The default sizes up to `max`, ending with `max` itself. */
export function sizesUpTo(max: number): number[] {
  const sizes = DEFAULT_SIZES.filter((s) => s < max);
  sizes.push(max);
  return sizes;
}
