/**
 * Reduce up a k-nomial tree. Each member receives its children's partial results (all at once,
 * into scratch slots), combines them in rank order after its own, and sends the result to its
 * parent. Subtrees are contiguous in virtual rank, so with the tree rooted at rank 0 the order is
 * the ranks' own: a non-commutative op with another root is reduced to rank 0 and sent on.
 */
import { copy, recv, reduce, region, send, StepBuilder } from "../../phase.ts";
import type { PlanArgs, PlanConstant, PlanTemplate, Tunables } from "../base/plan_base.ts";
import { knomialNode } from "./knomial.ts";

export const knReducePlan: PlanTemplate = {
  coll: "reduce",
  id: 0,
  name: "knomial/kn_reduce",
  commutativeOnly: false,
  configTable: "knomial",
  build({ rank, size, count, root, commutative }: PlanArgs, t: Tunables): PlanConstant {
    const treeRoot = commutative ? root : 0;
    const node = knomialNode(rank, size, treeRoot, t.RADIX!);
    // The accumulator: the result buffer at the root, scratch elsewhere.
    const acc = rank === root && rank === treeRoot ? region("recv", 0, count) : region("scratch", 0, count);
    const slot = (i: number) => region("scratch", (i + 1) * count, count);
    const b = new StepBuilder().local(copy(acc, region("send", 0, count)));
    b.step(
      node.children.map((c, i) => recv(c.rank, slot(i))),
      node.children.map((_, i) => reduce(acc, slot(i), false)),
    );
    if (node.parent !== undefined) b.step([send(node.parent, acc)]);
    if (treeRoot !== root) {
      if (rank === treeRoot) b.step([send(root, acc)]);
      else if (rank === root) b.step([recv(treeRoot, region("recv", 0, count))]);
    }
    return { steps: b.steps, scratchCount: (node.children.length + 1) * count };
  },
};
