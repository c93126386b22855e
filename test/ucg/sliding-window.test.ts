/**
 * The sliding-window allreduce (allreduce plan 4) beyond plans.test.ts's sweep: a seeded sample,
 * simulated in one process (helpers/ucg-simulation.ts), of every datatype family (signed,
 * unsigned, 64-bit bigint, float) with several ops at 1, 2, 3, 4, 5, 7 and 8 members, windows
 * and chunk sizes varied, counts from 0 to a few MiB that are not multiples of the chunk; its
 * config table; how selection treats it; ucg-info. Real processes run it in collectives.test.ts
 * (sample with a small window and chunk, 100 persistent starts, a dying member).
 * UCX_TS_UCG_FULL=1 (npm run test:full) runs every type x op x member count x window.
 */
import { suite } from "uvu";
import * as assert from "uvu/assert";
import process from "node:process";
import { swAllreducePlan } from "../../src/ucg/plans/sliding_window/sw_allreduce_plan.ts";
import { SW_CONFIG, swChunks } from "../../src/ucg/plans/sliding_window/sliding_window.ts";
import { configRegistry } from "../../src/ucg/context.ts";
import { PlanPool } from "../../src/ucg/ppool.ts";
import { ucgInfoCommand } from "../../src/cli/ucg-commands.ts";
import { UcxError, type DatatypeName } from "../../src/index.ts";
import { DATATYPES } from "../../src/ucg/datatype.ts";
import { simulate } from "../helpers/ucg-simulation.ts";
import { describeCase, rng, type Case } from "../helpers/ucg-reference.ts";

const test = suite("ucg/sliding-window");
const full = process.env.UCX_TS_UCG_FULL === "1";
const seed = Number(process.env.UCX_TS_UCG_SEED ?? 20261126);

const FAMILIES: Record<string, DatatypeName[]> = {
  signed: ["int8", "int16", "int32"],
  unsigned: ["uint8", "uint16", "uint32"],
  bigint: ["int64", "uint64"],
  float: ["float32", "float64"],
};
const INT_OPS = ["sum", "prod", "min", "max", "band", "bor", "bxor", "land", "lor"];
const FLOAT_OPS = ["sum", "prod", "min", "max", "land", "lor"];
const SIZES = [1, 2, 3, 4, 5, 7, 8];

async function check(c: Case, size: number, tunables: { WINDOW: number; CHUNK_BYTES: number }): Promise<void> {
  const problem = await simulate(swAllreducePlan, c, size, tunables);
  assert.is(problem, undefined, `${describeCase(c)}, ${size} members, window ${tunables.WINDOW}, chunk ${tunables.CHUNK_BYTES} B: ${problem}`);
}

test(`${full ? "every" : "a seeded sample of"} datatype family x op x member count 1..8, windows and chunks varied, 0 elements to uneven counts, give the sequential result (seed ${seed})`, async () => {
  const r = rng(seed);
  const pick = <T>(a: readonly T[]): T => a[Math.floor(r() * a.length)]!;
  let checked = 0;
  for (const size of SIZES) {
    for (const [family, types] of Object.entries(FAMILIES)) {
      for (const dtype of full ? types : [pick(types)]) {
        const ops = family === "float" ? FLOAT_OPS : INT_OPS;
        for (const op of full ? ops : [pick(ops)]) {
          const elementSize = DATATYPES[dtype].size;
          // A chunk of 1..7 elements, so a block of the drawn count spans several uneven rounds.
          const chunkElements = 1 + Math.floor(r() * 7);
          const tunables = { WINDOW: pick([0, 1, 2, 3]), CHUNK_BYTES: chunkElements * elementSize + (r() < 0.5 ? 0 : 1) };
          const count = full ? [0, 1, size * chunkElements * 3 + 1, 1000] : [pick([0, 1, size - 1, size * chunkElements * 2 + 3, 97 + Math.floor(r() * 100)])];
          for (const n of count) {
            await check({ coll: "allreduce", dtype, op, count: n, root: 0, seed: seed + checked }, size, tunables);
            checked++;
          }
        }
      }
    }
    // The non-commutative user op: combined in rank order, not round from the owner.
    await check({ coll: "allreduce", dtype: "int32", op: "affine", count: 3 * size + 5, root: 0, seed: seed + size }, size, { WINDOW: size > 3 ? 2 : 0, CHUNK_BYTES: 8 });
    checked++;
  }
  assert.ok(checked >= SIZES.length * 5);
});

test("a few MiB, not a multiple of the chunk, with 256 KiB chunks (and the defaults under test:full)", async () => {
  // float64, 2 MiB + 1003 elements over 3 members: uneven blocks of ~700 KB, 3 rounds of 256 KiB chunks, the last short.
  const count = (2 << 20) / 8 + 1003;
  const tunables = { WINDOW: SW_CONFIG.fields.WINDOW.default, CHUNK_BYTES: 256 * 1024 };
  const cut = swChunks(count, 3, 8, tunables.CHUNK_BYTES);
  assert.ok(cut.rounds > 1 && cut.at(2, cut.rounds - 1)!.count < cut.chunk, "the case must take several rounds with a short last chunk");
  await check({ coll: "allreduce", dtype: "float64", op: "sum", count, root: 0, seed }, 3, tunables);
  if (full) await check({ coll: "allreduce", dtype: "float64", op: "sum", count: (6 << 20) / 8 + 7, root: 0, seed }, 2, { WINDOW: 0, CHUNK_BYTES: SW_CONFIG.fields.CHUNK_BYTES.default });
  if (full) await check({ coll: "allreduce", dtype: "float64", op: "max", count: (4 << 20) / 8 + 5, root: 0, seed }, 8, { WINDOW: 1, CHUNK_BYTES: 96 * 1024 });
});

test("in place (receive buffer = send buffer): commutative and non-commutative, windows sliding over several chunks", async () => {
  for (const size of [2, 3, 5]) {
    for (const op of ["sum", "affine"]) {
      const c: Case = { coll: "allreduce", dtype: "int32", op, count: 4 * size + 3, root: 0, seed: seed + size };
      const problem = await simulate(swAllreducePlan, c, size, { WINDOW: 2, CHUNK_BYTES: 8 }, { inPlace: true });
      assert.is(problem, undefined, `${describeCase(c)} in place, ${size} members: ${problem}`);
    }
  }
});

test("its config table: prefix UCX_TS_SW_, sizes with units, bad values and clashing tables refused", () => {
  const registry = configRegistry();
  const t = registry.resolve({ UCX_TS_SW_WINDOW: "3", UCX_TS_SW_CHUNK_BYTES: "64KiB" }).table("sliding_window");
  assert.equal([t.WINDOW, t.CHUNK_BYTES], [3, 65536]);
  assert.equal(registry.resolve({}, { UCX_TS_SW_CHUNK_BYTES: 1000 }).table("sliding_window").CHUNK_BYTES, 1000);
  assert.throws(() => registry.resolve({ UCX_TS_SW_CHUNK_BYTES: "0" }), (e: unknown) => e instanceof UcxError && /UCX_TS_SW_CHUNK_BYTES=0/.test(e.message));
  assert.throws(() => registry.resolve({}, { UCX_TS_SW_WINDOWS: 2 }), (e: unknown) => e instanceof UcxError && /unknown/.test(e.message));
  assert.throws(() => registry.add({ name: "sw2", prefix: "UCX_TS_SW_", fields: {} }), (e: unknown) => e instanceof UcxError && /share the prefix/.test(e.message));
  assert.throws(() => registry.add({ name: "sw3", prefix: "UCX_TS_S", fields: { W_WINDOW: { default: 1, doc: "" } } }), (e: unknown) => e instanceof UcxError && /UCX_TS_SW_WINDOW is defined by/.test(e.message));
});

test("selection: plan 4 runs non-commutative ops too (rank order), UCX_TS_ALLREDUCE_PLAN=4 and UCX_TS_UCG_ALLREDUCE_SW_BYTES pick it, ucg-info lists it and its table", () => {
  const registry = configRegistry();
  const pool = new PlanPool(registry.resolve({ UCX_TS_ALLREDUCE_PLAN: "4" }));
  for (const commutative of [true, false]) assert.is(pool.select("allreduce", 5, { commutative, bytes: 8 << 20, count: 1 << 20 }).name, "sliding_window/sw_allreduce");
  assert.is(new PlanPool(registry.resolve({})).select("allreduce", 4, { commutative: false, bytes: 8, count: 1 }, 4).id, 4);
  // In the decision tree behind UCX_TS_UCG_ALLREDUCE_SW_BYTES (default: never), for any op.
  const byDefault = new PlanPool(registry.resolve({}));
  assert.not.equal(byDefault.select("allreduce", 4, { commutative: true, bytes: 64 << 20, count: 8 << 20 }).id, 4);
  const tree = new PlanPool(registry.resolve({ UCX_TS_UCG_ALLREDUCE_SW_BYTES: "2MiB" }));
  for (const commutative of [true, false]) {
    assert.is(tree.select("allreduce", 5, { commutative, bytes: 4 << 20, count: 1 << 19 }).id, 4);
    assert.is.not(tree.select("allreduce", 5, { commutative, bytes: 1 << 20, count: 1 << 17 }).id, 4);
  }
  const lines: string[] = [];
  assert.is(ucgInfoCommand(["--coll", "allreduce", "--size", "4", "--bytes", "4MiB"], (l) => lines.push(l)), 0);
  const text = lines.join("\n");
  assert.match(text, /4 sliding_window\/sw_allreduce/);
  assert.match(text, /UCX_TS_SW_WINDOW=0/);
  assert.match(text, /UCX_TS_SW_CHUNK_BYTES=1048576/);
});

test.run();
