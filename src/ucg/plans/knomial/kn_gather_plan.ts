/**
 * Gather up a k-nomial tree: every member collects its subtree's blocks, contiguous in virtual
 * rank, in scratch; children's ranges are received straight into place. The root rotates the
 * virtual order back into rank order.
 */
import { copy, recv, region, send, StepBuilder } from "../../phase.ts";
import type { PlanArgs, PlanConstant, PlanTemplate, Tunables } from "../base/plan_base.ts";
import { knomialNode } from "./knomial.ts";

export const knGatherPlan: PlanTemplate = {
  coll: "gather",
  id: 0,
  name: "knomial/kn_gather",
  commutativeOnly: false,
  configTable: "knomial",
  build({ rank, size, count, root }: PlanArgs, t: Tunables): PlanConstant {
    const node = knomialNode(rank, size, root, t.RADIX!);
    const v = node.virtualRank;
    const b = new StepBuilder().local(copy(region("scratch", 0, count), region("send", 0, count)));
    b.step(node.children.map((c) => recv(c.rank, region("scratch", (c.virtualRank - v) * count, c.span * count))));
    if (node.parent !== undefined) {
      b.step([send(node.parent, region("scratch", 0, node.span * count))]);
    } else {
      // Virtual block i is rank (i + root) mod n: two copies undo the rotation.
      const head = size - root;
      b.local(copy(region("recv", root * count, head * count), region("scratch", 0, head * count)), copy(region("recv", 0, root * count), region("scratch", head * count, root * count)));
    }
    return { steps: b.steps, scratchCount: node.span * count };
  },
};
