/**
 * The progress thread's loop (thread mode), a job on a pooled engine thread (thread-pool.ts,
 * engine-thread.ts). It owns the UCX context and worker
 * (UCS_THREAD_MODE_SINGLE: no other thread calls UCX's data path; with takeover SERIALIZED, see
 * below), and loops:
 *
 *   drain the submission ring -> ucp_worker_progress -> check requests in flight ->
 *   write completions -> Atomics.notify the application thread.
 *
 * While there is work it spins; after `threadSpinMicroseconds` without any, it sleeps:
 * it raises CONSUMER_SLEEPING, looks at the ring once more (a submission published before the
 * flag was seen must not be missed), arms the worker and sleeps in `ucp_worker_wait`. The
 * application thread calls `ucp_worker_signal` when it submits while the flag is up, so no
 * wake-up is lost (ffi-facts.md), and an idle thread costs no CPU.
 *
 * With takeover (takeover-state.ts) it lends the worker to the application thread when that
 * thread asks and nothing of its own is in flight, and waits, its event loop free, until the
 * token comes back or the application thread's rounds stop (it then takes it back).
 *
 * It stops cooperatively on Op.Stop (Deno cannot terminate a thread that is inside a C call or
 * spinning, ffi-facts.md): it destroys UCX, reports Stopped, and returns; the thread then
 * waits for its next job (a later worker's).
 */
import { parentPort, receiveMessageOnPort, type MessagePort } from "../../ffi/thread.ts";
import { UcxError } from "../errors.ts";
import { CompletionWriter } from "./completion-writer.ts";
import type { EngineOptions, Submission } from "./engine.ts";
import { Executor } from "./executor.ts";
import { ARM_BUSY_BACKOFF_MS } from "./arm-backoff.ts";
import { AtRestCollector, heapCollector } from "./heap-collector.ts";
import { CompletionKind, Op, SUB } from "./records.ts";
import { ucx } from "../library.ts";
import { APP_ACTIVE, APP_WAITING, CONSUMER_SLEEPING, PROCESS_EXITING, Ring, SIGNALERS, WORKER_GOING } from "./ring.ts";
import { SUBMISSION_BYTES } from "./records.ts";
import { SubmissionWriter } from "./submission-writer.ts";
import { SpinSlots, ThreadSpinPolicy } from "./thread-spin-policy.ts";
import { HEARTBEAT, LENDS, TAKEN_BACK, TakeoverState, Token, TOKEN, WANT_APP, WANT_THREAD } from "./takeover-state.ts";

export interface ThreadData {
  submissions: SharedArrayBuffer;
  completions: SharedArrayBuffer;
  options: EngineOptions;
  /** Present when delayed submission is off: submissions arrive one message at a time. */
  port?: MessagePort;
  /**
   * Multi-receive payloads go back here, their ArrayBuffers transferred (moved, not copied); the
   * active messages' memory the application released comes the other way.
   */
  payloads: MessagePort;
  /** The process's spin slots (thread-spin-policy.ts). */
  spinSlots: SharedArrayBuffer;
}

const UCS_OK = 0;
/**
 * Takeover: while the token is lent, the thread looks this many ms after the lend whether the
 * application thread still takes rounds (HEARTBEAT); if not (it runs other code), it takes the
 * token back so that UCX keeps moving. While the rounds keep coming it looks less and less
 * often, up to EngineOptions.takeBackMaxMs apart (see there: each look is a wake-up).
 */
const TAKE_BACK_MS = 2;

export async function runProgressThread(data: ThreadData): Promise<void> {
  const submissions = new Ring(data.submissions);
  const completions = new Ring(data.completions);
  const writer = new CompletionWriter(completions);

  let executor: Executor;
  try {
    executor = new Executor(
      data.options,
      writer,
      // Several payloads (a batch of active messages) go as one message: one postMessage each
      // cost more than the rest of a small message's way here.
      (p) => data.payloads.postMessage(p, Array.isArray(p) ? p.flatMap((one) => one.buffers ?? []) : (p.buffers ?? [])),
      // Active messages' memory the application released comes back on the same port.
      () => receiveMessageOnPort(data.payloads)?.message as ArrayBuffer | undefined,
    );
  } catch (e) {
    const err = e as UcxError;
    parentPort!.postMessage({ type: "error", code: err.code ?? "UCX_TS_CLOSED", message: err.message, status: err.status });
    return closePorts(data);
  }
  parentPort!.postMessage({ type: "ready", worker: executor.worker });

  const o = data.options;
  const u = ucx();
  const sub = submissions.header;
  const spin = new ThreadSpinPolicy(
    o.threadSpinMicroseconds / 1000,
    (o.threadSpinMaxMicroseconds ?? 0) / 1000,
    o.adaptiveThreadSpin ?? false,
    new SpinSlots(data.spinSlots),
    performance.now(),
  );
  const appActive = () => Atomics.load(sub, APP_ACTIVE) !== 0;
  // Measured with the learnt spin only (its point is a spinning thread giving way).
  const yieldToApp = o.adaptiveThreadSpin ?? false;
  let stopping = false;
  const takeover = o.takeoverState ? new TakeoverState(o.takeoverState) : undefined;

  /**
   * Takeover: the token is lent; wait, event loop free, until it comes back (the application
   * thread hands it back, or stops taking rounds and we take it). The event loop must be free:
   * a callback of ours that UCX calls on the application thread runs here meanwhile (koffi
   * and Deno queue it to this thread and the caller waits; Backend.callback).
   */
  const lentWait = async (t: TakeoverState): Promise<void> => {
    const h = t.header;
    let beat = Atomics.load(h, HEARTBEAT);
    // A pending Atomics.waitAsync does not keep a thread's event loop alive: without a timer the
    // thread ended here, its worker lent out for good.
    const keepAlive = setInterval(() => {}, 1 << 30);
    try {
      await waitForToken(t, h, beat);
    } finally {
      clearInterval(keepAlive);
    }
  };
  const takeBackMaxMs = Math.max(TAKE_BACK_MS, o.takeBackMaxMs ?? TAKE_BACK_MS);
  const waitForToken = async (t: TakeoverState, h: Int32Array, beat: number): Promise<void> => {
    let look = TAKE_BACK_MS;
    for (;;) {
      const token = Atomics.load(h, TOKEN);
      if (token === Token.THREAD || Atomics.load(sub, PROCESS_EXITING) !== 0) return;
      const r = Atomics.waitAsync(h, TOKEN, token, look);
      const result = r.async ? await r.value : r.value;
      if (Atomics.load(h, TOKEN) === Token.THREAD) return;
      if (result !== "timed-out") continue;
      const b = Atomics.load(h, HEARTBEAT);
      if (b === beat && t.takeLent(Token.THREAD)) {
        Atomics.add(h, TAKEN_BACK, 1);
        return;
      }
      beat = b;
      // The rounds keep coming: look half as often next time.
      look = Math.min(2 * look, takeBackMaxMs);
    }
  };
  /** Takeover: the application thread asked for the token and nothing here needs this thread. */
  const mayLend = (t: TakeoverState) => Atomics.load(t.header, WANT_APP) !== 0 && executor.canLend() && writer.backlog === 0 && !stopping;

  const execute = (ring: Ring, w: number) => {
    if (ring.u32[w + SUB.op] === Op.Stop) stopping = true;
    else executor.execute(ring, w);
  };
  const fromRing = (w: number) => execute(submissions, w);

  // Delayed submission off: take each posted submission at once, through a one-slot ring so
  // the executor reads the same record format.
  const port = data.port;
  const single = Ring.create(1, SUBMISSION_BYTES, false);
  const singleWriter = new SubmissionWriter(single);
  const fromSingle = (w: number) => execute(single, w);
  const takeMessages = (): number => {
    let n = 0;
    for (let m = receiveMessageOnPort(port!); m; m = receiveMessageOnPort(port!)) {
      singleWriter.write(m.message as Submission);
      n += single.consume(fromSingle);
      if (stopping) break;
    }
    return n;
  };
  const takeSubmissions = port ? takeMessages : () => submissions.consume(fromRing);
  const nothingQueued = port ? () => true : () => submissions.size === 0;

  /** No arm before this: the last one found UCX busy (see ARM_BUSY_BACKOFF_MS). */
  let armAfter = 0;
  // This thread's heap, collected now and then as it goes to sleep (heap-collector.ts).
  const heap = new AtRestCollector(heapCollector(), performance.now());
  for (;;) {
    // The process is exiting with this worker still open: leave UCX to the OS and return, so
    // the runtime can end this thread (Node waits for a thread stuck in ucp_worker_wait).
    if (Atomics.load(sub, PROCESS_EXITING) !== 0) return closePorts(data);
    if (takeover && mayLend(takeover)) {
      Atomics.store(takeover.header, WANT_APP, 0);
      Atomics.store(takeover.header, WANT_THREAD, 0);
      spin.releaseSlot();
      takeover.setToken(Token.LENT);
      Atomics.add(takeover.header, LENDS, 1);
      // The application thread may be parked waiting for completions: this wakes it to take over.
      writer.write({ kind: CompletionKind.TokenLent, id: 0, status: UCS_OK, value: 0, tagLo: 0, tagHi: 0, aux: 0 });
      writer.takeWritten();
      Atomics.notify(completions.header, Ring.TAIL);
      await lentWait(takeover);
      spin.worked(performance.now(), appActive());
      continue;
    }
    let work = takeSubmissions();
    if (stopping) break;
    work += executor.progress();
    writer.flush();
    if (writer.takeWritten() > 0) {
      Atomics.notify(completions.header, Ring.TAIL);
      // The application thread was parked and has just been woken: give it this core now. A
      // spinning progress thread (thread-spin-policy.ts) otherwise held the core the woken
      // thread needed, on 2 cores for a whole time slice now and then: two processes' 8 B
      // ping-pong, mean round trip 217-355 us with this against 438-589 without (and 345-592
      // before the learnt spin), same hour. Where no other thread waits to run it returns at once.
      if (yieldToApp && Atomics.load(completions.header, APP_WAITING) !== 0) u.sched_yield();
      work++;
    }
    if (work > 0 || writer.backlog > 0) {
      spin.worked(performance.now(), appActive());
      heap.work();
      continue;
    }
    const now = performance.now();
    if (spin.idle(now, appActive())) continue;
    // UCX said busy at the last arm: progress a while before arming again (ARM_BUSY_BACKOFF_MS).
    if (now < armAfter) continue;

    // About to sleep: collect this thread's heap if it is time; work that arrived meanwhile is
    // seen below (the flag is not up yet, so no one signals).
    heap.rest(now);
    // Idle: announce the sleep, then re-check the ring, then arm; any of the three seeing work
    // keeps us awake.
    Atomics.store(sub, CONSUMER_SLEEPING, 1);
    if (port && takeMessages() > 0) {
      Atomics.store(sub, CONSUMER_SLEEPING, 0);
      continue;
    }
    if (nothingQueued() && !(takeover && mayLend(takeover))) {
      if (executor.arm() === UCS_OK) {
        executor.wait();
        spin.woke(performance.now());
      } else armAfter = now + ARM_BUSY_BACKOFF_MS;
    }
    Atomics.store(sub, CONSUMER_SLEEPING, 0);
  }
  spin.releaseSlot();

  // No application-thread ucp_worker_signal may run into the destruction (threaded-engine.ts).
  Atomics.store(sub, WORKER_GOING, 1);
  while (Atomics.load(sub, SIGNALERS) !== 0);
  executor.destroy();
  writer.write({ kind: CompletionKind.Stopped, id: 0, status: UCS_OK, value: 0, tagLo: 0, tagHi: 0, aux: 0 });
  // The application thread drains while waiting for Stopped, so the backlog empties.
  while (writer.backlog > 0) {
    writer.flush();
    Atomics.notify(completions.header, Ring.TAIL);
  }
  Atomics.notify(completions.header, Ring.TAIL);
  closePorts(data);
}

/** The job's own ports; the thread's stays open for its next job. */
function closePorts(data: ThreadData): void {
  data.payloads.close();
  data.port?.close();
}
