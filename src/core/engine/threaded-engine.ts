/**
 * Thread mode, application side: starts the progress thread (a job on a pooled thread,
 * thread-pool.ts), writes submissions into the
 * shared submission ring (waking the thread with `ucp_worker_signal` when it sleeps), and runs
 * the notifier: while work is outstanding it waits for completion records (a short spin, then
 * `Atomics.waitAsync`) and hands them to the Worker, which settles Promises in batches.
 */
import { MessageChannel, receiveMessageOnPort, type MessagePort } from "../../ffi/thread.ts";
import { runOnThread, type ThreadJob } from "./thread-pool.ts";
import type { Payload } from "./payload.ts";
import { UcxError } from "../errors.ts";
import { ucx } from "../library.ts";
import type { CompletionHandler, Engine, EngineOptions, Submission } from "./engine.ts";
import { COMPLETION_BYTES, CompletionKind, DONE, Op, SUBMISSION_BYTES } from "./records.ts";
import { APP_ACTIVE, APP_WAITING, CONSUMER_SLEEPING, PROCESS_EXITING, PRODUCER_WAITING, Ring, SIGNALERS, WORKER_GOING } from "./ring.ts";
import process from "node:process";
import { submission } from "./engine.ts";
import { SubmissionWriter } from "./submission-writer.ts";
import { SpinPolicy } from "./spin-policy.ts";
import { SpinSlots } from "./thread-spin-policy.ts";
import { cpus } from "node:os";
import { HEARTBEAT, LENDS, TAKEN_BACK, TakeoverState, Token, TOKEN, WANT_APP, WANT_THREAD } from "./takeover-state.ts";
import { TakeoverDriver } from "./takeover-driver.ts";
import { parkedOn, SETTLE_TURNS, turnDue, turnIntervalMs, yieldToEventLoop } from "./event-loop.ts";
import { TakeoverPollPolicy } from "./takeover-poll-policy.ts";
// Takeover's notifier waits as the other loops of the thread do (idle-spin.ts): the same count of
// empty rounds on microtasks before its spin, the same longest spin (its own, holding the token).
import { AWAITED_EMPTY_ROUNDS, IDLE_SPIN_MS } from "./idle-spin.ts";

/** Takeover's counts (Worker.takeoverStats). */
export interface TakeoverStats {
  /** Rounds the application thread drove UCX in. */
  rounds: number;
  /** Times the progress thread lent it the token. */
  lends: number;
  /** Times the progress thread took the token back because the rounds stopped (2 ms). */
  takenBack: number;
  /** Times the application thread handed it back (its poll window ran out, or a record only the thread performs). */
  handedBack: number;
  /** The application thread's turns of the event loop while it held the token. */
  yields: number;
  /** Times its notifier parked waiting for a completion record or the token. */
  parks: number;
}

/** Fast requests the takeover table holds (more stay with the progress thread). */
const TAKEOVER_REQUESTS = 4096;
/**
 * Takeover: how long the application thread keeps driving UCX after its last completion before
 * it hands the token back (the progress thread then sleeps until UCX has an event), at least
 * and at most: the window follows the gaps between completions in between
 * (takeover-poll-policy.ts). A ping-pong's reply comes back well within the base (10-30 us
 * between two processes here) on a quiet machine; on a busy one a reply may wait a time slice
 * for a core, and handing back then made every later round trip pay wake-ups (2.4-2.8 ms a
 * round trip instead of 50-110 us at load 7-17).
 */
const TAKEOVER_POLL_MS = 1;
const TAKEOVER_POLL_MAX_MS = 10;
/**
 * This process's spin slots, shared by all its progress threads (thread-spin-policy.ts): one
 * core is left to the application thread.
 */
let spinSlots: SpinSlots | undefined;

/**
 * Engines whose thread is running. A process may exit without closing its workers; Node then
 * waits for every worker thread, and one asleep in `ucp_worker_wait` never comes back (seen
 * here: a 20 s hang). On exit each live thread is told to return and is woken.
 */
const liveEngines = new Set<ThreadedEngine>();
let exitHookInstalled = false;
function installExitHook(): void {
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  process.on("exit", () => {
    for (const e of liveEngines) e.abandon();
  });
}

export class ThreadedEngine implements Engine {
  readonly mode = "thread" as const;
  private readonly writer: SubmissionWriter;
  private active = false;
  private notifierRunning = false;
  private stopped = false;
  private stopWaiter: (() => void) | undefined;
  private readonly signal: () => void;
  /** When the notifier spins before parking (spin-policy.ts). */
  private readonly spin: SpinPolicy;
  private readonly payloads = new Map<number, Payload>();
  /** Takeover: completions delivered (request results and endpoint errors, not lends). */
  private delivered = 0;
  /** Takeover: when the last of them was delivered, and how long to drive UCX after it. */
  private lastCompletion = -Infinity;
  private readonly poll = new TakeoverPollPolicy(TAKEOVER_POLL_MS, TAKEOVER_POLL_MAX_MS);
  /** Takeover counts (takeoverStats): the notifier's event-loop turns, parks, and hand-backs of its own. */
  private yields = 0;
  private parks = 0;
  private handBacks = 0;

  private constructor(
    /** The progress thread's job; its `ended` is what the thread's exit was. */
    private readonly thread: ThreadJob,
    private readonly submissions: Ring,
    private readonly completions: Ring,
    private readonly workerHandle: number,
    private readonly options: EngineOptions,
    private readonly onCompletion: CompletionHandler,
    /** Set when delayed submission is off: each submission is posted here instead. */
    private readonly port: MessagePort | undefined,
    private readonly payloadPort: MessagePort,
    /** Takeover (EngineOptions.takeover, where the runtime allows it): the shared state and this thread's driver. */
    private readonly takeover: TakeoverState | undefined,
    private readonly driver: TakeoverDriver | undefined,
  ) {
    this.writer = new SubmissionWriter(submissions);
    this.spin = new SpinPolicy(options.spinMicroseconds / 1000, options.adaptiveSpin ?? false);
    const u = ucx();
    this.signal = () => void u.ucp_worker_signal(this.workerHandle);
    thread.unref(); // held only while work is outstanding (setActive)
    liveEngines.add(this);
    installExitHook();
  }

  static async start(options: EngineOptions, onCompletion: CompletionHandler): Promise<ThreadedEngine> {
    ucx(); // load UCX here first: a missing library is reported on this thread, clearly
    const submissions = Ring.create(options.ringSize, SUBMISSION_BYTES, true);
    const completions = Ring.create(options.ringSize * 2, COMPLETION_BYTES, true);
    const channel = options.delayedSubmission ? undefined : new MessageChannel();
    // Multi-receive payloads come back on a port of their own, read synchronously when their
    // completion record arrives (the thread posts the payload first, so it is there by then).
    const payloads = new MessageChannel();
    // Takeover needs our callbacks to run when UCX calls them on the application thread (see
    // Backend.callbacksFromOtherThreads); where they cannot (Bun), plain thread mode.
    const takeover = options.takeover && options.delayedSubmission && ucx().backend.callbacksFromOtherThreads ? TakeoverState.create(TAKEOVER_REQUESTS) : undefined;
    const transfer = [payloads.port2, ...(channel ? [channel.port2] : [])] as unknown as Transferable[];
    const thread = runOnThread(
      "progress",
      {
        submissions: submissions.buffer,
        completions: completions.buffer,
        options: takeover ? { ...options, takeoverState: takeover.buffer } : options,
        port: channel?.port2,
        payloads: payloads.port2,
        spinSlots: (spinSlots ??= SpinSlots.create(Math.max(1, cpus().length - 1))).words.buffer as SharedArrayBuffer,
      },
      transfer,
    );
    const workerHandle = await new Promise<number>((resolve, reject) => {
      thread.onMessage((message) => {
        const m = message as { type: string; worker?: number; code?: string; message?: string; status?: number };
        if (m.type === "ready") resolve(m.worker!);
        else reject(new UcxError(m.code ?? "UCX_TS_CLOSED", m.message ?? "progress thread failed to start", { status: m.status }));
      });
      thread.onError((e) => reject(new UcxError("UCX_TS_CLOSED", `progress thread failed: ${e.message}`, { cause: e })));
      // A job that ended before saying anything (its thread terminated) must not leave this hanging.
      void thread.ended.then(() => reject(new UcxError("UCX_TS_CLOSED", "progress thread ended before it started")));
    });
    channel?.port1.unref?.();
    payloads.port1.unref?.();
    const driver = takeover ? new TakeoverDriver(ucx(), takeover, workerHandle, submissions, options.ringSize * 2, options.requestHandlesFrom) : undefined;
    return new ThreadedEngine(thread, submissions, completions, workerHandle, options, onCompletion, channel?.port1, payloads.port1, takeover, driver);
  }

  get backlog(): number {
    return this.writer.backlog;
  }

  /** The value (a send's length) of the last submission that completed in place (executeNow). */
  get inPlaceValue(): number {
    return this.driver?.inPlaceValue ?? 0;
  }

  submit(s: Submission, now = false): boolean {
    if (this.stopped) throw new UcxError("UCX_TS_CLOSED", "the worker is closed");
    // Posting clones: an inline send's bytes are sliced first, so a view of a large buffer does
    // not clone all of it.
    if (this.port) this.port.postMessage(s.inline ? { ...s, inline: s.inline.slice() } : s);
    else this.writer.write(s);
    if (this.takeover) {
      // The token is worth asking for while the operations are ones our rounds execute (the
      // thread, woken by the record, lends it once done with it); not while they are the
      // thread's own (puts, active messages, flushes...): each would hand the token back to the
      // thread, two wake-ups an operation (1 MiB put windows: 1.3 GB/s against 21).
      const op = s.op;
      const fast = op === Op.TagSend || op === Op.TagRecv || op === Op.StreamSend || op === Op.StreamRecv || op === Op.TagProbe;
      if (fast) this.wantToken = true;
      else if (op !== Op.Cancel) this.wantToken = false;
      // Lent to us: execute it now, as polling mode does (executeNow).
      if (fast && this.takeover.token === Token.LENT && this.writer.backlog === 0) {
        const r = this.executeNow(this.takeover, this.driver!, now ? s.request : 0);
        if (r === 1) return true;
        if (r === 0) {
          this.ensureNotifier();
          return false;
        }
      }
      // Lent already: only our rounds execute the record.
      if (this.takeover.token !== Token.THREAD) this.ensureNotifier();
    }
    this.wake();
    if (this.writer.backlog > 0) this.ensureNotifier();
    return false;
  }

  /**
   * Takeover, the token lent to us: execute the ring's records inside the posting call
   * (TakeoverDriver.executeNow) instead of at the notifier's next turn, as polling mode hands a
   * send to UCX now. A send UCX finishes in place then settles in submit itself (no completion
   * record, no delivery), when nothing else waits to be delivered (Engine.submit's order rule).
   * Returns 1 when request `inPlace` completed in place, 0 when executed (or left for the thread,
   * which then has the token back), -1 when the token was not ours to take (the thread took it
   * back just now: the record waits for it).
   */
  private executeNow(t: TakeoverState, driver: TakeoverDriver, inPlace: number): number {
    if (!t.takeLent(Token.APP)) return -1;
    Atomics.add(t.header, HEARTBEAT, 1);
    const nothingToDeliver = this.completions.size === 0 && driver.completions.size === 0 && driver.backlog === 0;
    let done = false;
    try {
      done = driver.executeNow(nothingToDeliver ? inPlace : 0);
    } finally {
      // As a round: the thread executes what we could not, woken by the token.
      this.releaseToken(t, driver);
    }
    return done ? 1 : 0;
  }

  private wake(): void {
    // Seq-cst: either we see the flag and signal, or the thread sees our record before sleeping.
    const h = this.submissions.header;
    if (Atomics.load(h, CONSUMER_SLEEPING) === 0) return;
    // The flag may be stale: the thread may have woken, taken Op.Stop and be destroying the
    // worker, and a signal to a destroyed worker is a use after free (seen once as UCX's
    // "Signaling wakeup failed: Bad file descriptor", a receive posted as its worker closed).
    // Announce the call, then look at WORKER_GOING: the thread raises that before it waits for
    // SIGNALERS to drain, so one of the two sides always sees the other (both seq-cst).
    this.signalWhileAlive(true);
  }

  /**
   * ucp_worker_signal, unless the thread is destroying the worker. `ifSleeping`: only if
   * CONSUMER_SLEEPING is still up, and clear it, so that one signal serves a sleep: the thread
   * takes every record once awake, and each ucp_worker_signal is a system call that may hand
   * the core to the thread it wakes (16 sends posted in a row signalled ~13 times and took 92 us
   * to post; once, 52 us). A signal sent before the thread arms is not lost: ucp_worker_arm
   * finds it and returns UCS_ERR_BUSY, and the thread goes round again.
   */
  private signalWhileAlive(ifSleeping: boolean): void {
    const h = this.submissions.header;
    Atomics.add(h, SIGNALERS, 1);
    if (Atomics.load(h, WORKER_GOING) === 0 && (!ifSleeping || Atomics.compareExchange(h, CONSUMER_SLEEPING, 1, 0) === 1)) this.signal();
    Atomics.sub(h, SIGNALERS, 1);
  }

  /** Delivering is all the application thread does here (the takeover's turns: takeoverNotifier). */
  settle(): number {
    return this.progress();
  }

  progress(): number {
    let n = 0;
    if (this.writer.backlog > 0 && this.writer.flush() > 0) this.wake();
    // Takeover: our rounds' completions first. They all happened before the token last went
    // back to the thread, so before any endpoint error the thread reported since; delivered
    // after such an error, a receive that had completed would be rejected with it instead.
    const d = this.driver;
    if (d) {
      const k = d.completions.consume((w) => this.onCompletion(d.completions, w));
      this.delivered += k;
      n += k;
    }
    n += this.completions.consume((w) => this.dispatch(w));
    return n;
  }

  private dispatch(w: number): void {
    const kind = this.completions.u32[w + DONE.kind];
    if (kind === CompletionKind.Stopped) {
      this.stopWaiter?.();
      return;
    }
    if (kind === CompletionKind.TokenLent) return; // it only woke us (takeoverNotifier)
    this.delivered++;
    this.onCompletion(this.completions, w);
  }

  takePayload(id: number): Payload | undefined {
    const early = this.payloads.get(id);
    if (early) {
      this.payloads.delete(id);
      return early;
    }
    if (this.stopped) return undefined; // the port is closed; nothing more can come
    // Payloads arrive in the order of their completions; one taken out of turn (its request was
    // settled early) is kept until asked for, or dropped with the engine.
    // A message is one payload or a batch of them (active messages of one progress call).
    for (let m = receiveMessageOnPort(this.payloadPort); m; m = receiveMessageOnPort(this.payloadPort)) {
      const p = m.message as Payload | Payload[];
      if (!Array.isArray(p)) {
        if (p.id === id) return p;
        this.payloads.set(p.id, p);
        continue;
      }
      let found: Payload | undefined;
      for (const one of p) {
        if (one.id === id) found = one;
        else this.payloads.set(one.id, one);
      }
      if (found) return found;
    }
    return undefined;
  }

  reuseActiveMessageBuffer(buffer: ArrayBuffer): void {
    // Back on the payloads' port, transferred (this thread's views detach); the thread takes it
    // when a message needs memory (active-messages.ts).
    if (!this.stopped) this.payloadPort.postMessage(buffer, [buffer]);
  }

  wait(): number {
    throw new UcxError("UCX_TS_INVALID_ARGUMENT", "wait() is for the blocking progress mode; in thread mode just await");
  }

  setActive(active: boolean): void {
    if (active !== this.active) Atomics.store(this.submissions.header, APP_ACTIVE, active ? 1 : 0);
    this.active = active;
    if (active) {
      this.thread.ref(); // an awaited request keeps the process alive, as a socket would
      this.ensureNotifier();
    } else if (this.writer.backlog === 0) {
      this.thread.unref();
    }
  }

  private ensureNotifier(): void {
    if (this.notifierRunning) return;
    this.notifierRunning = true;
    // Started as a microtask, not called: an async function runs up to its first await at once,
    // and the notifier's first await comes after its spin, so a call here spun inside the
    // request() that made the worker active, before the caller could post its next operation
    // (seen: with a 1 ms spin, a receive posted before a send held the send back 1 ms).
    queueMicrotask(() => void (this.takeover ? this.takeoverNotifier(this.takeover, this.driver!) : this.notifier()));
  }

  /** The notifier: deliver completions while anything is outstanding, parking when idle. */
  private async notifier(): Promise<void> {
    const header = this.completions.header;
    const spin = this.spin;
    try {
      while ((this.active || this.writer.backlog > 0 || this.stopWaiter) && !this.stopped) {
        const seen = Atomics.load(header, Ring.TAIL);
        if (this.progress() > 0) continue;
        if (this.writer.backlog > 0) {
          await this.waitForSpace();
          continue;
        }
        // Spin briefly: a completion that is microseconds away is not worth a wake-up (while
        // spinning pays: spin-policy.ts).
        const spinMs = spin.next();
        if (spinMs > 0) {
          const until = performance.now() + spinMs;
          while (Atomics.load(header, Ring.TAIL) === seen && performance.now() < until);
          const caught = Atomics.load(header, Ring.TAIL) !== seen;
          spin.record(caught);
          if (caught) continue;
        }
        await this.park(seen);
      }
    } finally {
      this.notifierRunning = false;
    }
  }

  /**
   * Takeover (null without it): rounds this thread drove UCX in, times the progress thread lent
   * it the token, times it took the token back because the rounds stopped, times this thread
   * handed it back, and the notifier's event-loop turns and parks (where a round trip's time goes).
   */
  get takeoverStats(): TakeoverStats | null {
    const h = this.takeover?.header;
    return h
      ? { rounds: Atomics.load(h, HEARTBEAT), lends: Atomics.load(h, LENDS), takenBack: Atomics.load(h, TAKEN_BACK), handedBack: this.handBacks, yields: this.yields, parks: this.parks }
      : null;
  }

  /** Back-pressure: wait (at most 50 ms) for the thread to free submission slots, then flush into them. */
  private async waitForSpace(): Promise<void> {
    Atomics.store(this.submissions.header, PRODUCER_WAITING, 1);
    const head = this.submissions.headPosition;
    if (this.writer.flush() === 0) {
      const r = Atomics.waitAsync(this.submissions.header, Ring.HEAD, head, 50);
      if (r.async) await parkedOn(r.value);
    }
    Atomics.store(this.submissions.header, PRODUCER_WAITING, 0);
    this.wake();
  }

  /** Park until the completion ring's tail moves from `seen` (or a second passes). */
  private async park(seen: number): Promise<void> {
    const header = this.completions.header;
    Atomics.store(header, APP_WAITING, 1);
    const r = Atomics.waitAsync(header, Ring.TAIL, seen, 1000);
    if (r.async) await parkedOn(r.value);
    Atomics.store(header, APP_WAITING, 0);
  }

  /** Takeover: the application thread asks for the token (it submitted operations its rounds execute). */
  private wantToken = true;

  /**
   * The notifier with takeover: while something is outstanding it drives UCX itself whenever
   * the progress thread lends it the token (rounds of takeover-driver.ts, on microtasks, giving
   * the event loop a turn now and then: event-loop.ts turnIntervalMs), for the poll window after its last completion;
   * then it hands the token back and waits for completion records as the plain notifier does.
   */
  private async takeoverNotifier(t: TakeoverState, driver: TakeoverDriver): Promise<void> {
    const header = this.completions.header;
    let lastWork = performance.now();
    /** Rounds in a row that did nothing (idleSpin). */
    let empty = 0;
    try {
      while (!this.stopped) {
        const busy = this.active || this.writer.backlog > 0 || this.stopWaiter !== undefined;
        const seen = Atomics.load(header, Ring.TAIL);
        const delivered = this.delivered;
        if (this.progress() > 0) {
          empty = 0;
          lastWork = performance.now();
          if (this.delivered !== delivered) {
            this.poll.completionAfter(lastWork - this.lastCompletion);
            this.lastCompletion = lastWork;
          }
          // Settle what completed first: its code may post the next request (an echo's reply)
          // a few microtasks later; those turns execute it without calling UCX's progress.
          for (let turns = SETTLE_TURNS; turns > 0 && !this.stopped; turns--) {
            await undefined;
            // A round only for records still in the ring (those posted while the token was lent
            // ran in their submit: executeNow) or requests just posted, not six rounds a delivery
            // each taking and returning the token and checking the awaited receive.
            const round = this.submissions.size > 0 || driver.touched || driver.backlog > 0 ? this.takeoverRound(t, driver, false) : 0;
            if (this.progress() + Math.max(0, round) > 0) turns = SETTLE_TURNS + 1;
          }
          continue;
        }
        let r = this.takeoverRound(t, driver);
        // Waiting for a peer: after a few empty rounds on microtasks, rounds without an await
        // (idleSpin), as polling's driver spins.
        if (r === 0 && busy && ++empty > AWAITED_EMPTY_ROUNDS) {
          empty = 0;
          r = this.idleSpin(t, driver);
        }
        if (r > 0) {
          empty = 0;
          lastWork = performance.now(); // progress() delivers its completions next
        }
        if (r >= 0) {
          if (performance.now() - lastWork < this.poll.windowMs || driver.backlog > 0) {
            // Nothing awaited (the poll window after the last completion): the application may
            // wait for a timer or I/O, which then gets its turn as before.
            if (turnDue(turnIntervalMs(busy))) {
              this.yields++;
              await yieldToEventLoop();
            } else await undefined;
            continue;
          }
          // Nothing for a while: the progress thread takes over (and sleeps until UCX has an
          // event); we ask again when we submit.
          this.wantToken = false;
          this.handBack(t);
        }
        if (!busy) break;
        if (this.writer.backlog > 0) {
          await this.waitForSpace();
          continue;
        }
        if (this.wantToken && t.token === Token.THREAD && Atomics.load(t.header, WANT_APP) === 0) {
          Atomics.store(t.header, WANT_APP, 1);
          this.wake(); // the thread lends at its next round, or before it would sleep
        }
        // Park until a completion comes, or the token (a lend is a completion record too).
        this.parks++;
        await this.park(seen);
      }
    } finally {
      this.notifierRunning = false;
      // Nobody here takes rounds now: the token must not stay lent (the thread would take it
      // back only after TAKE_BACK_MS).
      Atomics.store(t.header, WANT_APP, 0);
      this.handBack(t);
    }
  }

  /**
   * Takeover rounds without an await between them, until one does something (returns what it
   * did), the token is not lent to us any more (-1), the thread wrote a completion record (0),
   * or IDLE_SPIN_MS pass (0). Each `await` of the notifier's loop is a Promise and its reaction:
   * awaited after every empty round, a side waiting for its peer's reply churned garbage (V8
   * scavenges) and took a microtask turn between two looks at UCX, as polling's driver did
   * before its idle spin (idle-spin.ts).
   */
  private idleSpin(t: TakeoverState, driver: TakeoverDriver): number {
    // The token is taken once for the whole spin (the thread's take-back only needs a beat
    // within TAKE_BACK_MS); a WANT_THREAD ends the spin at its next round.
    if (!t.takeLent(Token.APP)) return -1;
    Atomics.add(t.header, HEARTBEAT, 1);
    const until = performance.now() + IDLE_SPIN_MS;
    let n = 0;
    try {
      for (let round = 1; ; round++) {
        n = driver.round(true);
        if (n !== 0 || driver.needThread || Atomics.load(t.header, WANT_THREAD) !== 0 || this.completions.size > 0) break;
        if ((round & 15) === 0 && performance.now() > until) break;
      }
    } finally {
      this.releaseToken(t, driver);
    }
    return n;
  }

  /** One round of the driver if the token is lent to us: -1 if it is not, else what the round did. */
  private takeoverRound(t: TakeoverState, driver: TakeoverDriver, progressUcx = true): number {
    if (!t.takeLent(Token.APP)) return -1;
    Atomics.add(t.header, HEARTBEAT, 1);
    let n = 0;
    try {
      n = driver.round(progressUcx);
    } finally {
      this.releaseToken(t, driver);
    }
    return n;
  }

  /** The end of a round (the token is APP, ours): lend it on to ourselves, or give it back to the thread. */
  private releaseToken(t: TakeoverState, driver: TakeoverDriver): void {
    if (driver.needThread || Atomics.load(t.header, WANT_THREAD) !== 0) {
      // A record only the thread executes, or work a callback left it (an endpoint error, an
      // active message): we ask again once we submit an operation of ours.
      this.wantToken = false;
      this.handBacks++;
      t.setToken(Token.THREAD);
    } else Atomics.store(t.header, TOKEN, Token.LENT); // no notify: the thread sleeps on, TAKE_BACK_MS at a time
  }

  /** If the token is lent to us, give it back to the progress thread. */
  private handBack(t: TakeoverState): void {
    if (t.takeLent(Token.THREAD)) {
      this.handBacks++;
      Atomics.notify(t.header, TOKEN);
    }
  }

  /** @internal The process is exiting: make the thread return now, without freeing UCX. */
  abandon(): void {
    if (this.stopped) return;
    Atomics.store(this.submissions.header, PROCESS_EXITING, 1);
    this.signalWhileAlive(false); // the thread may be destroying the worker (exit during a close)
  }

  async stop(): Promise<void> {
    if (this.stopped) return;
    const stoppedPromise = new Promise<void>((resolve) => (this.stopWaiter = resolve));
    if (this.port) this.port.postMessage(submission({ op: Op.Stop }));
    else this.writer.write(submission({ op: Op.Stop }));
    this.wake();
    this.thread.ref();
    this.ensureNotifier();
    // A timer, not only the thread's ref(), keeps the process alive until Stopped comes back:
    // under Bun, a CLI closing its worker after an endpoint error exited with status 0 in the
    // middle of this wait (event loop empty), instead of reporting its error.
    const keepAlive = setInterval(() => {}, 1000);
    try {
      await stoppedPromise;
    } finally {
      clearInterval(keepAlive);
    }
    this.stopped = true;
    // The notifier may have parked on the completion ring again after delivering Stopped (it
    // waits up to a second): wake it to see `stopped` and end. Left parked, it counted as a
    // parked loop (event-loop.ts) for that second after the close, and every other loop of this
    // thread turned the event loop every 50 us meanwhile (Bun, whose notifier parks instead of
    // taking the token over: 1,004 ms after a close).
    Atomics.notify(this.completions.header, Ring.TAIL);
    liveEngines.delete(this);
    this.stopWaiter = undefined;
    this.port?.close();
    this.payloadPort.close();
    this.payloads.clear();
    // The job returns by itself after Stopped; wait for it so no native code runs on after us.
    // The end may already have happened (it is watched from the start), and the timer that
    // bounds the wait is a real one: with an unref'd timer and a thread already gone, nothing
    // kept the process alive, and a CLI under Bun exited with status 0 right here too (both
    // seen 2026-11-23 in cli/transfer's killed-receiver test, together about one run in six).
    if (!this.thread.done) {
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, 2000);
        void this.thread.ended.then(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
  }
}
