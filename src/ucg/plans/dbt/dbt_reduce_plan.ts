/**
 * Reduce up a double binary tree, pipelined (dbt_bcast_plan.ts reversed): each half of the vector
 * goes up one tree in segments. A member whose subtree is h levels high receives its children's
 * partial segment j in step j + h - 1, adds them to its own, and sends the sum up in the step its
 * parent receives it; the root adds both trees' tops to its own data. Commutative ops only (a tree folds
 * members in tree order). For large vectors.
 */
import { copy, recv, reduce, region, send, StepBuilder, type Phase } from "../../phase.ts";
import type { PlanArgs, PlanConstant, PlanTemplate, Tunables } from "../base/plan_base.ts";
import { dbtTree } from "./dbt.ts";
import { dbtSegments } from "./dbt_segments.ts";

/** Levels below each member in tree `which` (0 for a leaf), by real rank. */
function subtreeHeights(size: number, root: number, which: 0 | 1): Map<number, number> {
  const heights = new Map<number, number>();
  const children = new Map<number, readonly number[]>();
  for (let r = 0; r < size; r++) if (r !== root) children.set(r, dbtTree(r, size, root, which)!.children);
  const height = (r: number): number => {
    let h = heights.get(r);
    if (h === undefined) heights.set(r, (h = Math.max(-1, ...children.get(r)!.map(height)) + 1));
    return h;
  };
  for (const r of children.keys()) height(r);
  return heights;
}

export const dbtReducePlan: PlanTemplate = {
  coll: "reduce",
  id: 1,
  name: "dbt/dbt_reduce",
  commutativeOnly: true,
  configTable: "dbt",
  build({ rank, size, count, root, elementSize }: PlanArgs, t: Tunables): PlanConstant {
    const isRoot = rank === root;
    const accBuffer = isRoot ? "recv" : "scratch";
    const b = new StepBuilder().local(copy(region(accBuffer, 0, count), region("send", 0, count)));
    if (size === 1) return { steps: b.steps, scratchCount: 0 };
    const cut = dbtSegments(count, elementSize, t.SEGMENT_BYTES!);
    const largest = cut.largest;
    // Scratch: the accumulator (off the root), then one landing slot per child per tree.
    const accEnd = isRoot ? 0 : count;
    let slots = 0;
    const transfers = new Map<number, Phase[]>();
    const locals = new Map<number, Phase[]>();
    const at = (m: Map<number, Phase[]>, step: number, p: Phase) => (m.get(step) ?? m.set(step, []).get(step)!).push(p);
    for (const which of [0, 1] as const) {
      const heights = subtreeHeights(size, root, which);
      const tree = dbtTree(rank, size, root, which);
      const from = tree ? tree.children : [dbtTree(root === 0 ? 1 : 0, size, root, which)!.top];
      const height = tree ? heights.get(rank)! : heights.get(from[0]!)! + 1;
      const slotOf = from.map(() => accEnd + largest * slots++);
      const parentHeight = !tree ? 0 : tree.parent === root ? height + 1 : heights.get(tree.parent)!;
      for (let j = 0; j < cut.segments[which]; j++) {
        const s = cut.segment(which, j);
        from.forEach((c, i) => {
          const landing = region("scratch", slotOf[i]!, s.count);
          at(transfers, j + height - 1, recv(c, landing));
          at(locals, j + height - 1, reduce(region(accBuffer, s.offset, s.count), landing, false));
        });
        // Sent in the step its parent receives it, not as soon as it is ready: then every message
        // of a pair has the same step on both ends, and a pair that is parent and child in both
        // trees posts sends and receives in one order (equal tags match first-in first-out).
        if (tree) at(transfers, j + parentHeight - 1, send(tree.parent, region(accBuffer, s.offset, s.count)));
      }
    }
    const steps = [...new Set([...transfers.keys(), ...locals.keys()])].sort((x, y) => x - y);
    for (const step of steps) b.step(transfers.get(step) ?? [], locals.get(step) ?? []);
    return { steps: b.steps, scratchCount: accEnd + largest * slots };
  },
};
