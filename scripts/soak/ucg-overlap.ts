/**
 * A focused stress for the ucg instance's send/overlap logic: every plan whose steps send large
 * buffers, run over the real transport back to back (a fresh request each time) and as persistent
 * requests started again and again, every element of every result checked. A write into memory a
 * rendezvous send still reads (the peer reads it after our receive may have completed) shows as a
 * wrong result here; the soak found one once in minutes (2026-11-25, Bun, rd_reduce_scatter, when
 * steps waited for their receives only), this looks for it in seconds. Load makes it likelier.
 * Today's instance waits for a step's sends too (src/ucg/instance.ts), so it must always pass; an
 * engine change that lets sends overlap later steps must pass it (and test/ucg/plans' simulated
 * rendezvous) first. Without that wait it failed rd_reduce_scatter in 9 of 9 tries on Node, Deno, Bun.
 *
 *   <runtime> scripts/soak/ucg-overlap.ts [-n ranks] [--rounds R] [--starts S] [--only name]
 *
 * Without UCX_TS_RANK it launches its ranks (launch(), as `ucx-ts run` does) under this runtime;
 * each rank prints OVERLAP_BAD on a wrong result (and exits 1) and OVERLAP_DONE when through.
 */
import process from "node:process";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { launch } from "../../src/ucg/launcher.ts";
import { UcgContext, type CollType, type CollectiveArray, type DatatypeName } from "../../src/index.ts";
import { describeCase, expectedOf, firstDifference, opOf, sendOf, type Case } from "../../test/helpers/ucg-reference.ts";
import { DATATYPES } from "../../src/ucg/datatype.ts";

const { values } = parseArgs({
  args: process.argv.slice(2),
  options: {
    n: { type: "string", short: "n", default: "2" },
    rounds: { type: "string", default: "20" },
    starts: { type: "string", default: "5" },
    only: { type: "string" },
  },
});
const rounds = Number(values.rounds);
const starts = Number(values.starts);

/** The soak's failing call (affine int32 x 44,264 picks rd_reduce_scatter) and each plan that sends large buffers. */
interface StressCase {
  readonly name: string;
  readonly coll: CollType;
  readonly plan: number;
  readonly dtype: DatatypeName;
  readonly op: string;
  /** Elements per member's buffer (per block where the collective has blocks). */
  readonly count: number;
  readonly tunables?: Record<string, string>;
}
const CASES: StressCase[] = [
  { name: "rd_reduce_scatter affine", coll: "reduce_scatter", plan: 1, dtype: "int32", op: "affine", count: 44_264 },
  { name: "rd_reduce_scatter sum", coll: "reduce_scatter", plan: 1, dtype: "int32", op: "sum", count: 44_264 },
  { name: "ring_reduce_scatter", coll: "reduce_scatter", plan: 0, dtype: "int32", op: "sum", count: 65_536 },
  { name: "rd_allreduce", coll: "allreduce", plan: 0, dtype: "float64", op: "sum", count: 131_072 },
  { name: "ring_allreduce", coll: "allreduce", plan: 1, dtype: "float64", op: "sum", count: 131_072 },
  { name: "sra_allreduce", coll: "allreduce", plan: 2, dtype: "float64", op: "sum", count: 131_072 },
  { name: "sra_knomial_allreduce", coll: "allreduce", plan: 3, dtype: "float64", op: "sum", count: 131_072 },
  { name: "sw_allreduce", coll: "allreduce", plan: 4, dtype: "int32", op: "affine", count: 131_072 },
  { name: "rd_allgather", coll: "allgather", plan: 0, dtype: "int64", op: "sum", count: 32_768 },
  { name: "ring_allgather", coll: "allgather", plan: 1, dtype: "int64", op: "sum", count: 32_768 },
  { name: "pairwise_alltoall", coll: "alltoall", plan: 0, dtype: "int32", op: "sum", count: 65_536 },
  { name: "bruck_alltoall", coll: "alltoall", plan: 1, dtype: "int32", op: "sum", count: 65_536 },
  { name: "kn_bcast", coll: "bcast", plan: 0, dtype: "float64", op: "sum", count: 131_072 },
  { name: "dbt_bcast", coll: "bcast", plan: 1, dtype: "float64", op: "sum", count: 131_072 },
  { name: "kn_reduce", coll: "reduce", plan: 0, dtype: "int32", op: "affine", count: 131_072 },
  { name: "dbt_reduce", coll: "reduce", plan: 1, dtype: "float64", op: "sum", count: 131_072 },
  { name: "kn_gather", coll: "gather", plan: 0, dtype: "int32", op: "sum", count: 65_536 },
  { name: "kn_scatter", coll: "scatter", plan: 0, dtype: "int32", op: "sum", count: 65_536 },
];

if (process.env.UCX_TS_RANK === undefined) {
  const result = await launch({
    n: Number(values.n),
    script: fileURLToPath(import.meta.url),
    args: process.argv.slice(2),
    timeoutMs: 600_000,
    // As the soak's collectives lane: waiting ranks sleep rather than spin (more ranks than cores).
    // That budget is blocking mode's: an oversubscribed launch would otherwise poll (oversubscription.ts).
    env: { UCX_TS_UCG_STEP_SPIN_US: process.env.UCX_TS_UCG_STEP_SPIN_US ?? "0", UCX_TS_UCG_PROGRESS: process.env.UCX_TS_UCG_PROGRESS || "blocking" },
  });
  process.exit(result.code);
}

const ctx = await UcgContext.create();
const world = ctx.world;
let checked = 0;
const check = (c: Case, result: unknown, how: string): void => {
  const problem = firstDifference(result as CollectiveArray | undefined, expectedOf(c, world.size, world.rank));
  if (problem) {
    console.log(`OVERLAP_BAD ${describeCase(c)} ${how} on ${world.size} members, rank ${world.rank}: ${problem}`);
    process.exit(1);
  }
  checked += (result as CollectiveArray | undefined)?.length ?? 0;
};
const started = performance.now();
for (const s of CASES) {
  if (values.only && !s.name.includes(values.only)) continue;
  const t0 = performance.now();
  for (let round = 0; round < rounds; round++) {
    // The root moves so that every rank takes each role; the data changes each round.
    const c: Case = { coll: s.coll, dtype: s.dtype, op: s.op, count: s.count, root: round % world.size, seed: 1000 * round + 17 };
    const send = sendOf(c, world.size, world.rank);
    const spec = c.coll === "bcast" ? () => ({ recv: sendOf(c, world.size, world.rank) }) : c.coll === "scatter" ? () => ({ send, recv: DATATYPES[c.dtype].create(c.count) }) : () => ({ send });
    // Back to back: a fresh request each time, the next call's first step right after the last's.
    for (let i = 0; i < starts; i++) check(c, await world.init(c.coll, { ...spec(), op: opOf(c), root: c.root, plan: s.plan }).start(), `(${s.name}, one-shot ${i + 1})`);
    // Persistent: one request (one instance, its scratch) started again and again.
    const request = world.init(c.coll, { ...spec(), op: opOf(c), root: c.root, plan: s.plan });
    for (let i = 0; i < starts; i++) check(c, await request.start(), `(${s.name}, persistent start ${i + 1})`);
  }
  if (world.rank === 0) console.log(`OVERLAP_CASE ${s.name}: ${2 * rounds * starts} calls in ${(performance.now() - t0).toFixed(0)} ms`);
}
await ctx.close();
console.log(`OVERLAP_DONE rank ${world.rank}: ${checked} elements checked in ${((performance.now() - started) / 1000).toFixed(1)} s`);
process.exit(0);
