/**
 * Resource samples over a soak: RSS and open file descriptors of this process, against the
 * operations done so far, and their growth per 100k operations after warm-up (least-squares
 * slope, so one GC's timing does not decide it). UCX's own memory statistics (ucs memtrack) are
 * not built into Debian's libucx0 1.13 (no --enable-memtrack), so they are not sampled here.
 */
import { readdirSync } from "node:fs";
import process from "node:process";
import { openLibc, type Libc } from "../../src/ffi/index.ts";

export interface Sample {
  seconds: number;
  ops: number;
  rssMiB: number;
  /**
   * RSS again right after `malloc_trim(0)`: glibc gives back the free memory it kept (the top of
   * each heap and whole free pages inside them). What trimming removes was retained by the
   * allocator, not in use; a leak shows here too.
   */
  trimmedRssMiB: number;
  /** The JS heap in use, and ArrayBuffer memory outside it: what of RSS the runtime accounts for. */
  heapMiB: number;
  arrayBuffersMiB: number;
  fds: number;
}

export function openFds(): number {
  try {
    return readdirSync("/proc/self/fd").length;
  } catch {
    return -1;
  }
}

/**
 * A full GC first where the runtime exposes one (`npm run soak` runs Node with --expose-gc; Bun
 * has Bun.gc): payloads of up to 16 MiB that are garbage but not yet collected made RSS swing by
 * tens of MiB between samples, which a ten-minute slope could not tell from growth. Garbage
 * left uncollected is not a leak; what a GC cannot free still shows.
 */
function collect(): void {
  const g = globalThis as { gc?: () => void; Bun?: { gc(full: boolean): void } };
  g.gc?.();
  g.Bun?.gc(true);
}

let libc: Libc | undefined;

export function sample(started: number, ops: number): Sample {
  collect();
  const m = process.memoryUsage();
  (libc ??= openLibc()).malloc_trim(0);
  const trimmedRssMiB = process.memoryUsage.rss() / 2 ** 20;
  return { seconds: (Date.now() - started) / 1000, ops, rssMiB: m.rss / 2 ** 20, trimmedRssMiB, heapMiB: m.heapUsed / 2 ** 20, arrayBuffersMiB: m.arrayBuffers / 2 ** 20, fds: openFds() };
}

/** Slope of y over x by least squares; 0 with fewer than two distinct x. */
export function slope(points: readonly [number, number][]): number {
  const n = points.length;
  if (n < 2) return 0;
  const mx = points.reduce((s, p) => s + p[0], 0) / n;
  const my = points.reduce((s, p) => s + p[1], 0) / n;
  let num = 0;
  let den = 0;
  for (const [x, y] of points) {
    num += (x - mx) * (y - my);
    den += (x - mx) ** 2;
  }
  return den === 0 ? 0 : num / den;
}

export interface Growth {
  /** Samples after warm-up used. */
  samples: number;
  opsAfterWarmup: number;
  rssMiBPer100kOps: number;
  trimmedRssMiBPer100kOps: number;
  heapMiBPer100kOps: number;
  arrayBuffersMiBPer100kOps: number;
  fdsPer100kOps: number;
  rssMiB: { first: number; last: number; max: number };
  trimmedRssMiB: { first: number; last: number; max: number };
  fds: { first: number; last: number; max: number };
}

/** Growth over the samples after the first `warmupFraction` of the run. */
export function growth(samples: readonly Sample[], warmupFraction: number): Growth {
  const end = samples[samples.length - 1]?.seconds ?? 0;
  const after = samples.filter((s) => s.seconds >= end * warmupFraction);
  const ops = after.length ? after[after.length - 1]!.ops - after[0]!.ops : 0;
  const stat = (k: "rssMiB" | "trimmedRssMiB" | "fds") => ({
    first: round(after[0]?.[k] ?? 0),
    last: round(after[after.length - 1]?.[k] ?? 0),
    max: round(Math.max(...after.map((s) => s[k]))),
  });
  return {
    samples: after.length,
    opsAfterWarmup: ops,
    rssMiBPer100kOps: round(slope(after.map((s) => [s.ops, s.rssMiB])) * 100_000),
    trimmedRssMiBPer100kOps: round(slope(after.map((s) => [s.ops, s.trimmedRssMiB])) * 100_000),
    heapMiBPer100kOps: round(slope(after.map((s) => [s.ops, s.heapMiB])) * 100_000),
    arrayBuffersMiBPer100kOps: round(slope(after.map((s) => [s.ops, s.arrayBuffersMiB])) * 100_000),
    fdsPer100kOps: round(slope(after.map((s) => [s.ops, s.fds])) * 100_000),
    rssMiB: stat("rssMiB"),
    trimmedRssMiB: stat("trimmedRssMiB"),
    fds: stat("fds"),
  };
}

export const round = (x: number) => Math.round(x * 100) / 100;
