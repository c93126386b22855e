/**
 * The k-nomial tree (radix k >= 2) over virtual ranks v = (rank - root) mod n: the peers only
 * (seed: phase peer apart from phase data). A member v's subtree is the contiguous range
 * [v, v + span); its children are v + j * d for every power d of k below its own level and
 * j = 1..k-1 (where that is < n), each spanning [child, child + d) clipped to n.
 */
import { mod } from "../base/plan_base.ts";

export interface KnomialNode {
  readonly virtualRank: number;
  /** Parent's real rank, undefined at the root. */
  readonly parent: number | undefined;
  /** Children, in increasing virtual rank (= rank order of their subtrees). */
  readonly children: readonly { readonly rank: number; readonly virtualRank: number; readonly span: number }[];
  /** Members in this node's subtree (itself included). */
  readonly span: number;
}

export function knomialNode(rank: number, size: number, root: number, radix: number): KnomialNode {
  const k = Math.max(2, Math.floor(radix));
  const v = mod(rank - root, size);
  let level = 1;
  while (level < size && v % (level * k) === 0) level *= k;
  // The root's level is the first power of k >= size; any other member's the first d with v % (d k) != 0.
  const isRoot = v === 0;
  const parentV = isRoot ? undefined : v - (v % (level * k));
  const children: { rank: number; virtualRank: number; span: number }[] = [];
  for (let d = 1; d < level && d < size; d *= k) {
    for (let j = 1; j < k; j++) {
      const c = v + j * d;
      if (c >= size) break;
      children.push({ rank: mod(c + root, size), virtualRank: c, span: Math.min(d, size - c) });
    }
  }
  children.sort((a, b) => a.virtualRank - b.virtualRank);
  const span = isRoot ? size : Math.min(level, size - v);
  return { virtualRank: v, parent: parentV === undefined ? undefined : mod(parentV + root, size), children, span };
}

/** The k-nomial plans' tunables: config table "knomial", prefix UCX_TS_KN_. */
export const KNOMIAL_CONFIG = {
  name: "knomial",
  prefix: "UCX_TS_KN_",
  fields: {
    RADIX: { default: 4, min: 2, max: 64, doc: "radix (fan-out) of the k-nomial trees" },
  },
} as const;
