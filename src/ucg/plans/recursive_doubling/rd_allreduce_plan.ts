/** Allreduce by recursive doubling: log2(n) exchanges of the whole vector (+2 for the fix-up). Small messages, any op (keeps rank order). */
import { copy, recv, reduce, region, send, StepBuilder, type Region } from "../../phase.ts";
import type { PlanArgs, PlanConstant, PlanTemplate } from "../base/plan_base.ts";
import { rdSchedule } from "./rd.ts";

/**
 * The steps, the vector in "recv" and the incoming one in "scratch". `input`: where this member's
 * own vector is to begin with when not in "recv" already (allreduce: the caller's send buffer).
 * It is then sent and reduced from where it is, the first reduce writing "recv" (target = incoming
 * (op) input): no copy of the input into "recv" before the first exchange, a step of its own
 * that cost a 2-rank 8 B allreduce ~0.2 us of its ~2.2 (issue 23, 2026-12-07).
 */
export function rdAllreduceSteps(b: StepBuilder, rank: number, size: number, count: number, input?: Region): void {
  const all = region("recv", 0, count);
  const tmp = region("scratch", 0, count);
  const s = rdSchedule(rank, size);
  /** Where this member's vector is now: `input` until the first reduce has written `all`. */
  let mine = input ?? all;
  const reduceInto = (peerIsLower: boolean) => {
    const r = reduce(all, tmp, peerIsLower, mine === all ? undefined : mine);
    mine = all;
    return r;
  };
  if (s.fold?.role === "send") {
    // Folded away: its vector goes to the odd rank above it, the result comes back into `all`.
    b.step([send(s.fold.peer, mine)]);
    b.step([recv(s.fold.peer, all)]);
    return;
  }
  if (s.fold?.role === "recv") b.step([recv(s.fold.peer, tmp)], [reduceInto(true)]);
  for (const x of s.exchanges) b.step([send(x.peer, mine), recv(x.peer, tmp)], [reduceInto(x.peerIsLower)]);
  // A group of one: nothing was reduced into `all`.
  if (mine !== all) b.local(copy(all, mine));
  if (s.fold?.role === "recv") b.step([send(s.fold.peer, all)]);
}

export const rdAllreducePlan: PlanTemplate = {
  coll: "allreduce",
  id: 0,
  name: "recursive_doubling/rd_allreduce",
  commutativeOnly: false,
  build({ rank, size, count }: PlanArgs): PlanConstant {
    const b = new StepBuilder();
    rdAllreduceSteps(b, rank, size, count, region("send", 0, count));
    return { steps: b.steps, scratchCount: count };
  },
};
