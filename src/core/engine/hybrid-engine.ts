/**
 * Hybrid mode: the application thread owns UCX (as in polling mode) and drives it by itself
 * whenever something is outstanding, so nothing needs to call `progress()`, yet a round trip
 * costs no thread hop while the answer is near: the driver progresses UCX in a loop for a spin
 * budget after the last event (a ping-pong's reply arrives within it), then arms the worker and
 * parks in `Atomics.waitAsync`, the event loop free; a watcher thread blocked in `poll` on UCX's
 * event fd wakes it when UCX has something (fd-watcher-thread.ts). Idle, nothing spins, but the
 * fd is still watched: unasked traffic (a peer's wire-up, emulated RMA) is answered.
 *
 * The price against thread mode: while the application thread runs other JavaScript, nobody
 * progresses UCX (a large send waits for the next turn of the event loop).
 */
import type { AmAtomics } from "./am-atomics.ts";
import type { DirectTags } from "./direct-tags.ts";
import { runOnThread, type ThreadJob } from "./thread-pool.ts";
import type { CompletionHandler, Engine, EngineOptions, Submission } from "./engine.ts";
import { InlineEngine } from "./inline-engine.ts";
import type { Payload } from "./payload.ts";
import { STATE, STATE_BYTES } from "./hybrid-state.ts";
import { UcxError } from "../errors.ts";
import { parkedOn, postedAndWaiting, SETTLE_TURNS, turnDue, turnIntervalMs, yieldToEventLoop } from "./event-loop.ts";
import { HybridSpinPolicy } from "./hybrid-spin-policy.ts";
import { AWAITED_EMPTY_ROUNDS, IDLE_SPIN_MS, spinIdle, startSpinning, stopSpinning } from "./idle-spin.ts";
import { hostOversubscribed } from "./host-load.ts";
import { ARM_BUSY_BACKOFF_MS } from "./arm-backoff.ts";
import { clearInterval, setInterval } from "node:timers";

const UCS_OK = 0;
/**
 * The longest spin the driver learns (hybrid-spin-policy.ts), as thread mode's takeover learns
 * its poll window up to 10 ms (takeover-poll-policy.ts). The gap it learns from runs until this
 * thread is awake again, so it includes the wake-ups of both sides: with a bound of 1 ms, two
 * peers whose wake-ups took ~1 ms each saw every gap past the bound, fell back to the base spin,
 * parked again, and stayed so for thousands of round trips (2.5 ms each). Quiet 2-core VM,
 * 2026-11-26 14:16-14:18, 10,000 8 B round trips, 3 alternated pairs, p99 us 1 ms -> 10 ms: Node
 * 437, 239, 129 -> 124, 101, 131; Bun 980, 391, 715 -> 64, 71, 67 (longest run of slow round
 * trips 27-55 -> 2-5).
 */
const LEARNT_SPIN_MAX_MS = 10;
/** The bound while the host is oversubscribed (host-load.ts): the old 1 ms. */
const BUSY_LEARNT_SPIN_MAX_MS = 1;
/** A park's timeout: a safety net only, every wake-up comes from the watcher or a submission. */
const PARK_MS = 1000;
/**
 * A park's timeout while the watcher thread is still starting (0.1-1.6 s measured here, more
 * from TypeScript sources under Node) and nothing is awaited: nobody watches the fd yet, so an
 * idle driver polls UCX at this pace instead. Without it a new worker's first round trips
 * waited for the full park (issue 21). Not waiting for the thread in Worker.create keeps
 * creation as fast as before. While something is awaited the driver does not park at all in
 * that window (drive): each such park cost 1.1-1.3 ms, not the tens of microseconds of a wake-up.
 */
const STARTING_PARK_MS = 1;

/** Hybrid mode's counts (Worker.hybridStats). */
export interface HybridStats {
  /** Times the driver parked (armed the worker and waited for an event or a submission). */
  parks: number;
  /** Parks that ended on UCX's event, reported by the watcher thread. */
  eventWakeups: number;
  /** Parks made before the watcher thread was ready: each ends on its 1 ms timeout (or a submission). */
  startingParks: number;
  /** Of those, parks made while the application awaited something: none by design (drive). */
  startingParksAwaited: number;
  /** Event-loop turns the driver polled through instead of parking while the watcher started. */
  startingPolls: number;
  /**
   * Microtask turns the driver awaited (settling turns, empty rounds, one per idle spin): each
   * allocates, so a driver that waits should count few of them (idle-spin.ts).
   */
  yields: number;
}

export class HybridEngine implements Engine {
  readonly mode = "hybrid" as const;
  private readonly inner: InlineEngine;
  private readonly state = new Int32Array(new SharedArrayBuffer(STATE_BYTES));
  /** The watcher: a job on a pooled thread (thread-pool.ts). */
  private watcher: ThreadJob | undefined;
  private active = false;
  private driving = false;
  private stopped = false;
  /**
   * Keeps the process alive while requests are outstanding (Atomics.waitAsync does not): made
   * once, then ref'd and unref'd. A new interval each time the worker turned active was ~320 B
   * of garbage per round trip on Node (it turns idle after each). node:timers for ref/unref on
   * all three runtimes (Deno's own setInterval returns a number).
   */
  private keepAlive: ReturnType<typeof setInterval> | undefined;
  private readonly spin: HybridSpinPolicy;
  readonly stats: HybridStats = { parks: 0, eventWakeups: 0, startingParks: 0, startingParksAwaited: 0, startingPolls: 0, yields: 0 };

  /** Tag sends and receives straight to UCX (direct-tags.ts), as in polling mode: the executor runs on this thread. */
  get direct(): DirectTags | undefined {
    return this.inner.direct;
  }

  /**
   * May a direct call go to UCX now? As in polling mode (after the ring's earlier records), and
   * only while the driver runs unparked, so that it progresses what the call posts. Parked,
   * stopped or not started, the call takes the ring, whose submit wakes the driver: a direct
   * call would have to kick it, and starting the driver runs a round of progress inside the
   * caller's post. In a ping-pong the reply's next post finds the driver spinning.
   */
  directOpen(): boolean {
    return !this.stopped && this.driving && this.unpark === undefined && this.inner.directOpen();
  }

  /** The executor's atomics over active messages (it runs on this thread, in the inner engine). */
  get amAtomics(): AmAtomics | undefined {
    return this.inner.amAtomics;
  }

  constructor(options: EngineOptions, onCompletion: CompletionHandler) {
    this.inner = new InlineEngine("polling", options, onCompletion);
    const base = options.spinMicroseconds / 1000;
    // A budget the user chose is used as it is; the default one learns (hybrid-spin-policy.ts).
    this.spin = new HybridSpinPolicy(base, options.adaptiveSpin ? Math.max(base, LEARNT_SPIN_MAX_MS) : base, Math.max(base, BUSY_LEARNT_SPIN_MAX_MS), hostOversubscribed);
  }

  /** Start the watcher on UCX's event fd (the worker exists: the inner engine made it). */
  start(): this {
    const fd = this.inner.eventFd();
    this.watcher = runOnThread("watch", { fd, state: this.state.buffer });
    this.watcher.unref();
    this.kick(); // the driver parks on the fd at once: an idle worker still answers its peers
    return this;
  }

  get backlog(): number {
    return this.inner.backlog;
  }

  submit(s: Submission, now = false): boolean {
    if (this.stopped) throw new UcxError("UCX_TS_CLOSED", "the worker is closed");
    const done = this.inner.submit(s, now);
    this.kick();
    return done;
  }

  get inPlaceValue(): number {
    return this.inner.inPlaceValue;
  }

  progress(): number {
    return this.inner.progress();
  }

  settle(): number {
    return this.inner.settle();
  }

  wait(): number {
    throw new UcxError("UCX_TS_INVALID_ARGUMENT", "wait() is for the blocking progress mode; in hybrid mode just await");
  }

  takePayload(id: number): Payload | undefined {
    return this.inner.takePayload(id);
  }

  reuseActiveMessageBuffer(buffer: ArrayBuffer): void {
    this.inner.reuseActiveMessageBuffer(buffer);
  }

  setActive(active: boolean): void {
    this.active = active;
    // The close settles what is still pending (inner.stop() delivers the cancellations), and
    // each settlement reports activity here: a keep-alive started then would never be cleared
    // (the process did not end after worker.close(), Bun's default mode, 2026-11-26).
    if (this.stopped) return;
    this.holdProcess();
    if (active) this.kick();
  }

  /**
   * Keep the process alive while anything is outstanding: a request of the table (`active`),
   * records still queued, or a direct call UCX has not finished (direct-tags.ts: a send that did
   * not complete in its call, a collective's receive), which has no entry in the table and so no
   * say in `setActive`. Without the last, a process whose only outstanding work was such a send
   * parked its driver, unref'd the keep-alive and ended while the send's Promise was awaited
   * (the perf server under tcp, 2026-12-07: 1 run in 8). Called when activity changes and before
   * the driver parks.
   */
  private holdProcess(): void {
    const hold = this.awaited() || this.inner.backlog > 0;
    if (hold === this.holding) return;
    this.holding = hold;
    // Atomics.waitAsync does not keep a process alive: an awaited request does, like a socket.
    if (hold) (this.keepAlive ??= setInterval(() => {}, 1 << 30)).ref();
    else this.keepAlive?.unref();
  }

  /**
   * Is anything awaited: a request of the table, or a direct call UCX has not finished (those
   * have no entry in the table). A driver spinning for a direct receive alone, counted as idle,
   * gave the event loop a turn every 50 us instead of every 1 ms (two hybrid workers in one
   * process: ~500 turns in 4,000 round trips once the driver left its settling turns early).
   */
  private awaited(): boolean {
    return this.active || (this.inner.direct?.count ?? 0) > 0;
  }

  /** Whether the keep-alive is ref'd now (holdProcess). */
  private holding = false;

  /** Make the driver run (and leave its park) now. */
  private kick(): void {
    if (!this.driving) {
      this.driving = true;
      void this.drive();
    } else if (this.unpark) {
      // Resolved here, not through Atomics.notify: a waitAsync wake-up is a task, tens of
      // microseconds away; this is a microtask (seen: 8 B round trips 12 -> 58 us without it).
      const unpark = this.unpark;
      this.unpark = undefined;
      unpark();
    }
  }

  /** This worker, for the idle spins of this thread's loops (idle-spin.ts); nothing once stopped. */
  private readonly spinProgress = (): number => (this.stopped ? 0 : this.inner.progress());

  /** Set while the driver is parked: ends the park at once. */
  private unpark: (() => void) | undefined;

  private async drive(): Promise<void> {
    let lastWork = performance.now();
    /** No arm before this (a BUSY arm just now: see ARM_BUSY_BACKOFF_MS). */
    let armAfter = 0;
    /** Empty rounds in a row: the first AWAITED_EMPTY_ROUNDS each await (idle-spin.ts). */
    let empty = 0;
    try {
      // The loop runs as long as the worker is open, active or not: an idle worker must still
      // answer what comes unasked (wire-up from a peer connecting to it, emulated RMA, a peer's
      // failure), as thread mode's progress thread does. Idle, it only parks on the fd.
      startSpinning(this.spinProgress);
      while (!this.stopped) {
        const seen = Atomics.load(this.state, STATE.EVENT);
        let worked = this.inner.progress() > 0;
        if (!worked && ++empty > AWAITED_EMPTY_ROUNDS && !turnDue(turnIntervalMs(this.awaited()))) {
          // Past the first empty rounds and inside the spin budget: call UCX in place for up to
          // IDLE_SPIN_MS (idle-spin.ts) instead of awaiting after every empty round, each await
          // garbage the collector pays for in stalls of milliseconds.
          const left = Math.max(lastWork + this.spin.spinMs, armAfter) - performance.now();
          if (left > 0) worked = spinIdle(Math.min(IDLE_SPIN_MS, left));
        }
        if (worked) {
          empty = 0;
          lastWork = performance.now();
          // Settle what completed before going on: the code it resumes may post the next
          // operation (an echo's reply) a few microtasks later, before UCX is called again.
          // Once it has posted straight to UCX, UCX gets the post at once (event-loop.ts
          // postedAndWaiting).
          const posts = this.inner.direct?.posts ?? 0;
          for (let turns = SETTLE_TURNS; turns > 0 && !this.stopped; turns--) {
            this.stats.yields++;
            await undefined;
            if (this.inner.settle() > 0) turns = SETTLE_TURNS + 1;
            else if (postedAndWaiting(this.inner.direct, posts)) break;
          }
          continue;
        }
        if (turnDue(turnIntervalMs(this.awaited()))) {
          // Timers, I/O and other workers' wake-ups (Atomics.waitAsync settles as a task, not a
          // microtask) get a turn during a spin: with 2 ms between turns, two hybrid workers in
          // one process took 300 us a round trip, one spinning while the other's wake-up waited.
          // So every 50 us while such a wake-up may wait or nothing is awaited, else every 1 ms
          // (event-loop.ts turnIntervalMs). The turn is shared with every other such loop of
          // this process.
          await yieldToEventLoop();
          continue;
        }
        // Spin after any event, busy or not: a request just finished is often followed by the
        // next one (an echo server between a receive and its reply).
        const now = performance.now();
        if (now - lastWork < this.spin.spinMs || now < armAfter) {
          this.stats.yields++;
          await undefined;
          continue;
        }
        // Nobody watches the fd yet (its thread is starting) and the application awaits
        // something: poll on through event-loop turns instead of parking, whose only wake-up
        // would be the 1 ms timeout. A new hybrid worker's first ~0.35 s (Node, TypeScript
        // sources, 2026-12-07) otherwise cost 1.1-1.3 ms for every reply that came after the
        // spin: 8 B round trips with a 200 us reply delay had a p90 of 1.7-2.4 ms over 1 ms
        // parks, and a 2-rank collective benchmark (a few hundred calls, all inside that
        // window) read 1 MiB bcast and alltoall medians of 2-3 ms. The window is short and
        // bounded by the thread's start; a watcher that never started (its job ended) parks.
        const watched = Atomics.load(this.state, STATE.READY) !== 0;
        if (!watched && this.awaited() && this.watcher !== undefined && !this.watcher.done) {
          this.stats.startingPolls++;
          await yieldToEventLoop();
          continue;
        }
        // Idle past the budget: arm (UCS_OK means nothing is pending) and park until the
        // watcher sees the fd turn readable, or a submission kicks us.
        if (this.inner.arm() !== UCS_OK) {
          armAfter = now + ARM_BUSY_BACKOFF_MS;
          continue;
        }
        // A direct call still in flight (or none any more) holds the process (or lets it go).
        this.holdProcess();
        // Parked, the worker is the watcher's: no other loop's idle spin progresses it.
        stopSpinning(this.spinProgress);
        Atomics.add(this.state, STATE.WATCH, 1);
        Atomics.notify(this.state, STATE.WATCH);
        this.stats.parks++;
        if (!watched) {
          this.stats.startingParks++;
          if (this.awaited()) this.stats.startingParksAwaited++;
        }
        const r = Atomics.waitAsync(this.state, STATE.EVENT, seen, watched ? PARK_MS : STARTING_PARK_MS);
        if (r.async) {
          await parkedOn(
            new Promise<void>((resolve) => {
              this.unpark = resolve;
              void r.value.then(() => resolve());
            }),
          );
          this.unpark = undefined;
        }
        startSpinning(this.spinProgress);
        const woken = performance.now();
        // Woken by UCX's event (not by a submission of ours): how far it came after the last one.
        if (Atomics.load(this.state, STATE.EVENT) !== seen) {
          this.stats.eventWakeups++;
          this.spin.eventAfter(woken - lastWork);
        }
        lastWork = woken;
      }
    } finally {
      stopSpinning(this.spinProgress);
      this.driving = false;
    }
  }

  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    Atomics.store(this.state, STATE.STOP, 1);
    Atomics.notify(this.state, STATE.WATCH);
    Atomics.add(this.state, STATE.EVENT, 1);
    Atomics.notify(this.state, STATE.EVENT);
    if (this.watcher && !this.watcher.done) {
      const w = this.watcher;
      w.ref();
      // The watcher returns within its poll timeout (200 ms); a real timer bounds the wait.
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, 2000);
        void w.ended.then(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
    await this.inner.stop();
    if (this.keepAlive !== undefined) clearInterval(this.keepAlive);
    this.keepAlive = undefined;
  }
}

