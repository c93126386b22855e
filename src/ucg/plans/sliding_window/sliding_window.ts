/**
 * The sliding-window allreduce's shape (UCC tl/ucp's "sliding_window" allreduce, done with tag
 * messages: see sw_allreduce_plan.ts for why not get/put). The vector is split into one block
 * per member; each member *owns* its block: it combines every member's copy of that block and
 * hands the sum back to everyone. The owned block is cut into chunks of at most CHUNK_BYTES (the
 * pipeline buffers); a chunk's contributions arrive `window` members at a time into `window`
 * scratch slots, so the scratch memory is window x chunk whatever the vector's size, and a chunk's
 * result travels back to everyone while the next chunk is being combined. This file gives the
 * tunables, who contributes to whom in what order, and the chunking; the plan file the phases.
 */
import { blockCount, blockOffset, mod } from "../base/plan_base.ts";

/** Config table "sliding_window", prefix UCX_TS_SW_ (allreduce plan 4). */
export const SW_CONFIG = {
  name: "sliding_window",
  prefix: "UCX_TS_SW_",
  fields: {
    WINDOW: { default: 0, min: 0, max: 4096, doc: "members whose contributions to a chunk are in flight at once in the sliding-window allreduce (allreduce plan 4), and as many results sent back per step; 0: all the others (UCC's default)" },
    // 1 MiB, not UCC's 64 KiB buffers: each round is a step, and a step costs every process a
    // wake-up on this 2-core VM. Against SRA in the same run (bench/ucg.ts --allreduce-plans,
    // 2026-11-26 03:14, load 10-14), 64 KiB chunks took 2.7-3.3x SRA's time where 1 MiB chunks
    // took 0.7-1.6x, in 3 of 4 points (2 and 4 ranks, 1 and 4 MiB; the 4th: 1.3x against 1.8x).
    CHUNK_BYTES: { default: 1024 * 1024, min: 1, doc: "pipeline chunk of the sliding-window allreduce (allreduce plan 4): the most bytes of an owned block combined per round; scratch is window x chunk" },
  },
} as const;

/**
 * The members whose data `owner` combines, in the order it combines them. Commutative ops start
 * from the owner's own data and go round from there (as UCC does: at any moment the members read
 * from different peers instead of all from member 0); a non-commutative op needs rank order.
 */
export function contributionOrder(owner: number, size: number, commutative: boolean): number[] {
  return Array.from({ length: size }, (_, i) => (commutative ? mod(owner + i, size) : i));
}

/** Where `member` stands among the *other* members in `owner`'s order (0-based). */
export function remotePosition(owner: number, member: number, size: number, commutative: boolean): number {
  const others = contributionOrder(owner, size, commutative).filter((m) => m !== owner);
  return others.indexOf(member);
}

export interface SwChunks {
  /** Elements per chunk (at most; the last chunk of a block may be shorter). */
  readonly chunk: number;
  /** Rounds: chunks in the largest block (block 0). */
  readonly rounds: number;
  /** Chunk `k` of block `owner` in the whole vector, or undefined where that block has fewer chunks. */
  at(owner: number, k: number): { readonly offset: number; readonly count: number } | undefined;
}

export function swChunks(count: number, size: number, elementSize: number, chunkBytes: number): SwChunks {
  const largest = blockCount(count, size, 0);
  const chunk = Math.max(1, Math.min(largest, Math.floor(chunkBytes / elementSize)));
  return {
    chunk,
    rounds: largest === 0 ? 0 : Math.ceil(largest / chunk),
    at(owner, k) {
      const n = blockCount(count, size, owner);
      if (k * chunk >= n) return undefined;
      return { offset: blockOffset(count, size, owner) + k * chunk, count: Math.min(chunk, n - k * chunk) };
    },
  };
}
