/** Scatter down a k-nomial tree: the gather reversed (the root rotates into virtual order, each member passes its children their ranges). */
import { copy, recv, region, send, StepBuilder } from "../../phase.ts";
import type { PlanArgs, PlanConstant, PlanTemplate, Tunables } from "../base/plan_base.ts";
import { knomialNode } from "./knomial.ts";

export const knScatterPlan: PlanTemplate = {
  coll: "scatter",
  id: 0,
  name: "knomial/kn_scatter",
  commutativeOnly: false,
  configTable: "knomial",
  build({ rank, size, count, root }: PlanArgs, t: Tunables): PlanConstant {
    const node = knomialNode(rank, size, root, t.RADIX!);
    const v = node.virtualRank;
    const b = new StepBuilder();
    if (node.parent === undefined) {
      const head = size - root;
      b.local(copy(region("scratch", 0, head * count), region("send", root * count, head * count)), copy(region("scratch", head * count, root * count), region("send", 0, root * count)));
    } else {
      b.step([recv(node.parent, region("scratch", 0, node.span * count))]);
    }
    b.step([...node.children].reverse().map((c) => send(c.rank, region("scratch", (c.virtualRank - v) * count, c.span * count))));
    b.local(copy(region("recv", 0, count), region("scratch", 0, count)));
    return { steps: b.steps, scratchCount: node.span * count };
  },
};
