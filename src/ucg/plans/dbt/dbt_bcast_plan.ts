/**
 * Bcast down a double binary tree, pipelined: the root sends the first half of the data down tree
 * 0 and the second half down tree 1, each in segments. A member at depth d of a tree receives
 * segment j in step j + d - 1 and forwards it to its children in step j + d (from the same region
 * of the caller's buffer: no copy); both trees' transfers of a step go together. For large data.
 */
import { recv, region, send, StepBuilder, type Phase } from "../../phase.ts";
import type { PlanArgs, PlanConstant, PlanTemplate, Tunables } from "../base/plan_base.ts";
import { dbtTree } from "./dbt.ts";
import { dbtSegments } from "./dbt_segments.ts";

export const dbtBcastPlan: PlanTemplate = {
  coll: "bcast",
  id: 1,
  name: "dbt/dbt_bcast",
  commutativeOnly: false,
  configTable: "dbt",
  build({ rank, size, count, root, elementSize }: PlanArgs, t: Tunables): PlanConstant {
    const b = new StepBuilder();
    if (size === 1) return { steps: b.steps, scratchCount: 0 };
    const cut = dbtSegments(count, elementSize, t.SEGMENT_BYTES!);
    const segment = (which: 0 | 1, j: number) => {
      const s = cut.segment(which, j);
      return region("recv", s.offset, s.count);
    };
    const byStep = new Map<number, Phase[]>();
    const at = (step: number, p: Phase) => (byStep.get(step) ?? byStep.set(step, []).get(step)!).push(p);
    for (const which of [0, 1] as const) {
      const tree = dbtTree(rank, size, root, which);
      for (let j = 0; j < cut.segments[which]; j++) {
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
