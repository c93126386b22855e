/**
 * Recursive doubling: the peers (the seed separates "phase peer", made by the algorithm, from
 * "phase data", made by each collective's plan). For a member count n that is not a power of
 * two, with p2 the largest power of two below n and r = n - p2, the fix-up folds the first 2r
 * members pairwise (even rank into the odd one above it) so that p2 members remain, then unfolds
 * at the end. Folding neighbours (rather than rank p2 + i into rank i) keeps every virtual rank a
 * contiguous, increasing range of real ranks, so reductions stay in rank order and a
 * non-commutative op gives x0 (op) x1 (op) ... (op) x(n-1).
 */
export interface RdSchedule {
  /** Fix-up before the exchanges: this even rank sends to `peer` and waits; this odd one receives from it. */
  readonly fold: { readonly role: "send" | "recv"; readonly peer: number } | undefined;
  /** The exchanges, each with a peer and whether the peer's ranks are below ours. */
  readonly exchanges: readonly { readonly peer: number; readonly peerIsLower: boolean; readonly mask: number }[];
  /** Virtual rank among the p2 active members, or -1 for a folded-away rank. */
  readonly virtualRank: number;
  readonly p2: number;
  readonly extra: number;
}

export function largestPowerOfTwoAtMost(n: number): number {
  let p = 1;
  while (p * 2 <= n) p *= 2;
  return p;
}

/** The real rank that stands for virtual rank v. */
export function realRankOf(v: number, extra: number): number {
  return v < extra ? 2 * v + 1 : v + extra;
}
/** First real rank covered by virtual rank v. */
export function firstRealRank(v: number, extra: number): number {
  return v < extra ? 2 * v : v + extra;
}

export function rdSchedule(rank: number, n: number): RdSchedule {
  const p2 = largestPowerOfTwoAtMost(n);
  const extra = n - p2;
  let fold: RdSchedule["fold"];
  let virtualRank: number;
  if (rank < 2 * extra) {
    if (rank % 2 === 0) {
      fold = { role: "send", peer: rank + 1 };
      virtualRank = -1;
    } else {
      fold = { role: "recv", peer: rank - 1 };
      virtualRank = (rank - 1) / 2;
    }
  } else {
    virtualRank = rank - extra;
  }
  const exchanges: { peer: number; peerIsLower: boolean; mask: number }[] = [];
  if (virtualRank >= 0) {
    for (let mask = 1; mask < p2; mask <<= 1) {
      const v = virtualRank ^ mask;
      exchanges.push({ peer: realRankOf(v, extra), peerIsLower: v < virtualRank, mask });
    }
  }
  return { fold, exchanges, virtualRank, p2, extra };
}
