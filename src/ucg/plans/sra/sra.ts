/**
 * The k-nomial scatter-reduce-allgather's tunable: config table "sra", prefix UCX_TS_SRA_.
 * The radix must be a power of two: the plan runs over the largest power of two of members
 * (recursive doubling's fold takes the rest), and splits it into radix-sized groups per step.
 */
export const SRA_CONFIG = {
  name: "sra",
  prefix: "UCX_TS_SRA_",
  fields: {
    RADIX: { default: 4, min: 2, max: 64, doc: "radix of the k-nomial scatter-reduce-allgather allreduce (allreduce plan 3), a power of two: each step exchanges with radix - 1 peers" },
  },
} as const;
