/**
 * The collective types, with the numbers the channel puts in a message header's coll_type field
 * (channel.ts). The numbers are part of the wire format: never renumber, only append.
 */
export const COLL_TYPES = {
  barrier: 1,
  bcast: 2,
  reduce: 3,
  allreduce: 4,
  allgather: 5,
  gather: 6,
  scatter: 7,
  alltoall: 8,
  reduce_scatter: 9,
} as const;

export type CollType = keyof typeof COLL_TYPES;
export const COLLECTIVES = Object.keys(COLL_TYPES) as CollType[];

/** Control traffic of the context itself (bootstrap warm-up, group creation), not a collective. */
export const CONTROL_COLL_TYPE = 0xff;
