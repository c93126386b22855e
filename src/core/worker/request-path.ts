/**
 * The one path every operation of a worker takes on the application thread: a request is made
 * (its buffers pinned in the table of live requests, requests.ts), its submission record goes to
 * the engine, and its completion settles the Promise. Also what a request may meet on the way
 * (an early settle, a cancel, an AbortSignal) and whether the worker has anything outstanding,
 * which decides if the engine keeps the process alive and progressing.
 */
import { abortError } from "../abort.ts";
import type { Engine, Submission } from "../engine/engine.ts";
import { submission } from "../engine/engine.ts";
import { DirectTags } from "../engine/direct-tags.ts";
import type { RequestHandles } from "../engine/request-handles.ts";
import type { AmAtomics } from "../engine/am-atomics.ts";
import { Op } from "../engine/records.ts";
import { backend } from "../../ffi/index.ts";
import { closedError, UcxError } from "../errors.ts";
import { describeStatus } from "../library.ts";
import { RequestEntry, Requests, type Settle } from "../requests.ts";
import type { UcxRequest } from "../ucx-request.ts";
import type { Submitted } from "../endpoint-host.ts";
import { enter, leave, Phase, PROFILING } from "../profile.ts";
import { mark, Mark, TURNAROUND } from "../turnaround.ts";

const UCS_OK = 0;
const UCS_ERR_CANCELED = -16;
const UCS_ERR_BUFFER_TOO_SMALL = -11;

/** The address UCX is given for `bytes` (the caller keeps `bytes` referenced until UCX is done). */
export function addressOf(bytes: Uint8Array): number {
  return backend().addressOf(bytes);
}

/**
 * The addresses of views that are posted again and again (a collective's plan binds its views
 * once and posts them every call): asking the runtime costs 150-300 ns a call under koffi
 * (2026-11-27), a WeakMap 15-20. Sound because the codebase already relies on a posted buffer's
 * address staying put while UCX holds it (an ArrayBuffer's memory does not move once its address
 * was taken); a view whose buffer was detached since reads length 0, and then nothing is
 * transferred at the stale address. Only the direct tag path uses it.
 */
const stableAddresses = new WeakMap<Uint8Array, number>();
export function cachedAddressOf(bytes: Uint8Array): number {
  let a = stableAddresses.get(bytes);
  if (a === undefined) {
    a = addressOf(bytes);
    stableAddresses.set(bytes, a);
  }
  return a;
}

export class RequestPath {
  /** Set once the engine has started (Worker.create); nothing is submitted before. */
  engine!: Engine;
  readonly requests = new Requests();
  #nextObjectId = 1;
  /** `close()` was called. */
  #closing = false;
  /** The engine has stopped: UCX is gone. */
  #stopped = false;

  constructor(
    /** Anything besides requests that keeps the worker active (listeners, AM receives and handlers). */
    private readonly otherActivity: () => boolean,
    /** Await through the worker's progress driver (progress-driver.ts). */
    private readonly settled: <T>(p: Promise<T>) => Promise<T>,
    /** `p` is settled already: the driver need not run for it (ProgressDriver.resolvedNow). */
    private readonly resolvedNow: (p: Promise<unknown>) => void = () => {},
  ) {}

  /** The worker is closing or closed: no new operation starts. */
  get closed(): boolean {
    return this.#stopped || this.#closing;
  }

  /** The engine has stopped (the end of `close()`). */
  get stopped(): boolean {
    return this.#stopped;
  }

  markClosing(): void {
    this.#closing = true;
    this.requests.markClosing();
  }

  markStopped(): void {
    this.#stopped = true;
  }

  assertOpen(): void {
    if (this.closed) throw closedError("worker");
  }

  /**
   * A closing or closed worker refuses a new operation with a rejected Promise, never a
   * synchronous throw: an operation racing `close()` ends in the caller's `await` like any
   * other. undefined: it may go ahead. (The public methods ask this first; `assertOpen` below
   * them catches what they let through, and internal callers.)
   */
  refusal(): Promise<never> | undefined {
    return this.closed ? Promise.reject(closedError("worker")) : undefined;
  }

  /** A new id for an object the executor keeps by id (endpoint, listener, memory, key). */
  newObjectId(): number {
    return this.#nextObjectId++;
  }

  /** A Promise resolved with `value`, which the worker's settled() hands back as it is (no driver round). */
  settledNow<T>(value: T): Promise<T> {
    const p = Promise.resolve(value);
    this.resolvedNow(p);
    return p;
  }

  /** Tell the engine whether anything is outstanding (it then keeps the process alive). */
  updateActive(): void {
    this.engine.setActive(this.requests.size > 0 || this.otherActivity());
  }

  /**
   * Submit `s` as a request and return its Promise. `keep` stays referenced until the
   * completion arrives; `onOk` turns a successful completion into the result.
   */
  request<T>(
    s: Omit<Submission, "request">,
    keep: unknown,
    operation: string,
    /** `keep` is handed back: a function of the caller's made once can then serve every request. */
    onOk: (value: number, tagLo: number, tagHi: number, keep: unknown) => T,
    onError?: (status: number, value: number, keep: unknown) => UcxError | undefined,
    /** Runs when the completion arrives, even for a request settled early (payload hand-over). */
    onArrive?: (id: number, status: number) => void,
    /**
     * The caller settles it at once (see Engine.submit): hand it to UCX now. Such a request that
     * the engine refuses throws without running its onArrive.
     */
    now = false,
  ): Submitted<T> {
    if (!PROFILING) return this.submit(s, keep, operation, onOk, onError, onArrive, now);
    enter(Phase.Api);
    try {
      return this.submit(s, keep, operation, onOk, onError, onArrive, now);
    } finally {
      leave();
    }
  }

  private submit<T>(
    s: Omit<Submission, "request">,
    keep: unknown,
    operation: string,
    onOk: (value: number, tagLo: number, tagHi: number, keep: unknown) => T,
    onError: ((status: number, value: number, keep: unknown) => UcxError | undefined) | undefined,
    onArrive: ((id: number, status: number) => void) | undefined,
    now: boolean,
  ): Submitted<T> {
    this.assertOpen();
    if (now) {
      const probe = this.probe;
      probe.settled = false;
      if (this.enterRequest(probe, s, true, Refused.Settle)) return this.completedInPlace(probe.id, keep, onOk, onArrive);
      // In flight: its entry takes the probe's place (nothing ran in between).
      const entry = new PromiseEntry<T>(this, keep, onArrive, operation, onOk, onError);
      this.requests.replace(probe.id, entry);
      return entry;
    }
    const entry = new PromiseEntry<T>(this, keep, onArrive, operation, onOk, onError);
    this.enterRequest(entry, s, false, Refused.Settle);
    // The entry is the Submitted itself (its id and Promise): no object per request for them.
    return entry;
  }

  /**
   * The entry a request handed to UCX now enters the table with while it is submitted: most
   * (an eager send over shared memory) complete inside the posting call, and then need no entry,
   * no settle functions and no Promise but a resolved one (~290 B less per send on Node); one
   * that does not gets its PromiseEntry in the probe's place before submit returns. The probe
   * runs nothing of the caller's (its onArrive runs after), so one serves every request.
   */
  private readonly probe = new InPlaceProbe(this);

  /** Request `id` (the probe's) completed inside its posting call: its onArrive, its result. */
  private completedInPlace<T>(
    id: number,
    keep: unknown,
    onOk: (value: number, tagLo: number, tagHi: number, keep: unknown) => T,
    onArrive: ((id: number, status: number) => void) | undefined,
  ): Submitted<T> {
    const value = this.engine.inPlaceValue; // before onArrive, which may submit again
    onArrive?.(id, UCS_OK);
    let promise: Promise<T>;
    try {
      promise = Promise.resolve(onOk(value, 0, 0, keep));
    } catch (e) {
      promise = Promise.reject(e);
    }
    // Settled already: a Promise the progress driver need not run for.
    this.resolvedNow(promise);
    return { id, promise };
  }

  /**
   * Submit `s` as a request that has already succeeded (a send whose bytes were copied), handed
   * to UCX now (Engine.submit's `now`): no Promise, no settling; `onArrive` runs when its
   * completion arrives (UCX is done with it, or failed it), which may be inside this call. A
   * submission the engine refuses throws, and then `onArrive` never runs. Returns its id.
   */
  requestDone(s: Omit<Submission, "request">, onArrive: (id: number, status: number) => void): number {
    if (PROFILING) enter(Phase.Api);
    try {
      this.assertOpen();
      const entry = new CallbackEntry(this, null, ignore, onArrive);
      entry.settled = true;
      // Refused: the caller undoes what it did for it.
      this.enterRequest(entry, s, true, Refused.Forget);
      return entry.id;
    } finally {
      if (PROFILING) leave();
    }
  }

  /**
   * Submit `s` as a request that settles through `settle` itself, with no Promise: for a caller
   * that drives progress and wants a completion the moment `progress()` delivers it (the
   * collectives' receives: a step then completes inside the progress call, without a Promise
   * and a microtask per message). `settle` runs inside the engine's delivery: it must not throw.
   * No AbortSignal: cancel by id.
   */
  requestWith(s: Omit<Submission, "request">, keep: unknown, settle: Settle): number {
    this.assertOpen();
    const entry = new CallbackEntry(this, keep, settle);
    this.enterRequest(entry, s, false, Refused.Settle);
    return entry.id;
  }

  /**
   * The one way in for every request: enter `entry` in the table, hand `s` to the engine under
   * its id (`now`: see Engine.submit) and, when UCX finished it inside the posting call, complete
   * it here; else the worker now has work outstanding. A submission the engine refuses (the
   * worker stopped) throws after `refused` undid the entry. Returns whether it completed in
   * place. Nothing is allocated here: it runs for every operation.
   */
  private enterRequest(entry: RequestEntry, s: Omit<Submission, "request">, now: boolean, refused: Refused): boolean {
    const id = this.requests.add(entry);
    let inPlace: boolean;
    try {
      // `s` is the caller's submission, written into the ring (or copied) here: not kept.
      (s as Submission).request = id;
      inPlace = this.engine.submit(s as Submission, now);
    } catch (e) {
      if (refused === Refused.Forget) this.requests.forget(id);
      else {
        this.requests.complete(id, UCS_ERR_CANCELED, 0, 0, 0);
        // The caller gets the throw: the Promise rejected with the cancel is one nobody awaits.
        if (entry instanceof PromiseEntry) entry.promise.catch(() => {});
      }
      throw e;
    }
    if (inPlace) this.requests.complete(id, UCS_OK, this.engine.inPlaceValue, 0, 0);
    else this.updateActive();
    return inPlace;
  }

  /**
   * Polling, blocking and hybrid modes: tag receive `s` (Op.TagRecv's fields) handed to UCX
   * straight from this call (DirectTags.recvRequest), or undefined when no direct call may go to
   * UCX now (then take `request`). No submission record is written and executed, no completion record written
   * and delivered (~0.3-0.5 us of a receive's JavaScript, docs/benchmarks.md): its entry in the
   * table is made as for any request, so what the table does for a receive (its endpoint's
   * failure and drain, an abort, the worker's close, buffers held until UCX reports it) holds
   * unchanged; its cancel goes to the direct request (`cancel`). The completion settles it from
   * inside the progress round that finishes it.
   */
  directReceive<T>(
    s: Omit<Submission, "request">,
    keep: unknown,
    operation: string,
    onOk: (value: number, tagLo: number, tagHi: number, keep: unknown) => T,
    onError: (status: number, value: number, keep: unknown) => UcxError | undefined,
  ): Submitted<T> | undefined {
    const direct = this.directTags();
    if (direct === undefined) return undefined;
    if (PROFILING) enter(Phase.Api);
    try {
      const entry = new PromiseEntry<T>(this, keep, undefined, operation, onOk, onError);
      this.postDirectReceive(direct, entry, s, keep);
      return entry;
    } finally {
      if (PROFILING) leave();
    }
  }

  /** Enter `entry` in the table and post its receive through `direct` (directReceive). */
  private postDirectReceive(direct: DirectTags, entry: RequestEntry, s: Omit<Submission, "request">, keep: unknown): void {
    const id = this.requests.add(entry);
    direct.requestSink = this.completeDirect;
    const r = direct.recvRequest(id, s.address, s.length, s.tagLo, s.tagHi, s.maskLo, s.maskHi, keep);
    // Refused by UCX now: it fails with UCX's status, as the ring's completion would say.
    if (r < 0) this.requests.complete(id, r, 0, 0, 0);
    else {
      entry.direct = r;
      this.updateActive();
    }
  }

  /**
   * A receive (Op.TagRecv's or Op.TagRecvIfQueued's fields in `s`) that reports into `request`
   * (ucx-request.ts: no Promise unless asked for): straight to UCX where a direct call may go now
   * (polling, blocking, hybrid while its driver runs; not `viaRing`), else through the ring. Returns its id (also given to
   * `request` for its cancel). A worker that is closing fails it at once.
   */
  receiveInto<T>(
    s: Omit<Submission, "request">,
    keep: unknown,
    request: UcxRequest<T>,
    operation: string,
    onOk: (value: number, tagLo: number, tagHi: number, keep: unknown) => T,
    onError: (status: number, value: number, keep: unknown) => UcxError | undefined,
    viaRing: boolean,
  ): number {
    if (this.closed) {
      request.fail(closedError("worker"));
      return 0;
    }
    const entry = new RequestObjectEntry<T>(this, keep, request, operation, onOk, onError);
    const direct = viaRing ? undefined : this.directTags();
    if (direct !== undefined) this.postDirectReceive(direct, entry, s, keep);
    else {
      try {
        this.enterRequest(entry, s, false, Refused.Settle);
      } catch {
        // Refused by the engine (it stopped): enterRequest failed the request with UCS_ERR_CANCELED.
      }
    }
    request.attach(entry.id);
    return entry.id;
  }

  /** DirectTags' report of a `directReceive` (made once: no closure per receive). */
  private readonly completeDirect = (id: number, status: number, value: number, tagLo: number, tagHi: number): void =>
    this.complete(id, status, value, tagLo, tagHi);

  /** Submit without a request (cancel, reject, unmap). */
  post(s: Submission): void {
    this.engine.submit(s);
  }

  /** A completion record of kind Request arrived. */
  complete(id: number, status: number, value: number, tagLo: number, tagHi: number): void {
    // A request settled early (a send that resolved on submission) ends here: the worker may
    // now be idle, which settling did not say.
    if (this.requests.complete(id, status, value, tagLo, tagHi)) this.updateActive();
  }

  /**
   * Polling and blocking modes: the engine's direct tag calls (direct-tags.ts), when one may go
   * to UCX now (the worker open, the ring's earlier records executed); else undefined, and the
   * caller takes the ring's path.
   */
  directTags(): DirectTags | undefined {
    const e = this.engine;
    return e.direct !== undefined && !this.closed && e.directOpen!() ? e.direct : undefined;
  }

  /** How many sends straight to UCX on endpoint `endpointId` UCX still holds (0 where the executor runs on another thread). */
  directSendsTo(endpointId: number): number {
    return this.engine.direct?.sendsTo(endpointId) ?? 0;
  }

  /** The executor's memory handles for single requests, where it runs on this thread (polling, blocking). */
  requestHandles(): RequestHandles | undefined {
    return this.engine.requestHandles;
  }

  /** The executor's atomics over active messages, where it runs on this thread (polling, blocking). */
  amAtomics(): AmAtomics | undefined {
    return this.engine.amAtomics;
  }

  /** Ask UCX to cancel request `id`; it then completes with UCS_ERR_CANCELED. */
  cancel(id: number): void {
    if (this.#stopped) return;
    if (DirectTags.owns(id)) return this.engine.direct?.cancel(id);
    if (!this.requests.has(id)) return;
    const direct = this.requests.directOf(id);
    if (direct !== 0) return this.engine.direct?.cancel(direct);
    this.engine.submit(submission({ op: Op.Cancel, target: id }));
  }

  /**
   * Wire an AbortSignal to cancel request `r`: it rejects with an AbortError (abort.ts) once UCX
   * reports it cancelled. With `rejectAtOnce` it rejects on abort even though UCX cannot cancel
   * the operation (stream receives): the buffer then stays with UCX until the endpoint closes.
   */
  cancelOnAbort(r: Submitted<unknown>, signal: AbortSignal | undefined, rejectAtOnce = false, operation = "receive"): void {
    if (signal) this.wireAbort(r, signal, rejectAtOnce, operation);
  }

  /**
   * cancelOnAbort's listener, in a function of its own: the closures' context is made on entry
   * to the function that holds them, and made in cancelOnAbort it cost every request without
   * a signal 112 B.
   */
  private wireAbort(r: Submitted<unknown>, signal: AbortSignal, rejectAtOnce: boolean, operation: string): void {
    const onAbort = () => {
      this.requests.abort(r.id, abortError(signal, operation), rejectAtOnce);
      this.cancel(r.id);
    };
    signal.addEventListener("abort", onAbort, { once: true });
    // One signal may serve thousands of receives: let go of each listener when its request ends.
    const off = () => signal.removeEventListener("abort", onAbort);
    r.promise.then(off, off);
  }

  /**
   * Bytes the executor copies out of UCX (worker address, packed remote key) into a buffer of
   * ours: the executor answers UCS_ERR_BUFFER_TOO_SMALL with the size needed, and we ask again.
   */
  async copyOut(fields: Partial<Submission> & { op: number }, capacity: number, operation: string): Promise<Uint8Array> {
    for (;;) {
      const out = new Uint8Array(capacity);
      const { promise } = this.request(
        submission({ ...fields, address: addressOf(out), length: capacity }),
        out,
        operation,
        (length) => out.slice(0, length),
        (status, needed) => {
          if (status === UCS_ERR_BUFFER_TOO_SMALL) capacity = needed;
          return undefined;
        },
      );
      try {
        return await this.settled(promise);
      } catch (e) {
        if ((e as UcxError).code !== "UCS_ERR_BUFFER_TOO_SMALL") throw e;
      }
    }
  }
}

/** The settle function of a request created settled (requestDone): never called. */
const ignore: Settle = () => {};

/**
 * How enterRequest undoes a request whose submission the engine refused: settle it as cancelled
 * (its Promise rejects, marked handled; a callback hears UCS_ERR_CANCELED), or drop it without
 * a word (requestDone's caller undoes what it did for it itself).
 */
const Refused = { Settle: 0, Forget: 1 } as const;
type Refused = (typeof Refused)[keyof typeof Refused];

/** `new Promise(capture)` leaves its settle functions here: no executor closure per request. */
let capturedResolve: (value: never) => void = () => {};
let capturedReject: (reason: unknown) => void = () => {};
const capture = (resolve: (value: never) => void, reject: (reason: unknown) => void): void => {
  capturedResolve = resolve;
  capturedReject = reject;
};

/** A request that settles a Promise: `onOk` turns a successful completion into its value. */
class PromiseEntry<T> extends RequestEntry {
  readonly promise: Promise<T>;
  private readonly resolve: (value: T) => void;
  private readonly reject: (reason: unknown) => void;

  constructor(
    private readonly path: RequestPath,
    keep: unknown,
    onArrive: ((id: number, status: number) => void) | undefined,
    private readonly operation: string,
    private readonly onOk: (value: number, tagLo: number, tagHi: number, keep: unknown) => T,
    private readonly onError: ((status: number, value: number, keep: unknown) => UcxError | undefined) | undefined,
  ) {
    super(keep, onArrive);
    this.promise = new Promise<T>(capture);
    this.resolve = capturedResolve as (value: T) => void;
    this.reject = capturedReject;
  }

  settle(status: number, value: number, tagLo: number, tagHi: number): void {
    if (status === UCS_OK) {
      try {
        this.resolve(this.onOk(value, tagLo, tagHi, this.keep));
        if (TURNAROUND) mark(Mark.Finished);
      } catch (e) {
        this.reject(e);
      }
    } else {
      // The worker's close fails a receive nobody awaits (a forgotten one, a listener's): its
      // rejection must not end the process as an unhandled one. Awaited, it still throws.
      // (Asked of the table: in polling mode the close reaches here before `closing` is set.)
      if (this.path.requests.closing) this.promise.catch(() => {});
      this.reject(this.onError?.(status, value, this.keep) ?? UcxError.fromStatus(status, this.operation, describeStatus));
    }
    this.path.updateActive();
  }

  rejectWith(reason: unknown): boolean {
    this.reject(reason);
    this.path.updateActive();
    return true;
  }
}

/** A request that completes a UcxRequest (RequestPath.receiveInto): `onOk` turns a success into its result. */
class RequestObjectEntry<T> extends RequestEntry {
  constructor(
    private readonly path: RequestPath,
    keep: unknown,
    private readonly request: UcxRequest<T>,
    private readonly operation: string,
    private readonly onOk: (value: number, tagLo: number, tagHi: number, keep: unknown) => T,
    private readonly onError: (status: number, value: number, keep: unknown) => UcxError | undefined,
  ) {
    super(keep, undefined);
  }

  settle(status: number, value: number, tagLo: number, tagHi: number): void {
    if (status === UCS_OK) {
      if (TURNAROUND) mark(Mark.Finished);
      this.request.succeed(this.onOk(value, tagLo, tagHi, this.keep));
    } else {
      if (this.path.requests.closing) this.request.quiet();
      this.request.fail(this.onError(status, value, this.keep) ?? UcxError.fromStatus(status, this.operation, describeStatus));
    }
    this.path.updateActive();
  }

  rejectWith(reason: unknown): boolean {
    this.request.fail(reason);
    this.path.updateActive();
    return true;
  }
}

/** RequestPath.probe: it settles nothing; the worker may be idle once it completed. */
class InPlaceProbe extends RequestEntry {
  constructor(private readonly path: RequestPath) {
    super(null, undefined);
  }

  settle(): void {
    this.path.updateActive();
  }

  rejectWith(): boolean {
    return false;
  }
}

/** A request that settles through a function of the caller's, with no Promise (requestWith). */
class CallbackEntry extends RequestEntry {
  constructor(
    private readonly path: RequestPath,
    keep: unknown,
    private readonly onSettle: Settle,
    onArrive?: (id: number, status: number) => void,
  ) {
    super(keep, onArrive);
  }

  settle(status: number, value: number, tagLo: number, tagHi: number): void {
    this.onSettle(status, value, tagLo, tagHi);
    this.path.updateActive();
  }

  rejectWith(): boolean {
    return false;
  }
}
