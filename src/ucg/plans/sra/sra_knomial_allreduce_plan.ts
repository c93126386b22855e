/**
 * Allreduce by k-nomial scatter-reduce-allgather (UCC's sra_knomial with radix k; sra_allreduce
 * is its radix 2). The p2 active members (recursive doubling's fold takes the rest, rd.ts) are
 * numbered in mixed radix, digits of the configured radix (the last one smaller if p2 is not a
 * power of it). Scatter-reduce, most significant digit first: the members that differ only in
 * that digit split their current range of the vector into `radix` parts, each keeps the part of
 * its digit, sends every other part to the member whose it is and adds what those send it. After
 * every digit, member v holds block v of p2, fully reduced. Allgather, least significant digit
 * first, runs the same groups backwards, received in place. Each member moves about
 * 2 (p2-1)/p2 of the vector, as with radix 2, but in 2 log_k(p2) steps of k-1 peers each: fewer
 * steps, so fewer times the slowest member sets the pace, at the price of more messages per
 * step. Commutative ops only (a group's parts are combined in digit order, not rank order).
 */
import { UcxError } from "../../../core/errors.ts";
import { copy, recv, reduce, region, send, StepBuilder, type Phase } from "../../phase.ts";
import { blockOffset, type PlanArgs, type PlanConstant, type PlanTemplate, type Tunables } from "../base/plan_base.ts";
import { rdSchedule, realRankOf } from "../recursive_doubling/rd.ts";

/** The radix of each digit, least significant first: `radix` while it divides, then what is left. */
export function mixedRadixDigits(p2: number, radix: number): number[] {
  const radices: number[] = [];
  for (let left = p2; left > 1; left /= Math.min(radix, left)) radices.push(Math.min(radix, left));
  return radices;
}

export const sraKnomialAllreducePlan: PlanTemplate = {
  coll: "allreduce",
  id: 3,
  name: "sra/sra_knomial_allreduce",
  commutativeOnly: true,
  configTable: "sra",
  build({ rank, size, count }: PlanArgs, t: Tunables): PlanConstant {
    const radix = t.RADIX!;
    if (!Number.isInteger(radix) || radix < 2 || (radix & (radix - 1)) !== 0) {
      throw new UcxError("UCX_TS_INVALID_ARGUMENT", `UCX_TS_SRA_RADIX=${radix}: the k-nomial scatter-reduce-allgather needs a power of two (2, 4, 8, ...)`);
    }
    const s = rdSchedule(rank, size);
    const all = region("recv", 0, count);
    const b = new StepBuilder().local(copy(all, region("send", 0, count)));
    let scratchCount = 0;
    if (s.fold?.role === "send") b.step([send(s.fold.peer, all)]);
    else if (s.fold?.role === "recv") {
      b.step([recv(s.fold.peer, region("scratch", 0, count))], [reduce(all, region("scratch", 0, count), true)]);
      scratchCount = count;
    }
    if (s.virtualRank >= 0) {
      const v = s.virtualRank;
      const radices = mixedRadixDigits(s.p2, radix);
      const place = radices.map((_, j) => radices.slice(0, j).reduce((p, r) => p * r, 1));
      const digit = (j: number) => Math.floor(v / place[j]!) % radices[j]!;
      // The member whose digit j is e, the other digits being ours.
      const peer = (j: number, e: number) => realRankOf(v + (e - digit(j)) * place[j]!, s.extra);
      // Blocks [first, end) of the vector split into p2 blocks, as a region of the result.
      const from = (block: number) => blockOffset(count, s.p2, block);
      const blocks = (first: number, end: number) => region("recv", from(first), from(end) - from(first));
      let lo = 0;
      let hi = s.p2;
      for (let j = radices.length - 1; j >= 0; j--) {
        const r = radices[j]!;
        const d = digit(j);
        const width = (hi - lo) / r;
        const keep = blocks(lo + d * width, lo + (d + 1) * width);
        const transfers: Phase[] = [];
        const locals: Phase[] = [];
        let slot = 0;
        for (let e = 0; e < r; e++) {
          if (e === d) continue;
          // Each peer's contribution to our part lands in its own slot of scratch, then is added.
          const landing = region("scratch", slot++ * keep.count, keep.count);
          transfers.push(send(peer(j, e), blocks(lo + e * width, lo + (e + 1) * width)), recv(peer(j, e), landing));
          locals.push(reduce(keep, landing, e < d));
        }
        scratchCount = Math.max(scratchCount, slot * keep.count);
        b.step(transfers, locals);
        [lo, hi] = [lo + d * width, lo + (d + 1) * width];
      }
      for (let j = 0; j < radices.length; j++) {
        const r = radices[j]!;
        const d = digit(j);
        const width = hi - lo;
        const base = lo - d * width;
        const transfers: Phase[] = [];
        for (let e = 0; e < r; e++) {
          if (e === d) continue;
          transfers.push(send(peer(j, e), blocks(lo, hi)), recv(peer(j, e), blocks(base + e * width, base + (e + 1) * width)));
        }
        b.step(transfers);
        [lo, hi] = [base, base + r * width];
      }
    }
    if (s.fold?.role === "send") b.step([recv(s.fold.peer, all)]);
    else if (s.fold?.role === "recv") b.step([send(s.fold.peer, all)]);
    return { steps: b.steps, scratchCount };
  },
};
