/**
 * Thread mode with takeover: how long the application thread keeps driving UCX after its last
 * completion before it hands the token back to the progress thread (threaded-engine.ts).
 *
 * Handing back is what makes a round trip expensive: the next completion then comes through
 * the progress thread (woken from `ucp_worker_wait`), reaches the application thread as an
 * `Atomics.waitAsync` task, and the token has to be asked for and lent again, each a wake-up.
 * With a fixed 1 ms window the mode had two stable states on a busy 2-core machine: while
 * replies came within 1 ms both sides kept the token and a round trip cost no wake-up; once a
 * reply was late (the peer waited a time slice for a core), both sides handed back and every
 * round trip paid those wake-ups, ~3 ms, so replies stayed late. `npm start`'s demo at load
 * 7-17 (2026-11-26, `--sizes 8,1024 --error-handling none`): 8 B round trip 2.4-3.8 ms in 11
 * of 12 phases with 1 ms, 27-110 us in most with a fixed 20 ms, polling mode 13-60 us,
 * node:net 65-220 us. The other way into that regime stays: the progress thread takes the token
 * back when the application thread stops taking rounds for 2 ms, which a thread waiting for a
 * core does too (23-42 take-backs in 200 round trips at load 8-15).
 *
 * So the window follows the gaps between completions, as hybrid mode's spin does
 * (hybrid-spin-policy.ts): a gap longer than the window but within `maxMs` (a reply that came
 * late, seen first after a hand-back) widens it to cover such gaps with a margin; a gap beyond
 * `maxMs` is idleness and returns it to `baseMs`. Shorter gaps leave it as it is: in a
 * ping-pong the send's completion follows the reply's at once, and shrinking on it would undo
 * what the reply taught. An idle worker spins at most `maxMs` after its traffic stops.
 */

/** A widened window covers the gap that widened it times this. */
const MARGIN = 1.5;

export class TakeoverPollPolicy {
  private window: number;

  constructor(
    private readonly baseMs: number,
    private readonly maxMs: number,
  ) {
    this.window = baseMs;
  }

  /** How long to keep driving UCX after the last completion (ms). */
  get windowMs(): number {
    return this.window;
  }

  /** A completion came `gapMs` after the previous one. */
  completionAfter(gapMs: number): void {
    if (gapMs > this.maxMs) this.window = this.baseMs;
    else if (gapMs * MARGIN > this.window) this.window = Math.min(this.maxMs, gapMs * MARGIN);
  }
}
