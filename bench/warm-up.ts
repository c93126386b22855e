/**
 * The untimed warm-up before each windowed row of the p2p benches (p2p-peer.ts, and the FFI
 * floor's ffi-floor-peer.ts alike): rounds of the row itself for WARM_UP_MS, as ucx_perftest
 * warms up (`-w`, 10,000 iterations by default) before it times.
 *
 * Time, not a count of rounds: what has to settle is the runtime's JIT, and JavaScriptCore
 * settles late. Bun's 64 KiB per-message row (windows of 16, 1,000 timed) read 5.4-8.8 GB/s after
 * a warm-up as long as itself (~0.15 s) and 10.4-14.2 after 0.6-1 s or in longer runs; the windows
 * rose from 7-8.5 to 11.5-13 GB/s across the first ~2,000 (32,000 messages), and with Bun's DFG
 * tier off (BUN_JSC_useDFGJIT=0) the row stayed at 5.8 (2-core VM, 2026-12-07). Deno's row read
 * 8.2 over 1,000 windows and 13.8 over 10,000; Node's did not depend on the length.
 * UCX_TS_BENCH_WARM_MS overrides the time (0: one round).
 */
export const WARM_UP_MS = Number(process.env.UCX_TS_BENCH_WARM_MS ?? 1000);

/** Runs `round` for WARM_UP_MS (at least once); returns the number of rounds run. */
export async function warmUp(round: () => Promise<void>): Promise<number> {
  let r = 0;
  for (const t0 = performance.now(); r === 0 || performance.now() - t0 < WARM_UP_MS; r++) await round();
  return r;
}

/** warmUp for a synchronous round (the FFI floor's own progress loop). */
export function warmUpSync(round: () => void): number {
  let r = 0;
  for (const t0 = performance.now(); r === 0 || performance.now() - t0 < WARM_UP_MS; r++) round();
  return r;
}
