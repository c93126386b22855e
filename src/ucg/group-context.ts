/**
 * What a group needs from the collectives context that made it (context.ts implements it):
 * defined here, below both, so that group.ts does not import context.ts, which imports group.ts.
 * `G` is the group type the context hands out for subgroups.
 */
import type { Channel } from "./channel.ts";
import type { PlanPool } from "./ppool.ts";
import type { Rte } from "./rte.ts";
import type { Topology } from "./topology.ts";

export interface GroupContext<G> {
  readonly rte: Rte;
  readonly channel: Channel;
  readonly topology: Topology;
  readonly ppool: PlanPool;
  /** The next group id this process would give a subgroup (agreed by an allreduce(max)). */
  nextGroupId: number;
  readonly closed: boolean;
  /** Registers group `id` of `members` (world ranks) and returns it. */
  addGroup(id: number, members: readonly number[]): G;
  /** Forgets a freed group: member failures no longer reach it, and nothing holds it any more. */
  removeGroup(group: G): void;
}
