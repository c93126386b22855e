/**
 * Allreduce on a ring: reduce-scatter (after n - 1 steps member r holds block r + 1 fully reduced)
 * then allgather of the reduced blocks. Commutative ops only: each block is combined in ring order.
 */
import { copy, recv, reduce, region, send, StepBuilder } from "../../phase.ts";
import { blockCount, blockOffset, mod, type PlanArgs, type PlanConstant, type PlanTemplate } from "../base/plan_base.ts";
import { ringNeighbours } from "./ring.ts";

export const ringAllreducePlan: PlanTemplate = {
  coll: "allreduce",
  id: 1,
  name: "ring/ring_allreduce",
  commutativeOnly: true,
  build({ rank, size, count }: PlanArgs): PlanConstant {
    const { left, right } = ringNeighbours(rank, size);
    const block = (i: number) => region("recv", blockOffset(count, size, mod(i, size)), blockCount(count, size, mod(i, size)));
    const incoming = (i: number) => region("scratch", 0, blockCount(count, size, mod(i, size)));
    const b = new StepBuilder().local(copy(region("recv", 0, count), region("send", 0, count)));
    if (size > 1) {
      for (let s = 0; s < size - 1; s++) {
        b.step([send(right, block(rank - s)), recv(left, incoming(rank - s - 1))], [reduce(block(rank - s - 1), incoming(rank - s - 1), true)]);
      }
      for (let s = 0; s < size - 1; s++) b.step([send(right, block(rank + 1 - s)), recv(left, block(rank - s))]);
    }
    return { steps: b.steps, scratchCount: blockCount(count, size, 0) };
  },
};
