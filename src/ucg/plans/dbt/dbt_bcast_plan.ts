/**
 * Bcast down a double binary tree, pipelined: the root sends the first half of the data down tree
 * 0 and the second half down tree 1, each in segments. A member at depth d of a tree receives
 * segment j in step j + d - 1 and forwards it to its children in step j + d (from the same region
 * of the caller's buffer: no copy); both trees' transfers of a step go together. For large data.
 */
import { recv, region, send, StepBuilder, type Phase } from "../../phase.ts";
import { blockCount, blockOffset, type PlanArgs, type PlanConstant, type PlanTemplate, type Tunables } from "../base/plan_base.ts";
import { dbtTree } from "./dbt.ts";

export const dbtBcastPlan: PlanTemplate = {
  coll: "bcast",
  id: 1,
  name: "dbt/dbt_bcast",
  commutativeOnly: false,
  configTable: "dbt",
  build({ rank, size, count, root, elementSize }: PlanArgs, t: Tunables): PlanConstant {
    const b = new StepBuilder();
    if (size === 1) return { steps: b.steps, scratchCount: 0 };
    const halves = [
      { offset: 0, count: Math.ceil(count / 2) },
      { offset: Math.ceil(count / 2), count: count - Math.ceil(count / 2) },
    ];
    const segmentElements = Math.max(1, Math.floor(t.SEGMENT_BYTES! / elementSize));
    const segments = halves.map((h) => Math.max(1, Math.ceil(h.count / segmentElements)));
    const segment = (which: 0 | 1, j: number) => {
      const h = halves[which]!;
      return region("recv", h.offset + blockOffset(h.count, segments[which]!, j), blockCount(h.count, segments[which]!, j));
    };
    const byStep = new Map<number, Phase[]>();
    const at = (step: number, p: Phase) => (byStep.get(step) ?? byStep.set(step, []).get(step)!).push(p);
    for (const which of [0, 1] as const) {
      const tree = dbtTree(rank, size, root, which);
      for (let j = 0; j < segments[which]!; j++) {
        if (!tree) {
          const top = dbtTree(root === 0 ? 1 : 0, size, root, which)!.top;
          at(j, send(top, segment(which, j)));
          continue;
        }
        at(j + tree.depth - 1, recv(tree.parent, segment(which, j)));
        for (const c of tree.children) at(j + tree.depth, send(c, segment(which, j)));
      }
    }
    for (const step of [...byStep.keys()].sort((x, y) => x - y)) b.step(byStep.get(step)!);
    return { steps: b.steps, scratchCount: 0 };
  },
};
