/**
 * What `ucx-ts perf` measures: the tests (named as ucx_perftest names them), their sizes and
 * iteration counts, and the shape of a result row.
 */
export const TESTS = ["tag_lat", "tag_bw", "stream_bw", "am_bw", "put_bw"] as const;
export type TestName = (typeof TESTS)[number];

/** ucx_perftest's name for each test (-t). */
export const PERFTEST_NAME: Record<TestName, string> = {
  tag_lat: "tag_lat",
  tag_bw: "tag_bw",
  stream_bw: "stream_bw",
  am_bw: "ucp_am_bw",
  put_bw: "ucp_put_bw",
};

export const isLatency = (t: TestName) => t.endsWith("_lat");

export const DEFAULT_SIZES = [8, 256, 4096, 65536, 1 << 20];
/** Messages in flight per round of a bandwidth test. */
export const WINDOW = 16;
/** Largest message a test may use (the peers' buffers). */
export const MAX_SIZE = 4 << 20;

export interface PerfPlan {
  readonly tests: readonly TestName[];
  readonly sizes: readonly number[];
  /** Round trips per latency measurement; bandwidth rounds are a tenth (at least 5). */
  readonly iterations: number;
}

export interface PerfRow {
  /** "ucx-ts/node", "ucx_perftest", "node:net". */
  readonly system: string;
  readonly test: TestName;
  readonly size: number;
  /** One-way latency in microseconds (half the median round trip), for *_lat tests. */
  readonly latencyUs?: number;
  /** 10^6 bytes per second, for *_bw tests. */
  readonly MBps?: number;
}

export function bandwidthRounds(plan: PerfPlan): number {
  return Math.max(5, Math.round(plan.iterations / 10));
}
