// One rank of bench/ucg-cpu.ts (issue 23): what one barrier + 8 B allreduce iteration costs this
// rank in CPU (user and system) and in time waiting on a run queue, from /proc/self/schedstat
// and process.cpuUsage() around UCG_CPU_ITERS back-to-back iterations after 1,000 warm-up ones,
// with the worker's progress calls and sched_yield() calls counted (the FFI table's entry is
// wrapped for the count: a bench-only patch). Prints one JSON line "UCG_CPU {...}".
// Environment: UCG_CPU_ITERS (default 2000), UCG_BENCH_PROGRESS, UCG_BENCH_ERRORS (peer|none).
import process from "node:process";
import { readFileSync } from "node:fs";
import { UcgContext } from "../src/ucg/index.ts";
import { ucx } from "../src/core/library.ts";

const ctx = await UcgContext.create({
  errorHandling: (process.env.UCG_BENCH_ERRORS ?? "peer") as "peer" | "none",
  progressMode: (process.env.UCG_BENCH_PROGRESS || undefined) as "blocking" | "polling" | undefined,
});
const world = ctx.world;
const iters = Math.max(1, Number(process.env.UCG_CPU_ITERS ?? 2000));
let yields = 0;
let polls = 0;
const table = ucx() as unknown as { sched_yield: () => number };
const sched_yield = table.sched_yield;
table.sched_yield = () => (yields++, sched_yield());
const worker = ctx.worker;
const progress = worker.progress.bind(worker);
worker.progress = () => (polls++, progress());

const barrier = world.init("barrier");
const send = new Float64Array([1]);
const allreduce = world.init("allreduce", { send, recv: new Float64Array(1), op: "sum" });
/** On-CPU ns, run-queue ns, time slices. */
const schedstat = () => readFileSync("/proc/self/schedstat", "utf8").trim().split(/\s+/).map(Number);
const switches = () => {
  const s = readFileSync("/proc/self/status", "utf8");
  return [Number(/^voluntary_ctxt_switches:\s*(\d+)/m.exec(s)?.[1]), Number(/^nonvoluntary_ctxt_switches:\s*(\d+)/m.exec(s)?.[1])];
};
for (let i = 0; i < 1000; i++) {
  await barrier.start();
  await allreduce.start();
}
const times: number[] = [];
polls = yields = 0;
const cpu0 = process.cpuUsage();
const [on0, rq0, sl0] = schedstat();
const [vol0] = switches();
const t0 = performance.now();
for (let i = 0; i < iters; i++) {
  await barrier.start();
  const t = performance.now();
  await allreduce.start();
  times.push((performance.now() - t) * 1000);
}
const wall = ((performance.now() - t0) * 1000) / iters;
const [on1, rq1, sl1] = schedstat();
const [vol1] = switches();
const cpu = process.cpuUsage(cpu0);
times.sort((a, b) => a - b);
const per = (x: number) => Math.round((x / iters) * 100) / 100;
console.log(`UCG_CPU ${JSON.stringify({
  rank: world.rank,
  size: world.size,
  mode: worker.progressMode,
  allreduce_median_us: Math.round(times[iters >> 1]! * 100) / 100,
  wall_us: Math.round(wall * 100) / 100,
  cpu_us: per((on1! - on0!) / 1000),
  user_us: per(cpu.user),
  sys_us: per(cpu.system),
  runq_us: per((rq1! - rq0!) / 1000),
  slices: per(sl1! - sl0!),
  sleeps: per(vol1! - vol0!),
  polls: per(polls),
  yields: per(yields),
})}`);
worker.progress = progress;
table.sched_yield = sched_yield;
await ctx.close();
