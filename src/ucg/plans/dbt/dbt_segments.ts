/**
 * How the double-binary-tree plans cut a vector: the first half (rounded up) goes down or up
 * tree 0, the rest tree 1, and each half travels in segments of at most `segmentBytes` (the
 * dbt table's SEGMENT_BYTES) so that the segments pipeline through the tree's levels. Bcast and
 * reduce must cut alike (a reduce is a bcast reversed), so both take the cut from here.
 */
import { blockCount, blockOffset } from "../base/plan_base.ts";

export interface DbtSegments {
  /** How many segments each half has (at least 1, also for an empty half). */
  readonly segments: readonly [number, number];
  /** The most elements any segment holds (the landing slot a receiver needs). */
  readonly largest: number;
  /** Segment `j` of half `which`: its offset in the whole vector and its length, in elements. */
  segment(which: 0 | 1, j: number): { readonly offset: number; readonly count: number };
}

export function dbtSegments(count: number, elementSize: number, segmentBytes: number): DbtSegments {
  const first = Math.ceil(count / 2);
  const halves = [
    { offset: 0, count: first },
    { offset: first, count: count - first },
  ] as const;
  const segmentElements = Math.max(1, Math.floor(segmentBytes / elementSize));
  const segments = [0, 1].map((i) => Math.max(1, Math.ceil(halves[i]!.count / segmentElements))) as [number, number];
  return {
    segments,
    largest: Math.max(blockCount(halves[0].count, segments[0], 0), blockCount(halves[1].count, segments[1], 0)),
    segment: (which, j) => {
      const h = halves[which];
      return { offset: h.offset + blockOffset(h.count, segments[which], j), count: blockCount(h.count, segments[which], j) };
    },
  };
}
