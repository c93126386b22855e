/**
 * Allgather by recursive doubling: each exchange doubles the contiguous range of blocks a member
 * holds, received straight into the result (no scratch). The fix-up: a folded-away even rank
 * gives its block to its odd neighbour first and gets the whole result from it at the end.
 */
import { copy, recv, region, send, StepBuilder } from "../../phase.ts";
import type { PlanArgs, PlanConstant, PlanTemplate } from "../base/plan_base.ts";
import { firstRealRank, rdSchedule } from "./rd.ts";

export const rdAllgatherPlan: PlanTemplate = {
  coll: "allgather",
  id: 0,
  name: "recursive_doubling/rd_allgather",
  commutativeOnly: false,
  build({ rank, size, count }: PlanArgs): PlanConstant {
    const s = rdSchedule(rank, size);
    const blocks = (first: number, end: number) => region("recv", first * count, (end - first) * count);
    // Real ranks covered by virtual ranks [v, v + len).
    const cover = (v: number, len: number) => blocks(firstRealRank(v, s.extra), v + len >= s.p2 ? size : firstRealRank(v + len, s.extra));
    const b = new StepBuilder().local(copy(region("recv", rank * count, count), region("send", 0, count)));
    if (s.fold?.role === "send") b.step([send(s.fold.peer, region("recv", rank * count, count))]);
    else if (s.fold?.role === "recv") b.step([recv(s.fold.peer, region("recv", s.fold.peer * count, count))]);
    for (const x of s.exchanges) {
      const mine = s.virtualRank & ~(x.mask - 1);
      const theirs = mine ^ x.mask;
      b.step([send(x.peer, cover(mine, x.mask)), recv(x.peer, cover(theirs, x.mask))]);
    }
    if (s.fold?.role === "send") b.step([recv(s.fold.peer, region("recv", 0, size * count))]);
    else if (s.fold?.role === "recv") b.step([send(s.fold.peer, region("recv", 0, size * count))]);
    return { steps: b.steps, scratchCount: 0 };
  },
};
