/**
 * What `Worker.create` accepts, checked, and the engine options it makes of them: the spin
 * budgets a progress mode starts with, from the core count.
 */
import { cpus } from "node:os";
import { getEnv } from "../../ffi/index.ts";
import { DEFAULT_AM_LIMITS, type AmQueueLimits } from "../am/inbox.ts";
import { DEFAULT_FEATURES, type Feature } from "../context.ts";
import type { ErrorHandling } from "../endpoint.ts";
import type { EngineOptions, ProgressMode } from "../engine/engine.ts";
import { invalidArgument } from "../errors.ts";
import type { ConnectProtocol } from "../listener.ts";
import type { ProtocolOptions } from "../proto/config.ts";
import type { MultiLimits } from "../receive-options.ts";
import { atomicsOverActiveMessages, requestHandlesFrom } from "../ucx-version-gaps.ts";

export interface WorkerOptions {
  /**
   * `thread`: a progress thread; `polling`: call `progress()`; `blocking`: `wait()`;
   * `hybrid`: this thread drives UCX by itself while work is outstanding (spinning briefly,
   * then parked on UCX's event fd): polling's latency without a loop of your own.
   * Default: `hybrid` on every runtime (see `defaultProgressMode()`); `thread` when UCX must
   * also move while your own JavaScript runs (a large transfer in flight during a computation).
   */
  readonly progressMode?: ProgressMode;
  /**
   * Error handling of endpoints unless an endpoint says otherwise. `peer` (default): UCX
   * detects a dead peer and pending requests reject; on UCX 1.13 this restricts two processes
   * on one host to tcp. `none`: shared memory, but a dead peer is not detected. See README.
   */
  readonly errorHandling?: ErrorHandling;
  /** UCP features; default tag, stream, wakeup, am, rma, amo32, amo64. */
  readonly features?: readonly Feature[];
  /** UCX configuration for this worker's context, e.g. `{ TLS: "tcp" }`. */
  readonly config?: Readonly<Record<string, string | number | boolean>>;
  /** Slots in the submission ring (default 1024); a full ring queues submissions in order. */
  readonly ringSize?: number;
  /** Thread mode: how long the application thread spins for a completion before parking (µs; default 20, under 4 cores used only while such spins catch completions; a value you set is always used); hybrid mode: how long it keeps progressing UCX after the last event (default 100 µs on fewer than 4 cores, 200 µs on more, growing up to 1 ms while events come in shorter gaps than that; a value you set is used as it is). */
  readonly spinMicroseconds?: number;
  /** Thread mode: how long the progress thread busy-polls after its last work (µs; default 5 under 4 cores, 50 from 4). */
  readonly threadSpinMicroseconds?: number;
  /**
   * Thread mode: while the application awaits something, let the progress thread spin as long as
   * the last gap between its bursts of work (up to 10 ms, at most cores - 1 such threads per
   * process), and hand its core to the application thread it wakes (thread-spin-policy.ts).
   * Default: on from 4 cores (unless threadSpinMicroseconds is set). Under 4 cores it is a
   * trade: on 2 cores it made two processes' 8 B round trip 1.5-2.5x faster but windowed
   * 8 B-64 KiB bandwidth 20-50 % lower (the spinning threads of two processes take both cores
   * from the application threads), so it is off there unless you turn it on.
   */
  readonly adaptiveThreadSpin?: boolean;
  /**
   * Thread mode: while the application thread waits for a result it drives UCX itself, as
   * polling mode does, and the progress thread sleeps; the thread takes over again when the
   * application runs other code for 2 ms, needs an operation only the thread performs (connect,
   * close, flush, RMA, multi-buffer, ...), or nothing happens for 1 ms (up to 10 ms while
   * completions come in longer gaps, as a busy machine's replies do). Round trips then cost
   * no thread wake-up (2 cores, two processes, 8 B: median 13 us against 320-390 without).
   * Default: on, unless the environment variable UCX_TS_TAKEOVER is 0.
   * Not on Bun (its FFI cannot run a callback on a thread other than the one that made it, and
   * UCX calls the endpoint error handler on whichever thread progresses it): ignored there.
   */
  readonly takeover?: boolean;
  /**
   * Thread mode: queue submissions in the shared ring for the progress thread to take in
   * batches (default true, UCXX's "delayed submission"); false posts each as a message.
   */
  readonly delayedSubmission?: boolean;
  /** Default limits of this worker's multi-buffer receives (`recvMulti`). */
  readonly multi?: MultiLimits;
  /** Bounds of each endpoint's queue of unread active messages. */
  readonly am?: AmQueueLimits;
  /**
   * How sends' bytes reach UCX (inline, bounce, zcopy), chosen per size from cost lines: costs,
   * forced protocols, the bounce pool. See README, "Protocol selection", and `ucx-ts proto-info`.
   */
  readonly protocols?: ProtocolOptions;
}

/** An optional boolean option: absent, or true or false (anything else is a typed error). */
function checkBoolean(name: string, value: unknown): void {
  if (value !== undefined && typeof value !== "boolean") throw invalidArgument(`${name} must be true or false, got ${String(value)}`);
}

/**
 * The longest the progress thread learns to spin while the application awaits something
 * (thread-spin-policy.ts). Two processes' 8 B ping-pong on 2 cores, median round trip (same
 * hour): 2 ms 269-317 us, 10 ms 150-176, 100 ms 166-202; with 10 ms the p90 was lowest too.
 */
const THREAD_SPIN_MAX_US = 10_000;

/** Spin budgets from the core count: on 2 cores a spinning thread can starve the other one. */
function defaultSpins(): { app: number; thread: number; hybrid: number; adaptive: boolean; learnThread: boolean; takeBackMaxMs: number } {
  const cores = cpus().length;
  // Hybrid mode has no progress thread of its own to starve: its application thread may spin
  // long enough for a round trip's reply to come back (10-30 us in polling mode here).
  // Thread mode's application spin: always on from 4 cores (a spare core makes it cheap, and the
  // fastest round trips need it); under 4 adaptive (spin-policy.ts), as it stops by itself where
  // it costs (between two processes on 2 cores).
  // The progress thread's learnt spin: from 4 cores (see WorkerOptions.adaptiveThreadSpin).
  // Takeover's looks at the application thread's rounds (EngineOptions.takeBackMaxMs): each
  // wakes the progress thread, which on 2 cores preempts a thread spinning for a reply.
  return cores >= 4
    ? { app: 20, thread: 50, hybrid: 200, adaptive: false, learnThread: true, takeBackMaxMs: 2 }
    : { app: 20, thread: 5, hybrid: 100, adaptive: true, learnThread: false, takeBackMaxMs: 16 };
}

/**
 * The progress mode a worker gets when none is asked for: `hybrid`, on every runtime. It pays
 * no hop between threads per operation (the application thread drives UCX while something is
 * awaited, then parks on UCX's event fd), as UCX-Py's default event-loop progress does. Thread
 * mode avoids the hop only through takeover, which Bun's FFI cannot do (its thread-mode round
 * trip is two wake-ups, 124-163 us against hybrid's 1.9), and where it can (Node, Deno) it was
 * slower than hybrid on nearly every row of `npm run bench -- --quick` once hybrid took the
 * direct tag path (2026-12-07, three runs, 2 cores): 8 B round trip Node 4.4-4.6 against
 * 3.3-3.5 us, Deno 4.7-6.1 against 2.6-2.7 (polling 2.9-3.1, 2.2-2.3: hybrid is issue 21's
 * "default at most 1.5x polling", thread is not); 8 B windows and active messages 1.5-3x
 * faster in hybrid, 64 KiB bandwidth mostly; only Node's 1 MiB tag bandwidth was higher in
 * thread mode (12.0-15.0 against 9.0-12.2 GB/s). Thread mode remains for work whose transfers
 * must move while the application's own JavaScript runs: hybrid progresses only while the
 * application thread is free (docs/progress-modes.md).
 */
export function defaultProgressMode(): ProgressMode {
  return "hybrid";
}

/** The engine options of a worker in `mode` (the bounce pool is added once it exists). */
export function engineOptionsFrom(options: WorkerOptions, mode: ProgressMode): EngineOptions {
  const spins = defaultSpins();
  const engineOptions: EngineOptions = {
    features: options.features ?? DEFAULT_FEATURES,
    config: options.config ?? {},
    ringSize: options.ringSize ?? 1024,
    spinMicroseconds: options.spinMicroseconds ?? (mode === "hybrid" ? spins.hybrid : spins.app),
    // Under 4 cores the default budget is used while it pays; a budget the caller chose, always.
    // Hybrid mode: the default budget grows to cover short gaps between events (hybrid-spin-policy.ts).
    adaptiveSpin: options.spinMicroseconds === undefined && (mode === "hybrid" || spins.adaptive),
    threadSpinMicroseconds: options.threadSpinMicroseconds ?? spins.thread,
    adaptiveThreadSpin: options.adaptiveThreadSpin ?? (options.threadSpinMicroseconds === undefined && spins.learnThread),
    threadSpinMaxMicroseconds: THREAD_SPIN_MAX_US,
    delayedSubmission: options.delayedSubmission ?? true,
    takeover: options.takeover ?? getEnv("UCX_TS_TAKEOVER") !== "0",
    // UCX_TS_TAKE_BACK_MAX_MS: the default's A/B (bench), not a user setting.
    takeBackMaxMs: Number(getEnv("UCX_TS_TAKE_BACK_MAX_MS") ?? "") || spins.takeBackMaxMs,
    // UCX_TS_DIRECT_TAGS=0 sends every tag operation through the ring (A/B against the direct path).
    directTags: getEnv("UCX_TS_DIRECT_TAGS") !== "0",
    // UCX_TS_REQUEST_HANDLES=1 gives them on any UCX (tests), 0 on none.
    requestHandlesFrom: requestHandlesFrom(options.config ?? {}, getEnv("UCX_TS_REQUEST_HANDLES")),
    // UCX_TS_ATOMICS_OVER_AM=1 carries them over active messages on any UCX (tests), 0 on none.
    atomicsOverActiveMessages: atomicsOverActiveMessages(options.config ?? {}, getEnv("UCX_TS_ATOMICS_OVER_AM")),
  };
  if (!(engineOptions.ringSize >= 1 && engineOptions.ringSize <= 1 << 20)) throw invalidArgument("ringSize must be 1..2^20");
  checkBoolean("takeover", options.takeover);
  checkBoolean("adaptiveThreadSpin", options.adaptiveThreadSpin);
  return engineOptions;
}

/** The bounds of each endpoint's queue of unread active messages, checked. */
export function amLimitsFrom(options: WorkerOptions): Required<AmQueueLimits> {
  const am = { ...DEFAULT_AM_LIMITS, ...options.am };
  if (!(Number.isInteger(am.maxQueuedMessages) && am.maxQueuedMessages >= 0 && Number.isSafeInteger(am.maxQueuedBytes) && am.maxQueuedBytes >= 0)) {
    throw invalidArgument("am.maxQueuedMessages and am.maxQueuedBytes must be non-negative integers");
  }
  return am;
}

export function checkErrorHandling(errorHandling: unknown): ErrorHandling {
  if (errorHandling !== "peer" && errorHandling !== "none") throw invalidArgument(`errorHandling must be peer or none`);
  return errorHandling;
}

export function checkProtocol(protocol: unknown): ConnectProtocol {
  if (protocol === undefined) return "hello";
  if (protocol !== "hello" && protocol !== "ucx") throw invalidArgument(`protocol must be 'hello' or 'ucx', got '${String(protocol)}'`);
  return protocol;
}
