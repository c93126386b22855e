// One rank of the collectives' per-call profile (bench/ucg-profile.ts): back-to-back 8 B
// allreduces; rank 0 prints the wall time per call and, with UCX_TS_PROFILE=1, where it went
// (src/core/profile.ts: exclusive phases and every C call, counted), per call.
import process from "node:process";
import { UcgContext } from "../src/ucg/index.ts";
import { copyTotals, functionNames, PHASE_NAMES, PROFILING, profileSnapshot, resetProfile } from "../src/core/profile.ts";

const calls = Number(process.env.UCG_PROFILE_CALLS ?? "2000");
const ctx = await UcgContext.create({
  errorHandling: "none",
  progressMode: (process.env.UCG_BENCH_PROGRESS || undefined) as "hybrid" | "blocking" | "polling" | undefined,
});
const world = ctx.world;
const req = world.init("allreduce", { send: new Float64Array(1), recv: new Float64Array(1), op: "sum" });
for (let i = 0; i < 200; i++) await req.start();
await world.barrier();
resetProfile();
const stats0 = { ...ctx.channel.stats };
const us = new Float64Array(calls);
// Profiling: the running totals after every call, to take each column's median over calls.
const width = PHASE_NAMES.length + functionNames().length;
const totals = new Float64Array(PROFILING ? (calls + 1) * width : 0);
if (PROFILING) copyTotals(totals, 0);
const t0 = performance.now();
for (let i = 0; i < calls; i++) {
  const t = performance.now();
  await req.start();
  us[i] = (performance.now() - t) * 1000;
  if (PROFILING) copyTotals(totals, (i + 1) * width);
}
/** Median over calls of column `c`'s growth in one call, in us. */
const medianOf = (c: number) => {
  const d = new Float64Array(calls);
  for (let i = 0; i < calls; i++) d[i] = (totals[(i + 1) * width + c]! - totals[i * width + c]!) * 1000;
  d.sort();
  return Math.round(d[calls >> 1]! * 100) / 100;
};
const meanUs = ((performance.now() - t0) * 1000) / calls;
const snap = PROFILING ? profileSnapshot() : undefined;
us.sort();
const per = (x: number) => Math.round((x / calls) * 100) / 100;
if (world.rank === 0) {
  const out: Record<string, unknown> = { ranks: world.size, mode: ctx.worker.progressMode, calls, meanUs: per(meanUs * calls), p50Us: us[calls >> 1], p90Us: us[Math.floor(calls * 0.9)], sendsPerCall: per(ctx.channel.stats.sends - stats0.sends) };
  if (snap) {
    // Per call: [median us, mean us] per phase; [calls, median us, mean us] per C function.
    out.phasesUs = Object.fromEntries(PHASE_NAMES.map((k, c) => [k, [medianOf(c), per(snap.phases[k] * 1000)]]));
    out.cCalls = Object.fromEntries(functionNames().map((k, j) => [k, j] as const).filter(([k]) => snap.calls[k]!.count > 0).map(([k, j]) => [k, [per(snap.calls[k]!.count), medianOf(PHASE_NAMES.length + j), per(snap.calls[k]!.ms * 1000)]]));
  }
  console.log(`UCG_PROFILE ${JSON.stringify(out)}`);
}
await world.barrier();
await ctx.close();
