/** Barrier by k-nomial fan-in to rank 0 and fan-out from it (2 log_k n steps; no fix-up for odd counts). */
import { recv, region, send, StepBuilder } from "../../phase.ts";
import type { PlanArgs, PlanConstant, PlanTemplate, Tunables } from "../base/plan_base.ts";
import { knomialNode } from "./knomial.ts";

export const knBarrierPlan: PlanTemplate = {
  coll: "barrier",
  id: 1,
  name: "knomial/kn_barrier",
  commutativeOnly: false,
  configTable: "knomial",
  build({ rank, size }: PlanArgs, t: Tunables): PlanConstant {
    const none = region("scratch", 0, 0);
    const node = knomialNode(rank, size, 0, t.RADIX!);
    const b = new StepBuilder();
    b.step(node.children.map((c) => recv(c.rank, none)));
    if (node.parent !== undefined) b.step([send(node.parent, none)]).step([recv(node.parent, none)]);
    b.step(node.children.map((c) => send(c.rank, none)));
    return { steps: b.steps, scratchCount: 0 };
  },
};
