/** Allgather on a ring: n - 1 steps, each passing on the block received in the step before (forwarded from the result buffer, no copy). */
import { copy, recv, region, send, StepBuilder } from "../../phase.ts";
import { mod, type PlanArgs, type PlanConstant, type PlanTemplate } from "../base/plan_base.ts";
import { ringNeighbours } from "./ring.ts";

export const ringAllgatherPlan: PlanTemplate = {
  coll: "allgather",
  id: 1,
  name: "ring/ring_allgather",
  commutativeOnly: false,
  build({ rank, size, count }: PlanArgs): PlanConstant {
    const { left, right } = ringNeighbours(rank, size);
    const block = (i: number) => region("recv", mod(i, size) * count, count);
    const b = new StepBuilder().local(copy(block(rank), region("send", 0, count)));
    for (let s = 0; s < size - 1; s++) b.step([send(right, block(rank - s)), recv(left, block(rank - s - 1))]);
    return { steps: b.steps, scratchCount: 0 };
  },
};
