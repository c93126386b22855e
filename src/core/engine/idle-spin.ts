/**
 * The idle spin of the loops that progress UCX on the application thread (polling's settled()
 * drivers, hybrid mode's drivers): while such a loop waits for its peer, it calls UCX in a plain
 * loop for a short while instead of awaiting after every empty round.
 *
 * Why: each `await` of a driver loop allocates (a Promise and its reaction job: ~240 B under
 * Node 20, measured 2026-12-07), and a loop that awaited after every empty round made garbage at
 * the pace it polled. Polling's driver, so, churned ~60 MB/s waiting for a reply: 15-167
 * scavenges in one idle second (Node, 2026-11-26; 1 with the spin). Hybrid's driver (the default
 * mode) still awaited after every empty round of its spin budget until 2026-12-07: a requester
 * whose peer (another process) answered after a 1 ms timer made 0.86-1.3 MB of garbage per
 * request on Node, after a 5 ms timer 3.6-6.2 MB (four to six scavenges a request); with this
 * spin 3-12 KiB and 52 KiB, requests no slower (Deno: 0.39-0.61 / 1.1-1.7 MB -> 3-63 / 56 KiB;
 * bench/idle-garbage.mjs, docs/benchmarks.md). Each scavenge stops its thread, for 1-12 ms on
 * this 2-core VM while the peer's spinning thread holds the other core.
 *
 * Every such loop of this thread registers while it may be progressed; a spin progresses all of
 * them: a spin that progressed only its own worker held the thread while another worker of the
 * process had the message it waited for (two polling workers in one process: allocation per
 * message of a window 0.7 -> 2.4 KB, the windows that much slower). Other microtasks wait at most
 * IDLE_SPIN_MS.
 */

/**
 * Empty rounds that each await before a loop's idle spin starts: a completion's reactions may
 * post the next operation a few microtasks later (a chain of Promises inside a batch), and a spin
 * right after the first empty round would make every such step wait IDLE_SPIN_MS. With 8, the
 * one-process windows of bench/message-cost.ts (send/recv, sendMany) start no idle spin at all
 * (counted, 2026-11-26): the spin only runs while a worker really waits for its peer.
 */
export const AWAITED_EMPTY_ROUNDS = 8;

/** How long one idle spin calls UCX before its loop awaits (ms). */
export const IDLE_SPIN_MS = 0.05;

/** The progress functions of this thread's loops that may be progressed now. */
const spinners: (() => number)[] = [];

/** `progress` (a loop's worker) is progressed by every idle spin of this thread until stopSpinning. */
export function startSpinning(progress: () => number): void {
  spinners.push(progress);
}

export function stopSpinning(progress: () => number): void {
  const i = spinners.indexOf(progress);
  if (i < 0) return;
  // Swapped out, not spliced: splice made an array per call.
  spinners[i] = spinners[spinners.length - 1]!;
  spinners.pop();
}

/**
 * Rounds between two clock reads in spinIdle, adapted as it goes so that a read comes every few
 * microseconds whatever a round costs (a round is one progress call per registered loop: ~0.06 us
 * for an idle worker here, microseconds with many requests to check). A clock read allocates
 * under Node 20 (~30 B: performance.now() returns a fresh number); read at every 16th round, as
 * this spin first did, the reads were half of what a waiting hybrid requester still made (a
 * reply after ~5.3 ms: 113 -> 51 KB per request; after ~1.1 ms: 29 -> 12 KB).
 */
let stride = 16;
/**
 * The most rounds between two reads. A stride learnt on idle rounds is used once more before it
 * shrinks, even if the rounds have turned slow meanwhile (a worker with many requests to check):
 * 256 such rounds of a few microseconds each is the longest a spin overruns its time.
 */
const MAX_STRIDE = 256;
/** spinIdle keeps the time between two clock reads inside these bounds (ms). */
const CHECK_MIN_MS = 0.004;
const CHECK_MAX_MS = 0.016;

/**
 * Progress every registered loop's worker without leaving this call until one does something
 * (a completion delivered, whose reactions then run at the loops' next `await`; returns true)
 * or `ms` pass (returns false; past them by at most one stride of rounds, CHECK_MAX_MS or so).
 */
export function spinIdle(ms: number = IDLE_SPIN_MS): boolean {
  let last = performance.now();
  const until = last + ms;
  for (let round = 1; ; round++) {
    for (let i = 0; i < spinners.length; i++) if (spinners[i]!() > 0) return true;
    if (round < stride) continue;
    round = 0;
    const now = performance.now();
    if (now > until) return false;
    if (now - last < CHECK_MIN_MS) stride = Math.min(stride * 2, MAX_STRIDE);
    else if (now - last > CHECK_MAX_MS) stride = Math.max(stride >> 1, 1);
    last = now;
  }
}
