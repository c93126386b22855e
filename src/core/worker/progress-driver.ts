/**
 * Who makes UCX progress for a worker, per progress mode: thread and hybrid modes progress by
 * themselves (engine/threaded-engine.ts, engine/hybrid-engine.ts); in polling and blocking modes
 * the application calls `progress()` / `wait()`, and anything awaited through `settled()` is
 * driven here by one loop per worker that yields to the event loop now and then.
 */
import type { Engine, ProgressMode } from "../engine/engine.ts";
import { postedAndWaiting, SETTLE_TURNS, turnDue, yieldToEventLoop } from "../engine/event-loop.ts";
import { AWAITED_EMPTY_ROUNDS, spinIdle, startSpinning, stopSpinning } from "../engine/idle-spin.ts";

export class ProgressDriver {
  /** Set once the engine has started (Worker.create); dropped by release(). */
  engine: Engine | undefined;
  /** Promises awaited through settled() that have not settled yet (polling, blocking). */
  private awaited = 0;
  private driver: Promise<void> | undefined;
  private readonly unawait = (): void => void this.awaited--;
  /** This driver's worker, for the idle spins of this thread (engine/idle-spin.ts). */
  private readonly spinProgress = (): number => this.progress();

  constructor(
    private readonly mode: ProgressMode,
    /** The engine has stopped: nothing more to drive. */
    private stopped: () => boolean,
  ) {}

  /**
   * The worker has closed: let go of it and of its engine. A driver loop may stay parked on the
   * shared event-loop turn (event-loop.ts) for as long as the application keeps the microtask
   * queue busy; an application looping create/address/close without a macrotask turn parked one
   * loop per worker, and each held its whole worker (rings, pools: ~2.3 MiB of ArrayBuffers,
   * measured 2026-11-25) until the turn came. After this the parked loop holds only this object.
   */
  release(): void {
    this.stopped = () => true;
    this.engine = undefined;
  }

  progress(): number {
    if (this.stopped()) return 0;
    return this.engine!.progress();
  }

  wait(timeoutMs: number): number {
    if (this.stopped()) return 0;
    return this.engine!.wait(timeoutMs);
  }

  /**
   * A Promise already resolved (a send whose bytes were copied), which settled() hands back as
   * it is: no driver round for it. Awaiting a send that resolved on submission made a driver
   * round (a progress call and a microtask turn) per send, twice where both the endpoint and the
   * caller passed it through settled().
   */
  resolved(): Promise<void> {
    const p = Promise.resolve();
    this.lastResolved = p;
    return p;
  }

  /** `p` settled already (a send UCX finished in place): settled() hands it back as it is. */
  resolvedNow(p: Promise<unknown>): void {
    this.lastResolved = p;
  }

  private lastResolved: Promise<unknown> | undefined;

  settled<T>(awaited: Promise<T>): Promise<T> {
    if (awaited === this.lastResolved) return awaited;
    // The same Promise for a native one (no allocation); a thenable or a value is adopted.
    const promise = Promise.resolve(awaited);
    // Thread and hybrid modes progress by themselves.
    if (this.mode === "thread" || this.mode === "hybrid") return promise;
    // One driver loop per worker, however many Promises are awaited through settled() at once:
    // a loop each made 17 concurrent awaits cost 17 progress calls per turn (measured: a round
    // of 16 receives took ~0.9 ms instead of ~0.1).
    this.awaited++;
    // The caller gets `promise` itself: a derived Promise (finally, catch) cost two more
    // Promises and a microtask per operation (Promises cost ~0.7 us each here, as much as the
    // UCX calls of a small send).
    promise.then(this.unawait, this.unawait);
    this.driver ??= this.drive();
    return promise;
  }

  /** Progress while anything is awaited through settled(), yielding to the event loop now and then. */
  private async drive(): Promise<void> {
    startSpinning(this.spinProgress);
    // Empty rounds in a row: the first few await after each (a completion's reactions may
    // post the next operation a few microtasks later: a chain of Promises inside a batch).
    let empty = 0;
    // Turns left in which only submissions and deliveries run (SETTLE_TURNS).
    let settling = 0;
    /** Direct posts when the settling turns began (event-loop.ts postedAndWaiting). */
    let posts = 0;
    let rounds = 0;
    try {
      while (this.awaited > 0 && !this.stopped()) {
        if (settling > 0) {
          settling--;
          // A delivery resumes more code: it gets its turns too. A post straight to UCX ends them.
          if (this.engine!.settle() > 0) settling = SETTLE_TURNS;
          else if (postedAndWaiting(this.engine!.direct, posts)) settling = 0;
          await undefined;
          continue;
        }
        if (this.engine!.progress() > 0) {
          empty = 0;
          settling = SETTLE_TURNS;
          posts = this.engine!.direct?.posts ?? 0;
        } else if (++empty > AWAITED_EMPTY_ROUNDS && spinIdle()) {
          empty = 0;
          settling = SETTLE_TURNS;
          posts = this.engine!.direct?.posts ?? 0;
        }
        // A resolved Promise runs its reactions on the microtask queue: give it a turn.
        await undefined;
        // Let timers and I/O run now and then, but not on every round: a macrotask turn costs
        // microseconds to a millisecond (setTimeout's floor), more than a whole round trip.
        // (The turn is shared with every other loop of this process: see event-loop.ts.) The
        // clock is read every 8th round: a read cost as much as the rest of an idle round's
        // JavaScript, and 8 rounds, idle spins included, stay well under the 2 ms.
        if ((++rounds & 7) === 0 && turnDue(2)) await yieldToEventLoop();
      }
    } finally {
      stopSpinning(this.spinProgress);
    }
    // Cleared here, synchronously with the last check: a settled() call after this point must
    // start a new driver (a Promise.finally would clear it a microtask late, and a call in
    // between would wait forever).
    this.driver = undefined;
  }
}
