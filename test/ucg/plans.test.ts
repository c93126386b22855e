/**
 * Every plan template at every member count 1..9 (k-nomial radix 2, 3, 4; DBT segment sizes; SRA radix 2, 4, 8; sliding-window windows and chunks), simulated in one
 * process (helpers/ucg-simulation.ts), against the sequential reference: roots at 0, the middle
 * and the last rank, counts 0, 1, below and above the member count, a non-commutative user op
 * in the plans that take one; allreduce plans also in place (the result in the send buffer).
 * Half the cases (alternating by count and size) go over the simulated rendezvous: sends read
 * late and completed later, failing any step that writes what a send still in flight reads.
 */
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { PLAN_TEMPLATES } from "../../src/ucg/ppool.ts";
import { simulate } from "../helpers/ucg-simulation.ts";
import { describeCase, type Case } from "../helpers/ucg-reference.ts";

const test = suite("ucg/plans (simulated members)");

for (const template of PLAN_TEMPLATES) {
  test(`${template.coll} plan ${template.id} ${template.name}: sizes 1..9 give the reference result`, async () => {
    const reduces = ["reduce", "allreduce", "reduce_scatter"].includes(template.coll);
    // Tunables: k-nomial radixes; DBT segments of 4 and 12 bytes (many segments in flight) and 64 KiB (one).
    const variants: Record<string, number>[] =
      template.configTable === "knomial" ? [{ RADIX: 2 }, { RADIX: 3 }, { RADIX: 4 }]
      : template.configTable === "dbt" ? [{ SEGMENT_BYTES: 4 }, { SEGMENT_BYTES: 12 }, { SEGMENT_BYTES: 65536 }]
      : template.configTable === "sra" ? [{ RADIX: 2 }, { RADIX: 4 }, { RADIX: 8 }]
      // Sliding window: a window of 2 sliding over chunks of 1 element (many rounds, short blocks), and all at once in one 64 KiB chunk.
      : template.configTable === "sliding_window" ? [{ WINDOW: 2, CHUNK_BYTES: 4 }, { WINDOW: 0, CHUNK_BYTES: 65536 }]
      : [{}];
    let checked = 0;
    for (let size = 1; size <= 9; size++) {
      for (const tunables of variants) {
        for (const root of [...new Set([0, size >> 1, size - 1])]) {
          if (root !== 0 && !["bcast", "reduce", "gather", "scatter"].includes(template.coll)) continue;
          for (const [ci, count] of [0, 1, 2, size + 3, 2 * size + 2].entries()) {
            const rendezvous = (ci + size) % 2 === 1;
            const cases: Case[] = [{ coll: template.coll, dtype: "int32", op: "sum", count, root, seed: size * 100 + count }];
            if (reduces) {
              cases.push({ coll: template.coll, dtype: "float32", op: "max", count, root, seed: 7 + count });
              if (!template.commutativeOnly && count % 2 === 0) cases.push({ coll: template.coll, dtype: "int32", op: "affine", count, root, seed: 11 + count });
            } else if (count > 0) cases.push({ coll: template.coll, dtype: "int64", op: "sum", count, root, seed: 3 });
            for (const c of cases) {
              const problem = await simulate(template, c, size, tunables, { rendezvous });
              assert.is(problem, undefined, `${describeCase(c)}, ${size} members, ${JSON.stringify(tunables)}${rendezvous ? ", rendezvous" : ""}: ${problem}`);
              checked++;
              // In place (recv = send): plans that read the send buffer after writing the result (ring, SRA) must not lose a block.
              if (template.coll === "allreduce") {
                const inPlace = await simulate(template, c, size, tunables, { inPlace: true, rendezvous });
                assert.is(inPlace, undefined, `in place: ${describeCase(c)}, ${size} members, ${JSON.stringify(tunables)}${rendezvous ? ", rendezvous" : ""}: ${inPlace}`);
              }
            }
          }
        }
      }
    }
    assert.ok(checked > 20);
  });
}

test.run();
