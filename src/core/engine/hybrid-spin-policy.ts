/**
 * How long hybrid mode's driver keeps progressing UCX after its last event before it parks
 * (hybrid-engine.ts). Parking costs two wake-ups when the next event comes (the fd watcher
 * thread, then the application thread's Atomics.waitAsync task), which on a busy 2-core machine
 * is hundreds of microseconds: a ping-pong whose reply came 150 us after the request paid that
 * on every round trip with a 100 us spin. So the budget follows the gaps it sees: when an event
 * ended a park soon after the last one (the gap, spin plus park, under the bound), the next
 * spins cover that gap with some margin; a longer gap (idleness) returns it to the base budget.
 * The bound keeps an idle worker from holding a core: at most `maxMs` of spinning after traffic
 * stops, as takeover's application thread does in thread mode.
 */

/** The learnt spin covers the last gap times this. */
const MARGIN = 1.5;

export class HybridSpinPolicy {
  private budget: number;

  /**
   * @param baseMs the spin after an event when gaps are long (spinMicroseconds).
   * @param maxMs the longest spin learnt; at or below baseMs nothing is learnt.
   */
  constructor(
    private readonly baseMs: number,
    private readonly maxMs: number,
    /**
     * The bound while the host is oversubscribed (host-load.ts): a long spin then takes the core
     * the peer needs. Defaults to maxMs.
     */
    private readonly busyMaxMs: number = maxMs,
    private readonly hostBusy: () => boolean = () => false,
  ) {
    this.budget = baseMs;
  }

  /** The spin budget after the last event (ms). */
  get spinMs(): number {
    return this.budget;
  }

  /** A park ended with an event (not a submission of ours) `gapMs` after the last event. */
  eventAfter(gapMs: number): void {
    if (this.maxMs <= this.baseMs) return;
    const max = this.hostBusy() ? Math.min(this.maxMs, this.busyMaxMs) : this.maxMs;
    this.budget = gapMs <= max ? Math.min(max, Math.max(this.baseMs, gapMs * MARGIN)) : this.baseMs;
  }
}
