/**
 * Worker create/close cycles in one process: RSS and open file descriptors after a warm-up
 * against the end. The warm-up is long (the first 100 cycles, or the first tenth of more; half of
 * a run under 200 cycles, where only descriptors are judged): RSS
 * climbs ~35 MiB over the first ~100 cycles of a process and is flat after (measured here; the
 * allocator's arenas filling), so a shorter one would read that as a leak.
 * A leak of a UCX context, worker, thread or eventfd per cycle shows as steady growth.
 *
 * The soak cycles each progress mode in turn (main.ts --cycle-modes). Thread and hybrid workers
 * run their thread as a job on a pooled thread (src/core/engine/thread-pool.ts): the first cycle
 * starts it, the others reuse it. Until 2026-11-26 each had a thread of its own, and each ended
 * thread left koffi's per-isolate state behind (scripts/soak/koffi-thread-leak.mjs): ~40 KiB of
 * malloc and ~2.5 mappings a thread-mode cycle, ~20 KiB a hybrid one.
 *
 * Each worker also serves requests before it closes: its address, and memory mapped, its key
 * packed, unmapped. Until 2026-11-25 such workers leaked ~0.8 MiB each (plain ones did not):
 * this loop never gives the event loop a macrotask turn, and each worker's polling driver stayed
 * parked on the shared turn (engine/event-loop.ts) holding the whole worker
 * (worker/progress-driver.ts release()); koffi also kept a callback prototype per worker for
 * good. The loop stays free of macrotask turns so that such a retention shows.
 *
 * From warm-up on (runs of 200 cycles or more) RSS after a GC and malloc_trim(0) and malloc's
 * bytes in use are also read every FIT_EVERY cycles (each figure the least of three readings in a
 * row: samples.ts leastOfThree), still without a macrotask turn (the GC and the reads are
 * synchronous), and a least-squares line through them gives the growth per 1,000
 * cycles with its 95 % interval (regression.ts): what two readings, one before and one after,
 * cannot tell from noise.
 */
import { Worker, type ProgressMode } from "../../src/index.ts";
import { leastOfThree, mapCount, openFds, round, sample, threadCount, type Sample } from "./samples.ts";
import { fitLine, verdict, type Fit, type Verdict } from "./regression.ts";

const FIT_EVERY = 20;
/** "Without growth", in MiB per 1,000 cycles: 1 KiB a cycle, far below a Context or worker. */
export const CYCLE_BOUND_MIB_PER_1000 = 1;

export interface CycleFit {
  readings: number;
  /** MiB per 1,000 cycles, with its error and 95 % interval. */
  slope: number;
  adjustedStdErr: number;
  low: number;
  high: number;
  lag1: number;
  verdict: Verdict;
}

function perThousand(f: Fit | undefined): CycleFit | undefined {
  if (!f) return undefined;
  const k = 1000;
  return { readings: f.n, slope: round(f.slope * k), adjustedStdErr: round(f.adjustedStdErr * k), low: round(f.low * k), high: round(f.high * k), lag1: round(f.lag1), verdict: verdict({ ...f, low: f.low * k, high: f.high * k }, CYCLE_BOUND_MIB_PER_1000) };
}

export interface CycleReport {
  cycles: number;
  mode: ProgressMode;
  seconds: number;
  rssMiB: { afterWarmup: number; end: number; growth: number };
  /** RSS right after malloc_trim(0), and malloc's bytes in use (samples.ts): retention told apart from a leak. */
  trimmedRssMiB: { afterWarmup: number; end: number; growth: number };
  mallocInUseMiB: { afterWarmup: number; end: number; growth: number };
  fds: { afterWarmup: number; end: number; growth: number };
  /**
   * Mappings (/proc/self/maps lines) and OS threads (/proc/self/task): a thread's stack, or
   * per-thread memory a library never frees, shows here before it shows in MiB. Thread and hybrid
   * workers grew ~2.5 mappings a cycle until their threads were pooled (engine/thread-pool.ts).
   */
  maps: { afterWarmup: number; end: number; growth: number };
  threads: { afterWarmup: number; end: number; growth: number };
  /** Lines through the readings every FIT_EVERY cycles after warm-up (runs of 200 cycles or more). */
  fit?: { trimmedRssMiB?: CycleFit; mallocInUseMiB?: CycleFit; heapMiB?: CycleFit; fds?: CycleFit; readings: { cycle: number; trimmedRssMiB: number; mallocInUseMiB: number; heapMiB: number }[] };
}

export async function workerCycles(cycles: number, mode: ProgressMode): Promise<CycleReport> {
  const started = Date.now();
  // Short runs (npm test) judge only file descriptors, which need no warm-up: half of them.
  const warmup = cycles >= 200 ? Math.max(100, Math.floor(cycles / 10)) : Math.floor(cycles / 2);
  let first: Sample | undefined;
  let fds0 = 0;
  let maps0 = 0;
  let threads0 = 0;
  const readings: Sample[] = [];
  for (let i = 0; i < cycles; i++) {
    const w = await Worker.create({ progressMode: mode });
    await w.address();
    const mem = await w.memMap(64 * 1024);
    await mem.packRkey();
    await mem.unmap();
    await w.close();
    if (i + 1 === warmup) {
      await settle();
      first = sample(started, i + 1);
      fds0 = openFds();
      maps0 = mapCount();
      threads0 = threadCount();
    }
    if (cycles >= 200 && i + 1 >= warmup && (i + 1 - warmup) % FIT_EVERY === 0) readings.push(await leastOfThree(started, i + 1));
  }
  await settle();
  const last = sample(started, cycles);
  const fds = openFds();
  const maps = mapCount();
  const threads = threadCount();
  const change = (k: "rssMiB" | "trimmedRssMiB" | "mallocInUseMiB") => ({ afterWarmup: round(first?.[k] ?? 0), end: round(last[k]), growth: round(last[k] - (first?.[k] ?? 0)) });
  return {
    cycles,
    mode,
    seconds: round((Date.now() - started) / 1000),
    rssMiB: change("rssMiB"),
    trimmedRssMiB: change("trimmedRssMiB"),
    mallocInUseMiB: change("mallocInUseMiB"),
    fds: { afterWarmup: fds0, end: fds, growth: fds - fds0 },
    maps: { afterWarmup: maps0, end: maps, growth: maps - maps0 },
    threads: { afterWarmup: threads0, end: threads, growth: threads - threads0 },
    fit:
      readings.length >= 3
        ? {
            trimmedRssMiB: perThousand(fitLine(readings.map((r) => [r.ops, r.trimmedRssMiB]))),
            mallocInUseMiB: perThousand(fitLine(readings.map((r) => [r.ops, r.mallocInUseMiB]))),
            heapMiB: perThousand(fitLine(readings.map((r) => [r.ops, r.heapMiB]))),
            fds: perThousand(fitLine(readings.map((r) => [r.ops, r.fds]))),
            readings: readings.map((r) => ({ cycle: r.ops, trimmedRssMiB: round(r.trimmedRssMiB), mallocInUseMiB: round(r.mallocInUseMiB), heapMiB: round(r.heapMiB) })),
          }
        : undefined,
  };
}

/** Let finalizers and closed sockets go (a GC where the runtime exposes one). */
async function settle(): Promise<void> {
  const g = globalThis as { gc?: () => void; Bun?: { gc(full: boolean): void } };
  for (let i = 0; i < 3; i++) {
    g.gc?.();
    g.Bun?.gc(true);
    await new Promise((r) => setTimeout(r, 20));
  }
}
