/**
 * How long thread mode's progress thread keeps polling UCX after its last work before it sleeps
 * in `ucp_worker_wait`, learnt from the gaps between its bursts of work.
 *
 * A sleep costs a wake-up when the next work comes (the application thread's
 * ucp_worker_signal or the peer's message, then the scheduler): 0.03 to several ms on this
 * 2-vCPU VM (traced 2026-11-23). With the fixed 5 us spin, an 8 B ping-pong between two
 * processes found the thread asleep at every message: median 320-365 us a round trip; with
 * this policy 150-176 us, p90 no worse (364-460 against 427-520 us), same hour, alternating.
 * Spinning without end is not an option (a server waiting on a receive for an hour would burn a
 * core), so:
 *
 * - the learnt budget applies only while the application awaits something (the engine's
 *   APP_ACTIVE flag, or it did at the last work); with nothing outstanding the thread sleeps
 *   after the minimum, as before;
 * - each sleep that ended in work after a gap the maximum could have covered sets the budget to
 *   a little more than that gap (a spin that long would have caught it); a longer gap (sparse
 *   traffic) drops it back to the minimum;
 * - spinning past the minimum needs one of the process's spin slots (`SpinSlots`: cores - 1 of
 *   them, one core being the application thread's): two workers of one process both spinning
 *   on 2 cores starved the application thread;
 * - a spin round that took over PREEMPTED_MS means the thread lost its core while spinning
 *   (the cores are oversubscribed, maybe by other processes): the budget drops to the minimum
 *   and does not grow for the next COOLDOWN_SLEEPS sleeps.
 *
 * On by default from 4 cores (WorkerOptions.adaptiveThreadSpin): on 2 cores it made two
 * processes' ping-pong faster but windowed 8 B-64 KiB bandwidth 20-50 % lower, the spinning
 * threads of both processes taking the cores the application threads needed. Off, the thread
 * spins its fixed minimum (threadSpinMicroseconds) as before: no learning, no slot.
 */

/** A spin round this long means the thread lost its core meanwhile. */
export const PREEMPTED_MS = 1;
/** Sleeps after a preemption during which the budget does not grow. */
export const COOLDOWN_SLEEPS = 16;
/** Headroom over the gap a sleep measured. */
const HEADROOM = 1.25;

/**
 * The long spins of one process's progress threads, counted in shared memory (word 0: threads
 * spinning past their minimum; word 1: the most allowed).
 */
export class SpinSlots {
  readonly words: Int32Array;

  constructor(buffer: SharedArrayBuffer) {
    this.words = new Int32Array(buffer);
  }

  static create(max: number): SpinSlots {
    const s = new SpinSlots(new SharedArrayBuffer(8));
    s.words[1] = max;
    return s;
  }

  tryAcquire(): boolean {
    const w = this.words;
    for (let n = Atomics.load(w, 0); n < w[1]!; n = Atomics.load(w, 0)) {
      if (Atomics.compareExchange(w, 0, n, n + 1) === n) return true;
    }
    return false;
  }

  release(): void {
    Atomics.sub(this.words, 0, 1);
  }

  get inUse(): number {
    return Atomics.load(this.words, 0);
  }
}

export class ThreadSpinPolicy {
  private budget: number;
  private cooldown = 0;
  private lastWork: number;
  /** The last work or the end of the last sleep: the minimum spin counts from the later. */
  private lastStart: number;
  private lastRound: number;
  private activeAtWork = false;
  /** Set by a sleep: the next work tells how long the gap was. */
  private slept = false;
  private holding = false;

  /**
   * @param minMs the spin with nothing outstanding, and the floor of the learnt budget.
   * @param maxMs the most a learnt budget may be.
   * @param adaptive learn the budget (the default), or always use minMs (a budget the user chose).
   * @param slots the process's spin slots.
   */
  constructor(
    readonly minMs: number,
    readonly maxMs: number,
    private readonly adaptive: boolean,
    private readonly slots: SpinSlots,
    now: number,
  ) {
    this.budget = minMs;
    this.lastWork = this.lastStart = this.lastRound = now;
  }

  /** The thread did work at `now`; `active`: the application awaits something. */
  worked(now: number, active: boolean): void {
    if (this.slept && this.adaptive) this.learn(now - this.lastWork);
    this.slept = false;
    this.releaseSlot();
    this.lastWork = this.lastStart = this.lastRound = now;
    // Remembered: between a receive's completion and its next request the application briefly
    // awaits nothing, and the spin must carry over that moment.
    this.activeAtWork = active;
  }

  /** A round without work at `now`: true to keep spinning, false to sleep. */
  idle(now: number, active: boolean): boolean {
    if (this.adaptive && now - this.lastRound >= PREEMPTED_MS) {
      this.budget = this.minMs;
      this.cooldown = COOLDOWN_SLEEPS;
    }
    this.lastRound = now;
    // After a sleep too: the event that woke the thread may take a few rounds of progress to
    // turn into work (without this, Deno's two-process ping-pong took 750-1,135 us a round trip
    // instead of 470-580: the thread went back to sleep on the first empty round).
    if (now - this.lastStart < this.minMs) return true;
    const idleMs = now - this.lastWork;
    if (this.adaptive && (active || this.activeAtWork) && idleMs < this.budget && (this.holding || (this.holding = this.slots.tryAcquire()))) return true;
    this.releaseSlot();
    return false;
  }

  /** The thread slept (in ucp_worker_wait) and is awake again at `now`. */
  woke(now: number): void {
    this.slept = true;
    this.lastStart = this.lastRound = now;
  }

  /** The thread is leaving: give its slot back. */
  releaseSlot(): void {
    if (!this.holding) return;
    this.slots.release();
    this.holding = false;
  }

  /** The budget while active (for tests and diagnostics). */
  get budgetMs(): number {
    return this.budget;
  }

  private learn(gapMs: number): void {
    if (this.cooldown > 0) {
      this.cooldown--;
      return;
    }
    this.budget = gapMs <= this.maxMs ? Math.min(this.maxMs, Math.max(this.minMs, gapMs * HEADROOM)) : this.minMs;
  }
}
