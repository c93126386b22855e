/**
 * Reduce-scatter (equal blocks) on a ring: a working copy of the n-block input in scratch; in step
 * s member r sends block r - s - 1 to the right and adds the left's block r - s - 2 into its own
 * copy, so after n - 1 steps it holds block r reduced over everyone. Commutative ops only.
 */
import { copy, recv, reduce, region, send, StepBuilder } from "../../phase.ts";
import { mod, type PlanArgs, type PlanConstant, type PlanTemplate } from "../base/plan_base.ts";
import { ringNeighbours } from "./ring.ts";

export const ringReduceScatterPlan: PlanTemplate = {
  coll: "reduce_scatter",
  id: 0,
  name: "ring/ring_reduce_scatter",
  commutativeOnly: true,
  build({ rank, size, count }: PlanArgs): PlanConstant {
    const total = size * count;
    const { left, right } = ringNeighbours(rank, size);
    const work = (i: number) => region("scratch", mod(i, size) * count, count);
    const incoming = region("scratch", total, count);
    const b = new StepBuilder().local(copy(region("scratch", 0, total), region("send", 0, total)));
    for (let s = 0; s < size - 1; s++) {
      b.step([send(right, work(rank - s - 1)), recv(left, incoming)], [reduce(work(rank - s - 2), incoming, true)]);
    }
    b.local(copy(region("recv", 0, count), work(rank)));
    return { steps: b.steps, scratchCount: total + count };
  },
};
