/** Alltoall by pairwise exchange: in step s member r sends its block for r + s and receives from r - s. n - 1 steps of one block each: large blocks. */
import { copy, recv, region, send, StepBuilder } from "../../phase.ts";
import { mod, type PlanArgs, type PlanConstant, type PlanTemplate } from "../base/plan_base.ts";

export const pairwiseAlltoallPlan: PlanTemplate = {
  coll: "alltoall",
  id: 0,
  name: "pairwise/pairwise_alltoall",
  commutativeOnly: false,
  build({ rank, size, count }: PlanArgs): PlanConstant {
    const b = new StepBuilder().local(copy(region("recv", rank * count, count), region("send", rank * count, count)));
    for (let s = 1; s < size; s++) {
      const to = mod(rank + s, size);
      const from = mod(rank - s, size);
      b.step([send(to, region("send", to * count, count)), recv(from, region("recv", from * count, count))]);
    }
    return { steps: b.steps, scratchCount: 0 };
  },
};
