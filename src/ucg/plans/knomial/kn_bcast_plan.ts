/** Bcast down a k-nomial tree: receive from the parent into the caller's buffer, forward that same region to the children (no copy). */
import { recv, region, send, StepBuilder } from "../../phase.ts";
import type { PlanArgs, PlanConstant, PlanTemplate, Tunables } from "../base/plan_base.ts";
import { knomialNode } from "./knomial.ts";

export function knBcastSteps(b: StepBuilder, rank: number, size: number, root: number, radix: number, count: number): void {
  const all = region("recv", 0, count);
  const node = knomialNode(rank, size, root, radix);
  if (node.parent !== undefined) b.step([recv(node.parent, all)]);
  // Largest subtree first: it has the longest way to go.
  b.step([...node.children].reverse().map((c) => send(c.rank, all)));
}

export const knBcastPlan: PlanTemplate = {
  coll: "bcast",
  id: 0,
  name: "knomial/kn_bcast",
  commutativeOnly: false,
  configTable: "knomial",
  build({ rank, size, count, root }: PlanArgs, t: Tunables): PlanConstant {
    const b = new StepBuilder();
    knBcastSteps(b, rank, size, root, t.RADIX!, count);
    return { steps: b.steps, scratchCount: 0 };
  },
};
