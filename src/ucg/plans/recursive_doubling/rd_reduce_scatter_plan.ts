/**
 * Reduce-scatter for any op (non-commutative included): recursive doubling allreduce of the whole
 * n-block vector in scratch, then each member keeps its block. n times the ring's traffic, but in
 * rank order; the planner uses it only where the ring cannot run (a non-commutative op).
 */
import { copy, region, StepBuilder } from "../../phase.ts";
import type { PlanArgs, PlanConstant, PlanTemplate } from "../base/plan_base.ts";
import { rdAllreduceSteps } from "./rd_allreduce_plan.ts";

export const rdReduceScatterPlan: PlanTemplate = {
  coll: "reduce_scatter",
  id: 1,
  name: "recursive_doubling/rd_reduce_scatter",
  commutativeOnly: false,
  build({ rank, size, count }: PlanArgs): PlanConstant {
    const total = size * count;
    // The allreduce's steps use "recv" for the vector and "scratch" for the incoming one; here the
    // vector lives in scratch[total, 2 total) and the incoming one in scratch[0, total) (rebased below).
    const inner = new StepBuilder();
    rdAllreduceSteps(inner, rank, size, total);
    const rebase = (r: { buffer: string; offset: number; count: number }) =>
      r.buffer === "recv" ? region("scratch", total + r.offset, r.count) : region("scratch", r.offset, r.count);
    const b = new StepBuilder().local(copy(region("scratch", total, total), region("send", 0, total)));
    for (const st of inner.steps) {
      b.step(
        st.transfers.map((p) => (p.type === "send" || p.type === "recv" ? { ...p, region: rebase(p.region) } : p)),
        st.local.map((p) => (p.type === "reduce" ? { ...p, target: rebase(p.target), source: rebase(p.source) } : p)),
      );
    }
    b.local(copy(region("recv", 0, count), region("scratch", total + rank * count, count)));
    return { steps: b.steps, scratchCount: 2 * total };
  },
};
