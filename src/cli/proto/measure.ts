/**
 * Measuring a send protocol's cost line: two workers in this process (error handling "none",
 * so shared memory), the protocol forced, a window of sends in flight per round, every message
 * received before the next round. The time per message at each size, the best of a few runs,
 * is fitted to c + m * size (fitCost). Used by `ucx-ts calibrate` and bench/run-proto.mjs.
 */
import { Worker, type Endpoint } from "../../index.ts";
import type { ProgressMode } from "../../core/engine/engine.ts";
import { fitCost, type Cost } from "../../core/proto/cost.ts";
import { DEFAULT_BOUNCE } from "../../core/proto/config.ts";
import { INLINE_CAPACITY } from "../../core/engine/records.ts";
import type { SendProtocol } from "../../core/proto/protocols.ts";

export const WINDOW = 16;

/** Sizes a protocol is measured at: spread over its range. */
export function calibrationSizes(protocol: SendProtocol, quick = false): number[] {
  const all = [8, 64, 512, 4096, 16384, 65536, 262144, 1048576, 4194304];
  const max = protocol === "inline" ? INLINE_CAPACITY : protocol === "bounce" ? DEFAULT_BOUNCE.chunkSize : Infinity;
  const sizes = all.filter((s) => s <= max);
  if (protocol === "inline") sizes.push(INLINE_CAPACITY);
  return quick ? sizes.filter((_, i) => i % 2 === 0 || i === sizes.length - 1) : sizes;
}

export interface Point {
  size: number;
  /** Microseconds per message. */
  time: number;
}

export interface ProtocolPair {
  readonly a: Worker;
  readonly b: Worker;
  readonly ep: Endpoint;
  close(): Promise<void>;
}

/**
 * Await `promise` while progressing both workers (polling, blocking) in one loop: two
 * `settled()` drivers in one process take turns through the event loop, which costs more
 * than the messages being measured.
 */
export async function driveBoth<T>(a: Worker, b: Worker, promise: Promise<T>): Promise<T> {
  if (a.progressMode === "thread" || a.progressMode === "hybrid") return promise;
  let done = false;
  const settled = promise.finally(() => (done = true));
  settled.catch(() => {});
  for (let i = 0; !done; i++) {
    a.progress();
    b.progress();
    await undefined;
    if (i % 4096 === 4095) await new Promise((r) => setTimeout(r, 0)); // timers (a deadline) get a turn
  }
  return settled;
}

/** Two connected workers with `protocol` forced (or the engine's choice when undefined). */
export async function protocolPair(mode: ProgressMode, protocol: SendProtocol | undefined): Promise<ProtocolPair> {
  const protocols = { calibration: false as const, ...(protocol ? { force: protocol } : {}) };
  const a = await Worker.create({ progressMode: mode, errorHandling: "none", protocols });
  const b = await Worker.create({ progressMode: mode, errorHandling: "none", protocols });
  const both = <T>(p: Promise<T>) => driveBoth(a, b, p);
  const ep = await both(b.address().then((addr) => a.connect(addr)));
  const close = async () => {
    await both(ep.close());
    await both(Promise.all([a.close(), b.close()]));
  };
  return { a, b, ep, close };
}

/**
 * Microseconds per message for `count` messages of `size` bytes sent a window at a time, each
 * round's receives posted before its sends.
 */
export async function streamTime(p: ProtocolPair, size: number, count: number): Promise<number> {
  const { a, b, ep } = p;
  const send = new Uint8Array(size).fill(7);
  const recv = Array.from({ length: WINDOW }, () => new Uint8Array(size));
  const round = async () => {
    const receives = recv.map((r) => b.recv(r, 5));
    const sends: Promise<void>[] = [];
    for (let i = 0; i < WINDOW; i++) sends.push(ep.send(send, 5));
    // Both workers progress until everything is done: in polling mode a send that resolved on
    // submission still needs its worker's progress to finish.
    await driveBoth(a, b, Promise.all([...sends, ...receives]));
  };
  await round(); // warm-up: connection set-up, first-touch of buffers
  const rounds = Math.max(1, Math.round(count / WINDOW));
  const t0 = performance.now();
  for (let i = 0; i < rounds; i++) await round();
  return ((performance.now() - t0) * 1000) / (rounds * WINDOW);
}

/** Messages per measurement at `size`: about 32 MiB, between 256 and 2,048 messages. */
export function messageCount(size: number, quick = false): number {
  const n = Math.min(2048, Math.max(256, Math.floor((32 * 2 ** 20) / Math.max(size, 1))));
  return quick ? Math.max(WINDOW * 4, n >> 2) : n;
}

/** Measure one protocol in one mode: its points (best of `repeat`) and the fitted line. */
export async function measureProtocol(mode: ProgressMode, protocol: SendProtocol, options: { quick?: boolean; repeat?: number } = {}): Promise<{ points: Point[]; cost: Cost }> {
  const pair = await protocolPair(mode, protocol);
  try {
    // Warm-up: the JIT and the first touches of UCX's paths made a protocol's first points 2-5x
    // slower than its later ones (measured here), whichever protocol came first.
    for (const size of calibrationSizes(protocol, true)) await streamTime(pair, size, WINDOW * 8);
    const points: Point[] = [];
    for (const size of calibrationSizes(protocol, options.quick)) {
      let best = Infinity;
      for (let r = 0; r < (options.repeat ?? 3); r++) best = Math.min(best, await streamTime(pair, size, messageCount(size, options.quick)));
      points.push({ size, time: best });
    }
    return { points, cost: fitCost(points) };
  } finally {
    await pair.close();
  }
}
