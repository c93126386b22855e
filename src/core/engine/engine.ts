/**
 * What the application-thread objects (Worker, Endpoint, Listener) see of the progress
 * engine, whatever the progress mode: they submit records and receive completion records.
 *
 * - `thread` (default): a progress thread owns UCX; records cross SharedArrayBuffer rings
 *   (`threaded-engine.ts`, `progress-thread.ts`).
 * - `polling`: the application thread owns UCX and drives it with `progress()`
 *   (`inline-engine.ts`).
 * - `blocking`: as polling, plus `wait()`, which sleeps in `ucp_worker_wait` until UCX has
 *   an event.
 * - `hybrid`: as polling, driven by itself: it progresses UCX while work is near and parks
 *   on UCX's event fd (watched by a thread that never calls UCX) when it is not
 *   (`hybrid-engine.ts`).
 */
import type { DirectTags } from "./direct-tags.ts";
import type { RequestHandles } from "./request-handles.ts";
import type { AmAtomics } from "./am-atomics.ts";
import type { Payload } from "./payload.ts";
import type { Ring } from "./ring.ts";

/**
 * The progress modes, in the order help texts and error messages list them. Every list of valid
 * modes (Worker's check, calibration files, the CLI's choices, UCX_TS_UCG_PROGRESS) is this one.
 */
export const PROGRESS_MODES = ["thread", "polling", "blocking", "hybrid"] as const;

export type ProgressMode = (typeof PROGRESS_MODES)[number];

/** Whether `value` names a progress mode (for checking what a user or a file gave). */
export function isProgressMode(value: unknown): value is ProgressMode {
  return (PROGRESS_MODES as readonly unknown[]).includes(value);
}

/** The fields of one submission (see records.ts); absent numbers are 0. */
export interface Submission {
  op: number;
  request: number;
  target: number;
  address: number;
  length: number;
  handle: number;
  flags: number;
  tagLo: number;
  tagHi: number;
  maskLo: number;
  maskHi: number;
  /** An inline send's bytes, copied into the record (at most INLINE_CAPACITY). */
  inline?: Uint8Array;
}

/**
 * A submission with every field present (absent numbers 0), built field by field: an object
 * spread here, plus one more in Worker.request, cost more than the UCX call of a small send.
 * Each call makes a new object, which Worker.request may complete in place.
 */
export function submission(f: Partial<Submission> & { op: number }): Submission {
  return {
    op: f.op,
    request: f.request ?? 0,
    target: f.target ?? 0,
    address: f.address ?? 0,
    length: f.length ?? 0,
    handle: f.handle ?? 0,
    flags: f.flags ?? 0,
    tagLo: f.tagLo ?? 0,
    tagHi: f.tagHi ?? 0,
    maskLo: f.maskLo ?? 0,
    maskHi: f.maskHi ?? 0,
    inline: f.inline,
  };
}

/**
 * The one submission the operations of every message (tag sends and receives) fill and submit,
 * reset to `op` and zeros: a fresh object per operation (and the literal it was built from) was
 * ~200 B of garbage per message on Node. It serves every call because no engine keeps it: submit()
 * writes it into a ring record, or queues a copy of it (ring full), or posts a clone of it, before
 * it returns. So: fill it and submit it at once, with no other draft in between.
 */
export function draftSubmission(op: number): Submission {
  const s = draft;
  s.op = op;
  s.request = 0;
  s.target = 0;
  s.address = 0;
  s.length = 0;
  s.handle = 0;
  s.flags = 0;
  s.tagLo = 0;
  s.tagHi = 0;
  s.maskLo = 0;
  s.maskHi = 0;
  s.inline = undefined;
  return s;
}

const draft: Submission = submission({ op: 0 });

/** Called for every completion record, with the ring and word index to read it at. */
export type CompletionHandler = (ring: Ring, word: number) => void;

export interface Engine {
  readonly mode: ProgressMode;
  /**
   * Queue one submission. Never drops: a full ring queues it until there is space. `now`: hand
   * the ring to UCX at once instead of at the next progress() (a send: polling, blocking and
   * hybrid modes; thread mode's thread takes it as soon as it can anyway).
   *
   * Returns true when `s` was executed now and succeeded in place (UCX finished it inside its
   * posting call: an eager send over shared memory): its completion is then not delivered, the
   * caller completes the request itself with UCS_OK and `inPlaceValue`. Only while no earlier
   * completion waits to be delivered, so requests still settle in the order they completed.
   */
  submit(s: Submission, now?: boolean): boolean;
  /** The value (a send's length) of the last submission that completed in place. */
  readonly inPlaceValue: number;
  /** Records submitted but not yet in the ring (back-pressure). */
  readonly backlog: number;
  /** Polling/blocking: run UCX once and deliver completions. Thread: deliver completions. */
  progress(): number;
  /**
   * Polling/blocking/hybrid: progress() without calling UCX's progress: execute the queued
   * submissions and deliver the completions already written (a driver's turns right after a
   * round that delivered, see event-loop.ts SETTLE_TURNS). Thread mode: progress().
   */
  settle(): number;
  /** Blocking mode: sleep until UCX has an event (or `timeoutMs` passes), then progress. */
  wait(timeoutMs?: number): number;
  /** Thread mode: keep delivering completions while work is outstanding (`active` true). */
  setActive(active: boolean): void;
  /** Stop the engine: cancels everything in flight, frees UCX. */
  stop(): Promise<void>;
  /**
   * The payload of multi-receive `id` (its buffers, or its error), delivered before its
   * completion record; undefined if there is none. Each payload is taken once.
   */
  takePayload(id: number): Payload | undefined;
  /**
   * The application is done with an active message's memory (`AmMessage.release()`): move it
   * (transfer, detaching every view of it here) to the executor, which reuses it for later
   * messages instead of allocating (am-buffer-pool.ts).
   */
  reuseActiveMessageBuffer(buffer: ArrayBuffer): void;
  /**
   * Polling, blocking and hybrid modes: tag sends and receives that the caller hands to UCX
   * itself (direct-tags.ts); absent in thread mode. Use it only when `directOpen()` says so
   * (hybrid: only while its driver runs unparked).
   */
  readonly direct?: DirectTags;
  directOpen?(): boolean;
  /** The executor's memory handles for single requests (request-handles.ts), where it runs on this thread. */
  readonly requestHandles?: RequestHandles;
  /** The executor's atomics over active messages (am-atomics.ts), where it runs on this thread. */
  readonly amAtomics?: AmAtomics;
}

export interface EngineOptions {
  readonly features: readonly import("../context.ts").Feature[];
  readonly config: Readonly<Record<string, string | number | boolean>>;
  /** Slots in the submission ring (and twice that in the completion ring). */
  readonly ringSize: number;
  /** Thread mode: microseconds the application thread spins for a completion before parking. */
  readonly spinMicroseconds: number;
  /**
   * Thread mode: use that spin only while it catches completions (the default budget;
   * spin-policy.ts). Hybrid mode: let the spin grow to cover short gaps between events
   * (hybrid-spin-policy.ts).
   */
  readonly adaptiveSpin?: boolean;
  /** Thread mode: microseconds the progress thread stays busy-polling after its last work. */
  readonly threadSpinMicroseconds: number;
  /**
   * Thread mode: learn the progress thread's spin, from threadSpinMicroseconds up to
   * threadSpinMaxMicroseconds, while the application awaits something (thread-spin-policy.ts).
   */
  readonly adaptiveThreadSpin?: boolean;
  readonly threadSpinMaxMicroseconds?: number;
  /**
   * Thread mode: true (default) queues submissions in the shared ring, drained by the progress
   * thread in batches (UCXX's delayed submission). false sends each one as a message that the
   * thread takes one by one, for measuring what the ring buys.
   */
  readonly delayedSubmission: boolean;
  /** The bounce pool's memory (proto/bounce-pool.ts), registered by the executor; shared in thread mode. */
  readonly bouncePool?: ArrayBufferLike;
  /** Thread mode: let the application thread drive UCX itself while it waits (takeover-state.ts). */
  readonly takeover?: boolean;
  /**
   * Takeover: the longest the progress thread sleeps between looks at whether the application
   * thread still takes its rounds while the token is lent (progress-thread.ts; from 2 ms after
   * the lend, doubled at each look that finds them coming). A look is a wake-up of the progress
   * thread, and with no idle core it preempts a thread that spins for a reply: at one every 2 ms,
   * 1.1-1.2 % of Node's 8 B round trips between two processes on 2 cores took over 5x the median
   * (p99 9.5-10x), 0.6-0.75 % (p99 3.6-4x) with one every 20 ms (2026-12-07). The price is
   * how late UCX moves again once the application thread stops taking rounds without handing
   * the token back (its own code runs): up to this long. Default 16 ms under 4 cores, 2 from 4
   * (a spare core makes a look cheap).
   */
  readonly takeBackMaxMs?: number;
  /** Polling and blocking modes: offer the direct tag path (direct-tags.ts); default true. */
  readonly directTags?: boolean;
  /**
   * The smallest send or receive given a memory handle of its own (request-handles.ts: UCX >=
   * 1.16 without a registration cache); absent or Infinity: none is.
   */
  readonly requestHandlesFrom?: number;
  /** Atomics on peer-error-handling endpoints go over active messages (am-atomics.ts); default false. */
  readonly atomicsOverActiveMessages?: boolean;
  /** Thread mode with takeover: the shared state's memory, made by the engine for its thread. */
  readonly takeoverState?: SharedArrayBuffer;
}
