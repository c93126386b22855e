/**
 * Allreduce by scatter-reduce-allgather (Rabenseifner; UCC's sra_knomial with radix 2): recursive
 * halving leaves each of the p2 active members one fully reduced block of the vector, then
 * recursive doubling gathers the blocks. Each member moves about 2 (p2-1)/p2 of the vector in
 * 2 log2(p2) steps: the ring's traffic with the logarithmic step count of recursive doubling, for
 * large vectors. Non-power-of-two counts take recursive doubling's fold (rd.ts). Commutative ops
 * only (halving combines blocks in a hypercube order, not rank order).
 *
 * The caller's send buffer is read where it is (as the ring does, ring_allreduce_plan.ts): the
 * fold and the first halving step send from it and reduce from it into the result, so no copy of
 * the whole vector into the result comes first (every range of the result is reduced into or
 * received before the plan ends).
 */
import { copy, recv, reduce, region, send, StepBuilder } from "../../phase.ts";
import { blockOffset, type PlanArgs, type PlanConstant, type PlanTemplate } from "../base/plan_base.ts";
import { rdSchedule } from "../recursive_doubling/rd.ts";

export const sraAllreducePlan: PlanTemplate = {
  coll: "allreduce",
  id: 2,
  name: "sra/sra_allreduce",
  commutativeOnly: true,
  build({ rank, size, count }: PlanArgs): PlanConstant {
    const s = rdSchedule(rank, size);
    const all = region("recv", 0, count);
    const b = new StepBuilder();
    if (size === 1) b.local(copy(all, region("send", 0, count)));
    if (s.fold?.role === "send") b.step([send(s.fold.peer, region("send", 0, count))]);
    else if (s.fold?.role === "recv") b.step([recv(s.fold.peer, region("scratch", 0, count))], [reduce(all, region("scratch", 0, count), true, region("send", 0, count))]);
    // Elements of blocks [first, end) of the vector split into p2 blocks.
    const blocks = (buffer: "send" | "recv" | "scratch", first: number, end: number) => {
      const from = blockOffset(count, s.p2, first);
      return region(buffer, buffer === "scratch" ? 0 : from, blockOffset(count, s.p2, end) - from);
    };
    // Where this member's own data is until its first reduce has written the result.
    let mine: "send" | "recv" = s.fold?.role === "recv" ? "recv" : "send";
    if (s.virtualRank >= 0) {
      let lo = 0;
      let hi = s.p2;
      // Halving: the largest mask first, so that member v ends holding block v.
      for (const x of [...s.exchanges].reverse()) {
        const mid = (lo + hi) / 2;
        const keepLow = (s.virtualRank & x.mask) === 0;
        const [keep, give] = keepLow ? [[lo, mid], [mid, hi]] : [[mid, hi], [lo, mid]];
        b.step(
          [send(x.peer, blocks(mine, give[0]!, give[1]!)), recv(x.peer, blocks("scratch", keep[0]!, keep[1]!))],
          [reduce(blocks("recv", keep[0]!, keep[1]!), blocks("scratch", keep[0]!, keep[1]!), x.peerIsLower, blocks(mine, keep[0]!, keep[1]!))],
        );
        mine = "recv";
        [lo, hi] = keep as [number, number];
      }
      // Doubling: ranges grow back to the whole vector, received in place.
      for (const x of s.exchanges) {
        const width = hi - lo;
        const theirs = (s.virtualRank & x.mask) === 0 ? [hi, hi + width] : [lo - width, lo];
        b.step([send(x.peer, blocks("recv", lo, hi)), recv(x.peer, blocks("recv", theirs[0]!, theirs[1]!))]);
        [lo, hi] = [Math.min(lo, theirs[0]!), Math.max(hi, theirs[1]!)];
      }
    }
    if (s.fold?.role === "send") b.step([recv(s.fold.peer, all)]);
    else if (s.fold?.role === "recv") b.step([send(s.fold.peer, all)]);
    return { steps: b.steps, scratchCount: count };
  },
};
