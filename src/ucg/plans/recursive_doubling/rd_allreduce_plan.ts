/** Allreduce by recursive doubling: log2(n) exchanges of the whole vector (+2 for the fix-up). Small messages, any op (keeps rank order). */
import { copy, recv, reduce, region, send, StepBuilder } from "../../phase.ts";
import type { PlanArgs, PlanConstant, PlanTemplate } from "../base/plan_base.ts";
import { rdSchedule } from "./rd.ts";

export function rdAllreduceSteps(b: StepBuilder, rank: number, size: number, count: number): void {
  const all = region("recv", 0, count);
  const tmp = region("scratch", 0, count);
  const s = rdSchedule(rank, size);
  if (s.fold?.role === "send") {
    b.step([send(s.fold.peer, all)]);
  } else if (s.fold?.role === "recv") {
    b.step([recv(s.fold.peer, tmp)], [reduce(all, tmp, true)]);
  }
  for (const x of s.exchanges) b.step([send(x.peer, all), recv(x.peer, tmp)], [reduce(all, tmp, x.peerIsLower)]);
  if (s.fold?.role === "send") b.step([recv(s.fold.peer, all)]);
  else if (s.fold?.role === "recv") b.step([send(s.fold.peer, all)]);
}

export const rdAllreducePlan: PlanTemplate = {
  coll: "allreduce",
  id: 0,
  name: "recursive_doubling/rd_allreduce",
  commutativeOnly: false,
  build({ rank, size, count }: PlanArgs): PlanConstant {
    const b = new StepBuilder().local(copy(region("recv", 0, count), region("send", 0, count)));
    rdAllreduceSteps(b, rank, size, count);
    return { steps: b.steps, scratchCount: count };
  },
};
