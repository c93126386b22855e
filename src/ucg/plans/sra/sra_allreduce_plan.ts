/**
 * Allreduce by scatter-reduce-allgather (Rabenseifner; UCC's sra_knomial with radix 2): recursive
 * halving leaves each of the p2 active members one fully reduced block of the vector, then
 * recursive doubling gathers the blocks. Each member moves about 2 (p2-1)/p2 of the vector in
 * 2 log2(p2) steps: the ring's traffic with the logarithmic step count of recursive doubling, for
 * large vectors. Non-power-of-two counts take recursive doubling's fold (rd.ts). Commutative ops
 * only (halving combines blocks in a hypercube order, not rank order).
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
    const b = new StepBuilder().local(copy(all, region("send", 0, count)));
    if (s.fold?.role === "send") b.step([send(s.fold.peer, all)]);
    else if (s.fold?.role === "recv") b.step([recv(s.fold.peer, region("scratch", 0, count))], [reduce(all, region("scratch", 0, count), true)]);
    // Elements of blocks [first, end) of the vector split into p2 blocks.
    const blocks = (buffer: "recv" | "scratch", first: number, end: number) => {
      const from = blockOffset(count, s.p2, first);
      return region(buffer, buffer === "recv" ? from : 0, blockOffset(count, s.p2, end) - from);
    };
    if (s.virtualRank >= 0) {
      let lo = 0;
      let hi = s.p2;
      // Halving: the largest mask first, so that member v ends holding block v.
      for (const x of [...s.exchanges].reverse()) {
        const mid = (lo + hi) / 2;
        const keepLow = (s.virtualRank & x.mask) === 0;
        const [keep, give] = keepLow ? [[lo, mid], [mid, hi]] : [[mid, hi], [lo, mid]];
        b.step(
          [send(x.peer, blocks("recv", give[0]!, give[1]!)), recv(x.peer, blocks("scratch", keep[0]!, keep[1]!))],
          [reduce(blocks("recv", keep[0]!, keep[1]!), blocks("scratch", keep[0]!, keep[1]!), x.peerIsLower)],
        );
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
