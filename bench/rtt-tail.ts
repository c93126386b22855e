/**
 * What the latency peers (p2p-peer.ts, ffi-floor-peer.ts) report about one size's round trips:
 * the median and the tail (issue 21's target: p99 at most 5x the median), and two figures that
 * tell one kind of tail from another. Rounds above 5x the median scattered one by one are
 * interruptions (a GC scavenge, the process losing its core to other load); a long run of them
 * is a regime: both peers of a mode that parks (hybrid after its spin, thread mode's notifier)
 * parked, and every round trip pays two wake-ups until one side catches a reply spinning again
 * (seen 2026-11-26: Node hybrid, load 4, the first 1,083 of 10,000 round trips).
 */
export type RttResult = { kind: string; size: number; value: number; iterations: number };

/** `rtts` in the order they were measured (us). */
export function rttResults(size: number, iterations: number, rtts: readonly number[]): RttResult[] {
  const sorted = [...rtts].sort((a, b) => a - b);
  const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;
  const slow = 5 * at(0.5);
  let slowCount = 0;
  let run = 0;
  let longestRun = 0;
  for (const r of rtts) {
    run = r > slow ? run + 1 : 0;
    if (r > slow) slowCount++;
    longestRun = Math.max(longestRun, run);
  }
  return [
    { kind: "rtt_us_median", size, value: at(0.5), iterations },
    { kind: "rtt_us_p90", size, value: at(0.9), iterations },
    { kind: "rtt_us_p99", size, value: at(0.99), iterations },
    { kind: "rtt_us_p999", size, value: at(0.999), iterations },
    // The share of round trips above 5x the median (over 1 % misses the target), and the longest
    // stretch of such round trips in a row.
    { kind: "tail_slow_pct", size, value: (100 * slowCount) / rtts.length, iterations },
    { kind: "tail_slow_run", size, value: longestRun, iterations },
  ];
}
