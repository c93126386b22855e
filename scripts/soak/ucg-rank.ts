/**
 * One rank of the soak's collective jobs (collectives.ts starts them with `launch()`, as `ucx-ts
 * run` does). Every rank draws the same seeded sequence of collectives (which one, datatype, op,
 * element count, root; now and then a persistent request started a few times, or two subgroups
 * running at once), runs them on the world group until its time is up, and checks each result
 * against the plain sequential computation (test/helpers/ucg-reference.ts). It prints, on stdout:
 *   SOAK_UCG_SAMPLE {sample}   RSS and descriptors (samples.ts) every ~quarter second of work
 *   SOAK_UCG_CORRUPT <what>    a result that differs (then exit 1)
 *   SOAK_UCG_REJECTED <code>   a collective rejected (a rank died: expected only in a killed job)
 *   SOAK_UCG_DONE {report}     collectives done and elements verified, once the time is up
 * The victim rank (UCX_TS_SOAK_UCG_KILL_AT=index, UCX_TS_SOAK_UCG_VICTIM=rank) SIGKILLs itself
 * before that collective: the fault the job's other ranks must survive (reject, not hang).
 */
import process from "node:process";
import { UcgContext, UcxError, type CollType, type CollectiveArray, type DatatypeName, type Group } from "../../src/index.ts";
import { describeCase, expectedOf, firstDifference, opOf, sendOf, type Case } from "../../test/helpers/ucg-reference.ts";
import { DATATYPES } from "../../src/ucg/datatype.ts";
import { seededRandom } from "./random.ts";
import { sample } from "./samples.ts";

const seed = Number(process.env.UCX_TS_SOAK_UCG_SEED ?? 1);
const seconds = Number(process.env.UCX_TS_SOAK_UCG_SECONDS ?? 5);
const killAt = Number(process.env.UCX_TS_SOAK_UCG_KILL_AT ?? -1);
const victim = Number(process.env.UCX_TS_SOAK_UCG_VICTIM ?? -1);
/** Bytes of one member's largest buffer (a count is cut to fit). */
const MAX_BYTES = Number(process.env.UCX_TS_SOAK_UCG_MAX_BYTES ?? 1 << 20);
const TIMEOUT_MS = 60_000;

const COLLS: CollType[] = ["barrier", "bcast", "reduce", "allreduce", "allgather", "gather", "scatter", "alltoall", "reduce_scatter"];
const TYPES: DatatypeName[] = ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "float32", "float64"];
const OPS = ["sum", "prod", "min", "max", "band", "bor", "bxor", "land", "lor"];
const REDUCING: readonly CollType[] = ["reduce", "allreduce", "reduce_scatter"];

const rand = seededRandom(seed);
const pick = <T>(a: readonly T[]): T => a[Math.floor(rand() * a.length)]!;

/** The i-th case: the same on every rank (one seeded sequence, drawn in the same order). */
function nextCase(size: number, i: number): Case {
  const coll = pick(COLLS);
  const affine = REDUCING.includes(coll) && rand() < 0.15;
  const dtype = affine ? "int32" : pick(TYPES);
  const op = affine ? "affine" : REDUCING.includes(coll) ? pick(dtype.startsWith("float") ? OPS.filter((o) => !o.startsWith("b")) : OPS) : "sum";
  // Mostly small (latency-bound), sometimes up to MAX_BYTES: both kinds of plan get picked.
  const perMember = Math.floor(MAX_BYTES / DATATYPES[dtype].size / (coll === "alltoall" || coll === "reduce_scatter" || coll === "scatter" || coll === "allgather" || coll === "gather" ? size : 1));
  const count = coll === "barrier" ? 0 : rand() < 0.8 ? Math.floor(rand() * 64) : Math.floor(rand() * perMember);
  return { coll, dtype, op, count, root: Math.floor(rand() * size), seed: seed * 100_003 + i };
}

async function runCase(group: Group, c: Case, persistentStarts: number): Promise<number> {
  const send = sendOf(c, group.size, group.rank);
  const spec = c.coll === "bcast" ? { recv: send } : c.coll === "scatter" ? { send, recv: DATATYPES[c.dtype].create(c.count) } : { send };
  const request = group.init(c.coll, { ...spec, op: opOf(c), root: c.root });
  let verified = 0;
  for (let s = 0; s < persistentStarts; s++) {
    const result = await request.start({ timeoutMs: TIMEOUT_MS });
    const problem = firstDifference(result as CollectiveArray | undefined, expectedOf(c, group.size, group.rank));
    if (problem) {
      console.log(`SOAK_UCG_CORRUPT ${describeCase(c)} (plan ${request.plan.name}, start ${s + 1}) on ${group.size} members, rank ${group.rank}: ${problem}`);
      process.exit(1);
    }
    verified += (result as CollectiveArray | undefined)?.length ?? 0;
  }
  return verified;
}

const ctx = await UcgContext.create();
const world = ctx.world;
const started = Date.now();
let collectives = 0;
let elements = 0;
let lastSample = 0;
try {
  for (let i = 0; ; i++) {
    // Every 16 collectives the ranks agree whether anyone's time is up (an allreduce of a flag):
    // each rank's clock differs, and a rank that stopped alone would leave the others waiting.
    if (i % 16 === 0) {
      const up = await world.allreduce(Uint8Array.of(Date.now() - started >= seconds * 1000 ? 1 : 0), "max", { timeoutMs: TIMEOUT_MS });
      if (up[0] === 1) break;
    }
    if (i === killAt && world.rank === victim) process.kill(process.pid, "SIGKILL");
    const c = nextCase(world.size, i);
    const shape = rand();
    if (shape < 0.1 && world.size >= 2) {
      // Two subgroups (evens, odds) at once, each with its own case: their messages must never
      // cross. Made by every member (collective over the world), freed after their one use.
      const other = nextCase(world.size, i);
      const ranks = (even: boolean) => Array.from({ length: world.size }, (_, r) => r).filter((r) => (r % 2 === 0) === even);
      const evens = await world.subgroup(ranks(true));
      const odds = await world.subgroup(ranks(false));
      const sub = (evens ?? odds)!;
      const mine = evens ? c : other;
      elements += await runCase(sub, { ...mine, root: mine.root % sub.size }, 1);
      await sub.free();
    } else elements += await runCase(world, c, shape < 0.2 ? 3 : 1);
    collectives++;
    if (Date.now() - lastSample > 250) {
      lastSample = Date.now();
      console.log(`SOAK_UCG_SAMPLE ${JSON.stringify(sample(started, collectives))}`);
    }
  }
} catch (e) {
  if (!(e instanceof UcxError)) throw e;
  console.log(`SOAK_UCG_REJECTED ${e.code} ${e.message.split("\n")[0]}`);
  process.exit(3);
}
console.log(`SOAK_UCG_SAMPLE ${JSON.stringify(sample(started, collectives))}`);
await ctx.close();
console.log(`SOAK_UCG_DONE ${JSON.stringify({ rank: world.rank, collectives, elements })}`);
process.exit(0);
