// One rank of the collectives benchmark (bench/ucg.ts). Measures what bench/mpi/coll-lat.c
// measures on Open MPI's side, the same way, so the two columns compare:
//  - allreduce (float64 sum), bcast (root 0) and alltoall latency over sizes: warm-up (1,000
//    calls below 64 KiB, else 20: warmupFor), then
//    `iters` timed calls, each preceded by an untimed barrier (a bcast root's sends return at
//    once: without it back-to-back calls overlap); every rank's mean and median, and the maximum
//    over ranks of each (the slowest rank is what a caller waits for);
//  - one 8 B allreduce taken apart: per step, the time to post its sends and receives, to wait
//    for them, and to reduce, against the point-to-point round trip between ranks 0 and 1 over
//    the same channel (what one message costs in this engine, outside any collective).
// Rank 0 prints one JSON line "UCG_BENCH {...}".
// Environment: UCG_BENCH_SIZES (bytes, comma-separated), UCG_BENCH_SCALE (iteration factor),
// UCG_BENCH_ERRORS (peer|none), UCG_BENCH_PROGRESS (hybrid|blocking|polling|thread), UCG_BENCH_PHASES_ONLY=1 (skip the latency sweep),
// UCG_BENCH_ALLREDUCE_PLANS (allreduce only, under each of these plan ids), UCG_BENCH_DEBUG=1
// (each rank says on stderr which point it is at: to find where a run hangs).
import process from "node:process";
import { UcgContext } from "../src/ucg/index.ts";
import { makeHeader, MAX_GROUP_ID } from "../src/ucg/channel.ts";
import { CONTROL_COLL_TYPE } from "../src/ucg/coll-type.ts";
import { ucx } from "../src/core/library.ts";

const sizes = (process.env.UCG_BENCH_SIZES ?? "8,1024,65536,1048576,4194304").split(",").map(Number);
const scale = Number(process.env.UCG_BENCH_SCALE ?? "1") || 1;
const phasesOnly = process.env.UCG_BENCH_PHASES_ONLY === "1";
const ctx = await UcgContext.create({
  errorHandling: (process.env.UCG_BENCH_ERRORS ?? "peer") as "peer" | "none",
  // Unset: the context's default (blocking: a waiting step polls and yields its core, then sleeps
  // in ucp_worker_wait); polling (polls and yields, never sleeps), hybrid (the engine's driver
  // spins, then parks on the event fd), thread (a progress thread per rank, the p2p default). In
  // polling and blocking modes only the collectives progress the worker by themselves: the round
  // trip below awaits through worker.settled().
  progressMode: (process.env.UCG_BENCH_PROGRESS || undefined) as "hybrid" | "thread" | "blocking" | "polling" | undefined,
});
const world = ctx.world;
const barrier = world.init("barrier");

/** The same counts as coll-lat.c's iterations_for(): about equal time per point on a slow machine. */
const iterationsFor = (bytes: number) => Math.max(3, Math.floor((bytes >= 1 << 20 ? 10 : bytes >= 65536 ? 30 : 200) * scale));
const median = (a: readonly number[]) => [...a].sort((x, y) => x - y)[a.length >> 1]!;
const mean = (a: readonly number[]) => a.reduce((s, x) => s + x, 0) / a.length;
const round = (us: number) => Math.round(us * 100) / 100;

/**
 * Untimed calls before the timed ones. Small messages: 1,000 (UCG_BENCH_WARMUP), because V8 has
 * not optimized the step's path after 20 calls: on a quiet 16-core host (2026-11-27) a 2-rank 8 B
 * allreduce took 16-24 us after 20 warm-up calls and 5.6-6.5 us after 500, posting a step 7-12 us
 * against 1.3-2.2, and the p2p row 22-30 us against 9-10 (ucx-ts perf's round trip there: 10-12).
 * Large messages: 20 (each call is milliseconds of copying, and their path warms up as fast).
 */
const warmupFor = (bytes: number, iters: number) => (bytes < 65536 ? Number(process.env.UCG_BENCH_WARMUP ?? 1000) : Math.min(20, iters));

/** Times `run` (ms -> us) `iters` times after `warmup` untimed calls, a barrier before each call. */
async function timeCalls(run: () => Promise<unknown>, iters: number, warmup: number): Promise<number[]> {
  const times: number[] = [];
  for (let i = -warmup; i < iters; i++) {
    await barrier.start();
    const t = performance.now();
    await run();
    if (i >= 0) times.push((performance.now() - t) * 1000);
  }
  return times;
}

const debug = (s: string) => process.env.UCG_BENCH_DEBUG && console.error(`rank ${world.rank}: ${s}`);
const rows: { coll: string; ranks: number; bytes: number; iters: number; mean_us: number; median_us: number; plan: string }[] = [];
// UCG_BENCH_ALLREDUCE_PLANS=0,4: allreduce only, once per plan id (forced), to compare the plans.
const allreducePlans = process.env.UCG_BENCH_ALLREDUCE_PLANS?.split(",").map(Number);
const runs: [coll: "allreduce" | "bcast" | "alltoall", plan?: number][] = allreducePlans ? allreducePlans.map((plan) => ["allreduce", plan]) : [["allreduce"], ["bcast"], ["alltoall"]];
if (!phasesOnly) {
  for (const [coll, plan] of runs) {
    for (const bytes of sizes) {
      const n = Math.max(1, Math.floor(bytes / 8));
      // alltoall: the whole send buffer is `bytes`, in equal blocks of at least one double (as coll-lat.c).
      const send = new Float64Array(coll === "alltoall" ? Math.max(1, Math.floor(n / world.size)) * world.size : n).fill(1);
      const recv = new Float64Array(send.length);
      const req = coll === "bcast" ? world.init("bcast", { recv: send, root: 0 }) : world.init(coll, { send, recv, op: "sum", plan });
      const iters = iterationsFor(bytes);
      debug(`${coll} ${bytes}`);
      const times = await timeCalls(() => req.start(), iters, warmupFor(bytes, iters));
      const worst = await world.allreduce(new Float64Array([mean(times), median(times)]), "max");
      rows.push({ coll, ranks: world.size, bytes, iters, mean_us: round(worst[0]!), median_us: round(worst[1]!), plan: req.plan.name });
    }
  }
}

// The point-to-point round trip between ranks 0 and 1 through the channel the plans use (its
// own group id, so it cannot meet a collective's message), on the path a plan's step takes:
// channel.post + channel.postSend reporting through callbacks, then the step's synchronous poll
// (channel.pollNow) and, past its budget, polling and yielding. Rank 0 posts its receive before
// its send, as a plan's step does. (Until 2026-11-27 this row awaited worker.recv/ep.send through
// worker.settled(), a path no collective takes: in blocking mode that driver made the row 16-28 us
// where the step's path takes 4-10; bench/ucg-rtt.ts compares the paths.)
debug("p2p");
let p2pRoundTripUs: number | undefined;
if (world.size > 1) {
  const G = MAX_GROUP_ID - 1;
  const ping = new Uint8Array(8);
  const pong = new Uint8Array(8);
  const iters = iterationsFor(8);
  const trips: number[] = [];
  const yieldCore = ucx().sched_yield;
  let got = 0;
  const arrived = () => void got++;
  const sent = () => {};
  const fail = (e: unknown) => {
    throw e;
  };
  // Hybrid and thread modes: the engine progresses the worker; the step's path awaits.
  const waitFor = (): Promise<void> | undefined => {
    if (!ctx.channel.drivesSteps) return ctx.worker.settled(new Promise<void>((resolve) => void (function check() { if (got) resolve(); else setImmediate(check); })()));
    ctx.channel.pollNow(() => got === 0);
    while (got === 0) if (ctx.worker.progress() === 0) yieldCore();
    return undefined;
  };
  await barrier.start();
  for (let i = -warmupFor(8, iters); i < iters; i++) {
    got = 0;
    if (world.rank === 0) {
      const t = performance.now();
      ctx.channel.post(pong, Number(makeHeader(CONTROL_COLL_TYPE, 1, G)), arrived, fail);
      ctx.channel.postSend(1, ping, Number(makeHeader(CONTROL_COLL_TYPE, 0, G)), sent, fail);
      const w = waitFor();
      if (w) await w;
      if (i >= 0) trips.push((performance.now() - t) * 1000);
    } else if (world.rank === 1) {
      ctx.channel.post(ping, Number(makeHeader(CONTROL_COLL_TYPE, 0, G)), arrived, fail);
      const w = waitFor();
      if (w) await w;
      ctx.channel.postSend(0, pong, Number(makeHeader(CONTROL_COLL_TYPE, 1, G)), sent, fail);
    }
  }
  await barrier.start();
  if (world.rank === 0) p2pRoundTripUs = round(median(trips));
}

// One 8 B allreduce taken apart, per step (rank 0's view; medians over the calls).
debug("probe");
const probe = world.init("allreduce", { send: new Float64Array(1), op: "sum" }, { measurePhases: true });
const calls: { total: number; steps: { transfers: number; post: number; wait: number; local: number }[] }[] = [];
await timeCalls(async () => {
  const t = performance.now();
  await probe.start();
  calls.push({ total: (performance.now() - t) * 1000, steps: probe.phaseTimes!.map((s) => ({ transfers: s.transfers, post: s.post * 1000, wait: s.wait * 1000, local: s.local * 1000 })) });
}, iterationsFor(8), warmupFor(8, iterationsFor(8)));
const timed = calls.slice(-iterationsFor(8));
const steps = (timed[0]?.steps ?? []).map((s, j) => ({
  transfers: s.transfers,
  post_us: round(median(timed.map((c) => c.steps[j]!.post))),
  wait_us: round(median(timed.map((c) => c.steps[j]!.wait))),
  reduce_us: round(median(timed.map((c) => c.steps[j]!.local))),
}));
const phases = { plan: probe.plan.name, total_us: round(median(timed.map((c) => c.total))), steps, p2pRoundTripUs };

if (world.rank === 0) console.log(`UCG_BENCH ${JSON.stringify({ size: world.size, errors: process.env.UCG_BENCH_ERRORS ?? "peer", progress: ctx.worker.progressMode, rows, phases, channelStats: ctx.channel.stats })}`);
await ctx.close();
