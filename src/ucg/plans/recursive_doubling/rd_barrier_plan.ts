/** Barrier by recursive doubling: the allreduce's message pattern with empty messages. */
import { recv, region, send, StepBuilder } from "../../phase.ts";
import type { PlanArgs, PlanConstant, PlanTemplate } from "../base/plan_base.ts";
import { rdSchedule } from "./rd.ts";

export const rdBarrierPlan: PlanTemplate = {
  coll: "barrier",
  id: 0,
  name: "recursive_doubling/rd_barrier",
  commutativeOnly: false,
  build({ rank, size }: PlanArgs): PlanConstant {
    const none = region("scratch", 0, 0);
    const b = new StepBuilder();
    const s = rdSchedule(rank, size);
    if (s.fold?.role === "send") b.step([send(s.fold.peer, none)]);
    else if (s.fold?.role === "recv") b.step([recv(s.fold.peer, none)]);
    for (const x of s.exchanges) b.step([send(x.peer, none), recv(x.peer, none)]);
    if (s.fold?.role === "send") b.step([recv(s.fold.peer, none)]);
    else if (s.fold?.role === "recv") b.step([send(s.fold.peer, none)]);
    return { steps: b.steps, scratchCount: 0 };
  },
};
