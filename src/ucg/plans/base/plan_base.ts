/**
 * The plan abstraction (seed: "plan"): a plan *template* describes one collective implemented
 * with one algorithm: its metadata (collective, stable id, name, what it needs) and the function
 * that builds the constant part of a plan. The *constant part* (peers, offsets, counts of every
 * phase: everything decided by rank, member count, count, root and the tunables) is computed once
 * and shared by every request with the same arguments (ppool.ts caches it); the *instance*
 * (instance.ts) is the mutable part: the caller's buffers, scratch memory, the op.
 */
import type { CollType } from "../../coll-type.ts";
import type { Step } from "../../phase.ts";

/** What a plan's constant part depends on. Counts are in elements. */
export interface PlanArgs {
  readonly rank: number;
  readonly size: number;
  /**
   * Elements per member's block: the whole vector for barrier/bcast/reduce/allreduce, one
   * member's block for allgather/gather/scatter/alltoall/reduce_scatter.
   */
  readonly count: number;
  readonly root: number;
  readonly commutative: boolean;
  /** Bytes of one element (the seed's smallest unit of splitting). */
  readonly elementSize: number;
}

/** Tunables a template reads, resolved from its config table (config.ts). */
export type Tunables = Readonly<Record<string, number>>;

export interface PlanConstant {
  readonly steps: readonly Step[];
  /** Elements of scratch memory the instance must provide. */
  readonly scratchCount: number;
}

export interface PlanTemplate {
  readonly coll: CollType;
  /** Stable per collective (UCX_TS_<COLL>_PLAN selects by it). */
  readonly id: number;
  /** Algorithm folder and plan name, e.g. "recursive_doubling/rd_allreduce". */
  readonly name: string;
  /** Runs only commutative ops (the planner never picks it for a non-commutative one). */
  readonly commutativeOnly: boolean;
  /** The config table whose tunables it reads (config.ts), if any. */
  readonly configTable?: string;
  build(args: PlanArgs, tunables: Tunables): PlanConstant;
}

/** Elements of block `i` of `count` split into `parts` nearly equal blocks, and its offset. */
export function blockCount(count: number, parts: number, i: number): number {
  return Math.floor(count / parts) + (i < count % parts ? 1 : 0);
}
export function blockOffset(count: number, parts: number, i: number): number {
  return Math.floor(count / parts) * i + Math.min(i, count % parts);
}
export const mod = (a: number, n: number): number => ((a % n) + n) % n;
