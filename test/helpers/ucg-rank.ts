/**
 * One rank of the collectives' multi-process tests, started by `launch()` (ucx-ts run's library
 * function) with UCX_TS_RANK/SIZE/ROOT_ADDR set. UCX_TS_UCG_TEST picks what it does:
 *  - "sample" (seed UCX_TS_UCG_SEED): a seeded sample of every collective x type x op x size,
 *    each with the decision tree's plan and with every other plan that can run it, 0 elements
 *    and ~1 MiB, a non-commutative user op, two subgroups running concurrently with the world
 *    (one freed with a request still queued),
 *    a persistent request started 100 times, and plan reuse;
 *  - "full": every collective x datatype x op x sizes 0..8 MiB (npm run test:full);
 *  - "die": the last rank leaves without a word after the bootstrap; the others' allreduce must
 *    reject (not time out), which each reports as "UCG_REJECTED <code> <ms>";
 *  - "direct" (polling mode): small collectives whose messages go straight to UCX
 *    (engine/direct-tags.ts), results checked, then the last rank leaves and the others' 8 B
 *    allreduce must reject as in "die".
 * Every result is checked against the sequential reference (ucg-reference.ts); the last line is
 * "UCG_OK <checks>" or the process exits 1 after "UCG_FAIL <what>".
 */
import process from "node:process";
import { UcgContext, PLAN_TEMPLATES, type CollType, type CollectiveArray, type DatatypeName, type Group, UcxError } from "../../src/index.ts";
import { DATATYPES } from "../../src/ucg/datatype.ts";
import { MAX_CACHED_PLANS } from "../../src/ucg/group.ts";
import { describeCase, expectedOf, firstDifference, opOf, rng, sendOf, type Case } from "./ucg-reference.ts";

const mode = process.env.UCX_TS_UCG_TEST ?? "sample";
const seed = Number(process.env.UCX_TS_UCG_SEED ?? 1);
let checks = 0;

function fail(what: string): never {
  console.log(`UCG_FAIL ${what}`);
  process.exit(1);
}

const INTS: DatatypeName[] = ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"];
const ALL_TYPES: DatatypeName[] = [...INTS, "float32", "float64"];
const OPS = ["sum", "prod", "min", "max", "band", "bor", "bxor", "land", "lor"];
const REDUCING: CollType[] = ["reduce", "allreduce", "reduce_scatter"];
const ROOTED: CollType[] = ["bcast", "reduce", "gather", "scatter"];
const COLLS: CollType[] = ["barrier", "bcast", "reduce", "allreduce", "allgather", "gather", "scatter", "alltoall", "reduce_scatter"];

/** Runs case `c` on `group` (plan forced when given) and checks this member's result. */
async function runCase(group: Group, c: Case): Promise<void> {
  const size = group.size;
  const rank = group.rank;
  const send = sendOf(c, size, rank);
  const spec =
    c.coll === "bcast" ? { recv: send }
    : c.coll === "scatter" ? { send, recv: DATATYPES[c.dtype].create(c.count) }
    : { send };
  const request = group.init(c.coll, { ...spec, op: opOf(c), root: c.root, plan: c.plan });
  const result = await request.start({ timeoutMs: 120_000 });
  const problem = firstDifference(result as CollectiveArray | undefined, expectedOf(c, size, rank));
  if (problem) fail(`${describeCase(c)} (plan ${request.plan.name}) on ${size} members, rank ${rank}: ${problem}`);
  checks++;
}

/** Every plan that can run `c`: the tree's pick (plan undefined) and each id. */
function withPlans(c: Case): Case[] {
  const ids = PLAN_TEMPLATES.filter((t) => t.coll === c.coll && (!t.commutativeOnly || c.op !== "affine")).map((t) => t.id);
  return [c, ...(ids.length > 1 ? ids.map((plan) => ({ ...c, plan })) : [])];
}

function opsFor(dtype: DatatypeName): string[] {
  return dtype.startsWith("float") ? OPS.filter((o) => !o.startsWith("b")) : OPS;
}

function sampleCases(size: number, big: boolean): Case[] {
  const r = rng(seed * 1000 + size);
  const pick = <T>(a: readonly T[]): T => a[Math.floor(r() * a.length)]!;
  const cases: Case[] = [];
  for (const coll of COLLS) {
    const root = ROOTED.includes(coll) ? size - 1 : 0;
    if (coll === "barrier") {
      cases.push({ coll, dtype: "uint8", op: "sum", count: 0, root: 0, seed, plan: 0 }, { coll, dtype: "uint8", op: "sum", count: 0, root: 0, seed, plan: 1 });
      continue;
    }
    // 0 elements, then two random type/op/count combinations, each under every plan.
    cases.push(...withPlans({ coll, dtype: "float64", op: "sum", count: 0, root, seed }));
    for (let k = 0; k < 2; k++) {
      const dtype = pick(ALL_TYPES);
      cases.push(...withPlans({ coll, dtype, op: REDUCING.includes(coll) ? pick(opsFor(dtype)) : "sum", count: 1 + Math.floor(r() * 300), root: Math.floor(r() * size), seed: seed + k }));
    }
  }
  // About 1 MiB: the allreduce's vector (ring from 2 members), bcast, allgather's result, alltoall's buffer.
  const mib = 1 << 20;
  if (big) cases.push(
    { coll: "allreduce", dtype: "float64", op: "sum", count: mib / 8, root: 0, seed },
    { coll: "bcast", dtype: "uint8", op: "sum", count: mib, root: 0, seed },
    { coll: "allgather", dtype: "int32", op: "sum", count: Math.floor(mib / 4 / size), root: 0, seed },
    { coll: "alltoall", dtype: "uint16", op: "sum", count: Math.floor(mib / 2 / size), root: 0, seed },
    // The sliding window over ~264 KB: several rounds of 24000-byte chunks (collectives.test.ts),
    // an odd count, so blocks and their last chunks are uneven.
    { coll: "allreduce", dtype: "float64", op: "sum", count: mib / 32 + 1001, root: 0, seed, plan: 4 },
  );
  // The non-commutative user op, in rank order, root not 0 for reduce.
  for (const coll of REDUCING) cases.push(...withPlans({ coll, dtype: "int32", op: "affine", count: 20, root: size - 1, seed: seed + 5 }));
  return cases;
}

function fullCases(size: number): Case[] {
  const cases: Case[] = [];
  // 0 .. 8 MiB; 8 MiB with each collective's first op per type only (the reference alone takes
  // seconds at that size in JavaScript), every op at the other sizes.
  const counts = (d: DatatypeName, op: string) => [0, 1, 7, 1000, (64 << 10) / DATATYPES[d].size, ...(op === "sum" ? [(8 << 20) / DATATYPES[d].size] : [])];
  for (const coll of COLLS) {
    if (coll === "barrier") {
      cases.push(...withPlans({ coll, dtype: "uint8", op: "sum", count: 0, root: 0, seed }));
      continue;
    }
    for (const dtype of ALL_TYPES) {
      for (const op of REDUCING.includes(coll) ? opsFor(dtype) : ["sum"]) {
        for (const count of counts(dtype, op)) {
          const blocks = ["allgather", "gather", "scatter", "alltoall", "reduce_scatter"].includes(coll);
          const c = { coll, dtype, op, count: blocks ? Math.floor(count / size) : count, root: ROOTED.includes(coll) ? (count % size) : 0, seed };
          // 8 MiB runs under the tree's plan only; smaller sizes under every plan.
          cases.push(...(count * DATATYPES[dtype].size >= 8 << 20 ? [c] : withPlans(c)));
        }
      }
    }
  }
  for (const coll of REDUCING) cases.push(...withPlans({ coll, dtype: "int32", op: "affine", count: 1000, root: size - 1, seed }));
  return cases;
}

async function concurrentGroups(ctx: UcgContext): Promise<void> {
  const world = ctx.world;
  const n = world.size;
  // Two subgroups: everyone in reverse order, and the even ranks; both run at once with the world.
  const reversed = (await world.subgroup(Array.from({ length: n }, (_, i) => n - 1 - i)))!;
  const evens = await world.subgroup(Array.from({ length: Math.ceil(n / 2) }, (_, i) => 2 * i));
  if (reversed.id === 0 || (evens && evens.id === reversed.id)) fail("subgroups must get new group ids");
  const cases = (g: Group, k: number): Case[] => [
    { coll: "allreduce", dtype: "int32", op: "sum", count: 50 + k, root: 0, seed: 100 + k },
    { coll: "allgather", dtype: "float32", op: "sum", count: 3 + k, root: 0, seed: 200 + k },
    { coll: "bcast", dtype: "uint16", op: "sum", count: 10, root: k % g.size, seed: 300 + k },
  ];
  const all: Promise<void>[] = [];
  for (let k = 0; k < 10; k++) {
    for (const g of [world, reversed, ...(evens ? [evens] : [])]) for (const c of cases(g, k)) all.push(runCase(g, c));
  }
  // Free a subgroup while a request started on it is still queued: that one still runs; a
  // later call rejects with UCX_TS_CLOSED; the world and the other subgroup go on; the world
  // group cannot be freed.
  const last = runCase(reversed, { coll: "allreduce", dtype: "int32", op: "sum", count: 7, root: 0, seed: 400 });
  const freed = reversed.free();
  all.push(last, freed);
  await Promise.all(all);
  const refused = await reversed.barrier().then(() => "resolved", (e: unknown) => (e instanceof UcxError ? e.code : String(e)));
  if (refused !== "UCX_TS_CLOSED") fail(`a freed group's barrier: ${refused}, expected UCX_TS_CLOSED`);
  if (reversed.planStats.cached !== 0) fail(`a freed group still holds ${reversed.planStats.cached} plans`);
  const world0 = await world.free().then(() => "resolved", (e: unknown) => (e instanceof UcxError ? e.code : String(e)));
  if (world0 !== "UCX_TS_INVALID_ARGUMENT") fail(`freeing the world group: ${world0}`);
  await runCase(world, { coll: "allreduce", dtype: "int32", op: "sum", count: 9, root: 0, seed: 401 });
  if (evens) await runCase(evens, { coll: "allgather", dtype: "int32", op: "sum", count: 2, root: 0, seed: 402 });
}

async function persistent(world: Group): Promise<void> {
  // The tree's plan and the sliding window (plan 4), each started 100 times.
  for (const plan of [undefined, 4]) {
    const count = 64;
    const send = new Float64Array(count);
    const recv = new Float64Array(count);
    const request = world.init("allreduce", { send, recv, op: "sum", plan });
    const built = world.planStats.built;
    for (let k = 0; k < 100; k++) {
      send.fill(k * 1000 + world.rank);
      const out = await request.start();
      if (out !== recv) fail("a persistent request must fill its own receive buffer");
      const want = world.size * k * 1000 + (world.size * (world.size - 1)) / 2;
      if (recv[0] !== want || recv[count - 1] !== want) fail(`persistent allreduce (${request.plan.name}) start ${k}: got ${recv[0]}, expected ${want}`);
      checks++;
    }
    if (world.planStats.built !== built) fail("starting a persistent request must not plan again");
  }
  // Plan reuse: a second identical non-persistent call builds nothing.
  await world.allreduce(new Int16Array(33), "max");
  const before = world.planStats.built;
  await world.allreduce(new Int16Array(33), "max");
  if (world.planStats.built !== before) fail("a second identical call built a plan again");
  // The cache is bounded: calls of MAX_CACHED_PLANS + 30 different counts evict the oldest plans
  // (a program varying its counts grew it without end), and results stay right.
  for (let count = 1; count <= MAX_CACHED_PLANS + 30; count++) {
    const out = await world.allreduce(new Int8Array(count).fill(1), "sum");
    if (out[count - 1] !== world.size) fail(`allreduce of ${count} int8: got ${out[count - 1]}`);
  }
  // Every count's scratch is tiny, so the bound reached is the plans' count: exactly full.
  if (world.planStats.cached !== MAX_CACHED_PLANS || world.planStats.evicted < 30) fail(`plan cache ${JSON.stringify(world.planStats)}, bound ${MAX_CACHED_PLANS}`);
  checks++;
  checks++;
}

const started = performance.now();
const ctx = await UcgContext.create({ bootstrapTimeoutMs: 60_000, ...(mode === "direct" ? { progressMode: "polling" as const } : {}) });
if (process.env.UCX_TS_UCG_TIMING === "1") console.log(`lap create ${(performance.now() - started).toFixed(0)} ms`);
const world = ctx.world;
try {
  if (mode === "die") {
    if (world.rank === world.size - 1) {
      console.log("UCG_OK leaving");
      process.exit(0); // no close, no goodbye: the others must notice
    }
    const t0 = Date.now();
    try {
      // UCX_TS_UCG_DIE_PLAN: the allreduce plan to die in (collectives.test.ts varies it), else the tree's.
      const plan = process.env.UCX_TS_UCG_DIE_PLAN ? Number(process.env.UCX_TS_UCG_DIE_PLAN) : undefined;
      await world.init("allreduce", { send: new Float64Array(1000).fill(1), op: "sum", plan }).start({ timeoutMs: 60_000 });
      fail("the allreduce resolved although a member had died");
    } catch (e) {
      if (!(e instanceof UcxError)) fail(`rejected with ${String(e)}, not a UcxError`);
      console.log(`UCG_REJECTED ${(e as UcxError).code} ${Date.now() - t0}`);
      // The group stays broken: later calls reject at once with the same error.
      const again = await world.barrier().then(() => "resolved", (e2: UcxError) => e2.code);
      if (again !== (e as UcxError).code) fail(`a later call on the broken group gave ${again}`);
    }
    console.log(`UCG_OK ${checks}`);
    await ctx.close({ timeoutMs: 1 });
    process.exit(0);
  }
  if (mode === "direct") {
    // Polling mode: a step's small sends and its receives go straight to UCX, not through the ring.
    const direct = ctx.worker.directTags();
    if (!direct) fail("polling mode offers no direct tag path");
    const before = { ...direct.posted };
    const inlineBefore = ctx.worker.protocolCounts.inline;
    const n = world.size;
    const send = new Float64Array(1);
    const recv = new Float64Array(1);
    const allreduce = world.init("allreduce", { send, recv, op: "sum" });
    const calls = 200;
    for (let i = 0; i < calls; i++) {
      send[0] = i * (world.rank + 1);
      await allreduce.start();
      const want = (i * n * (n + 1)) / 2;
      if (recv[0] !== want) fail(`allreduce ${i}: got ${recv[0]}, want ${want}`);
      checks++;
    }
    // Blocks of 4 bytes each way, and a bcast from the last rank.
    const blocks = Int32Array.from({ length: n }, (_, j) => world.rank * 100 + j);
    const got = await world.alltoall(blocks);
    for (let j = 0; j < n; j++) if (got[j] !== j * 100 + world.rank) fail(`alltoall block ${j}: got ${got[j]}`);
    const b = new Uint8Array(16).fill(world.rank === n - 1 ? 7 : 0);
    await world.bcast(b, n - 1);
    if (b.some((x) => x !== 7)) fail(`bcast: got ${b.join(",")}`);
    checks += 2;
    const sent = direct.posted.sends - before.sends;
    const received = direct.posted.receives - before.receives;
    // Recursive doubling sends and receives one message per step: at least log2(n) a call.
    if (sent < calls || received < calls) fail(`direct path posted ${sent} sends and ${received} receives over ${calls} allreduces`);
    if (ctx.worker.protocolCounts.inline !== inlineBefore) fail(`${ctx.worker.protocolCounts.inline - inlineBefore} sends went through the ring's inline path`);
    if (direct.count !== 0) fail(`${direct.count} direct requests still held after the collectives`);
    checks++;
    await world.barrier();
    if (world.rank === n - 1) {
      console.log(`UCG_OK ${checks}`);
      process.exit(0); // no close, no goodbye: the others must notice
    }
    const t0 = Date.now();
    try {
      send[0] = 1;
      // Waits on a receive posted directly, which UCX never completes: the endpoint's failure must cancel it.
      for (let i = 0; i < 1000; i++) await allreduce.start({ timeoutMs: 60_000 });
      fail("1000 allreduces resolved although a member had died");
    } catch (e) {
      if (!(e instanceof UcxError)) fail(`rejected with ${String(e)}, not a UcxError`);
      console.log(`UCG_REJECTED ${(e as UcxError).code} ${Date.now() - t0}`);
    }
    // The cancelled receives are given back once progress delivers their cancellation: nothing
    // stays held for the worker's close.
    for (let i = 0; i < 1000 && direct.count > 0; i++) ctx.worker.progress();
    if (direct.count !== 0) fail(`${direct.count} direct requests still held after the failure`);
    console.log(`UCG_OK ${checks}`);
    await ctx.close({ timeoutMs: 1 });
    process.exit(0);
  }
  // One launch covers several member counts: the world, and subgroups of 5, 4, 3, 2 and 1 of
  // its members (odd ranks first, descending: group ranks are not world ranks) for the others.
  const sizes = [world.size, ...(mode === "full" ? [] : [5, 4, 3, 2, 1].filter((s) => s < world.size))];
  if (mode === "multinode") {
    // Ranks on two "hosts" (network namespaces, multinode.test.ts): the topology sees both, no
    // link between them is shared memory, and collectives across them give the reference.
    if (ctx.topology.hostCount !== 2 || world.nodeLeaders.length !== 2) fail(`expected 2 hosts, topology has ${ctx.topology.hostCount} (${ctx.topology.hosts.join(", ")})`);
    for (let r = 0; r < world.size; r++) {
      if (r === world.rank) continue;
      const lanes = await ctx.channel.endpointTo(r).transports();
      console.log(`UCG_TRANSPORTS ${r} ${lanes.join(",")}`);
      if (lanes.length === 0 || lanes.some((l) => !l.startsWith("tcp/"))) fail(`link to rank ${r} uses ${lanes.join(", ")}: expected tcp only`);
    }
    const n = world.size;
    for (const c of [
      { coll: "allreduce", dtype: "float64", op: "sum", count: 1, root: 0, seed },
      { coll: "allreduce", dtype: "float64", op: "sum", count: 1 << 17, root: 0, seed },
      { coll: "bcast", dtype: "uint8", op: "sum", count: 1 << 20, root: 1, seed },
      { coll: "alltoall", dtype: "int32", op: "sum", count: 1000, root: 0, seed },
      { coll: "allgather", dtype: "int64", op: "sum", count: 100, root: 0, seed },
      { coll: "reduce", dtype: "int32", op: "affine", count: 10, root: n - 1, seed },
      { coll: "barrier", dtype: "uint8", op: "sum", count: 0, root: 0, seed },
    ] satisfies Case[]) await runCase(world, c);
    await ctx.close();
    console.log(`UCG_OK ${checks}`);
    process.exit(0);
  }
  const timing = process.env.UCX_TS_UCG_TIMING === "1";
  let t = performance.now();
  const lap = (what: string) => {
    if (timing) console.log(`lap ${what} ${(performance.now() - t).toFixed(0)} ms`);
    t = performance.now();
  };
  lap("bootstrap");
  const order = [...Array.from({ length: world.size }, (_, i) => world.size - 1 - i).filter((r) => r % 2 === 1), ...Array.from({ length: world.size }, (_, i) => world.size - 1 - i).filter((r) => r % 2 === 0)];
  for (const size of sizes) {
    const group = size === world.size ? world : await world.subgroup(order.slice(0, size));
    if (!group) continue;
    const cases = mode === "full" ? fullCases(size) : sampleCases(size, size === world.size);
    for (const c of cases) {
      await runCase(group, c);
      if (timing) lap(`${size} members: ${describeCase(c)}`);
    }
  }
  await concurrentGroups(ctx);
  lap("groups");
  await persistent(world);
  lap("persistent");
  await ctx.close();
  lap("close");
  console.log(`UCG_OK ${checks}`);
} catch (e) {
  fail(e instanceof Error ? (e.stack ?? e.message) : String(e));
}
