/**
 * Double binary tree (Sanders, Speck, Träff; NCCL's trees): the members other than the root are
 * arranged in two in-order binary trees, the second over indices shifted by one, so that a
 * member that is a leaf in one tree is mostly interior in the other; each tree carries half of
 * the data, in segments, so every member sends and receives about as much as the data's size and
 * the segments pipeline down both trees at once. This file gives the peers and depths only.
 */
import { mod } from "../base/plan_base.ts";

export interface DbtTree {
  /** Parent's real rank (the collective's root for the tree's own root). */
  readonly parent: number;
  /** Children's real ranks. */
  readonly children: readonly number[];
  /** Depth below the collective's root (the tree's root is 1). */
  readonly depth: number;
  /** The deepest depth in the tree. */
  readonly height: number;
  /** The tree's root (real rank): where the collective's root sends or receives. */
  readonly top: number;
}

/** In-order binary tree over positions [0, n): parents[p], children[p], depth[p]. */
function inOrder(n: number): { parent: number[]; children: number[][]; depth: number[]; top: number } {
  const parent = new Array<number>(n).fill(-1);
  const children = Array.from({ length: n }, () => [] as number[]);
  const depth = new Array<number>(n).fill(0);
  let top = -1;
  const build = (lo: number, hi: number, up: number, d: number) => {
    if (lo >= hi) return;
    const mid = (lo + hi) >> 1;
    parent[mid] = up;
    depth[mid] = d;
    if (up >= 0) children[up]!.push(mid);
    else top = mid;
    build(lo, mid, mid, d + 1);
    build(mid + 1, hi, mid, d + 1);
  };
  build(0, n, -1, 1);
  return { parent, children, depth, top };
}

/** Member `rank`'s place in tree `which` (0 or 1) for `size` members and `root`; undefined for the root itself. */
export function dbtTree(rank: number, size: number, root: number, which: 0 | 1): DbtTree | undefined {
  const n = size - 1;
  if (rank === root || n < 1) return undefined;
  // Non-root members m = 0..n-1 are ranks root + 1 + m; tree 1 uses position (m + 1) mod n.
  const position = (m: number) => (which === 0 ? m : mod(m + 1, n));
  const memberAt = (p: number) => (which === 0 ? p : mod(p - 1, n));
  const real = (m: number) => mod(root + 1 + m, size);
  const t = inOrder(n);
  const me = position(mod(rank - root - 1, size));
  return {
    parent: t.parent[me]! < 0 ? root : real(memberAt(t.parent[me]!)),
    children: t.children[me]!.map((p) => real(memberAt(p))),
    depth: t.depth[me]!,
    height: Math.max(...t.depth),
    top: real(memberAt(t.top)),
  };
}

/** The DBT plans' tunables: config table "dbt", prefix UCX_TS_DBT_. */
export const DBT_CONFIG = {
  name: "dbt",
  prefix: "UCX_TS_DBT_",
  fields: {
    SEGMENT_BYTES: { default: 64 * 1024, min: 1, doc: "segment size the double binary trees pipeline" },
  },
} as const;
