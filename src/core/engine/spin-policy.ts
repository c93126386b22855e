/**
 * Whether thread mode's notifier should spin before it parks, learnt from how its recent spins
 * ended. A spin pays when the completion is microseconds away (a worker talking to itself or to
 * another worker of the process: a send+receive to self took 11 us with a 20 us spin against
 * 104 us without, 2026-11-23, 2 cores) and costs when it is not: between two processes on two
 * cores the spinning thread takes the core the peer needs (a ping-pong ~10 % slower). So the
 * default budget is used while spins keep catching completions, dropped after they keep missing,
 * and tried again now and then in case the traffic changed.
 */

/**
 * Score bounds: a catch adds 1, a miss takes 1 (so spinning goes on while at least half the spins
 * catch: with a miss costing 2, a noisy hour's one-in-three slow completions turned a worker's spin
 * off, and a send+receive to self took 68 us instead of 14); at 0 the notifier parks at once.
 */
const MAX_SCORE = 8;
/**
 * While not spinning, every PROBE_EVERY-th wait starts a trial of PROBE_SCORE spins. One spin is
 * not a fair trial: after parking, the next completion is late anyway (the progress thread fell
 * asleep meanwhile and must be woken), so a lone probe missed even where spinning pays, and a
 * worker whose spin had switched off stayed off (seen: 73 us a send+receive to self, 8-10 with
 * the spin on).
 */
const PROBE_EVERY = 32;
const PROBE_SCORE = 3;

export class SpinPolicy {
  private score = MAX_SCORE / 2;
  private waitsWithoutSpin = 0;

  /**
   * @param budgetMs the spin budget (milliseconds); 0: never spin.
   * @param adaptive learn whether to use it (the default budget), or always use it (a budget the
   *   user chose).
   */
  constructor(
    readonly budgetMs: number,
    private readonly adaptive: boolean,
  ) {}

  /** The spin budget for the wait about to start (0: park at once). */
  next(): number {
    if (this.budgetMs <= 0) return 0;
    if (!this.adaptive || this.score > 0) return this.budgetMs;
    if (++this.waitsWithoutSpin < PROBE_EVERY) return 0;
    this.waitsWithoutSpin = 0;
    this.score = PROBE_SCORE; // a trial of a few spins
    return this.budgetMs;
  }

  /** How the spin of this wait ended: `caught` when a completion came within it. */
  record(caught: boolean): void {
    if (!this.adaptive) return;
    this.score = caught ? Math.min(MAX_SCORE, this.score + 1) : Math.max(0, this.score - 1);
  }

  /** Whether the next wait would spin (for tests and diagnostics). */
  get spinning(): boolean {
    return this.budgetMs > 0 && (!this.adaptive || this.score > 0);
  }
}
