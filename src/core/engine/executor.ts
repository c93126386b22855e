/**
 * The executor: the only code that calls UCX's data path. It owns the UCP context and worker,
 * turns submission records into UCX calls through its table of operations
 * (operation-table.ts: each operation runs in the module of its family), keeps the UCX requests
 * in flight (request-tracker.ts), and reports each outcome as a completion record. It runs on
 * whichever thread owns UCX: the progress thread (thread mode) or the application thread
 * (polling and blocking modes), and it is the same code in both.
 *
 * The families: tag and stream operations (tag-operations.ts), endpoints (endpoint-operations.ts),
 * UCX listeners (listener-operations.ts), multi-buffer batches (batch-operations.ts), registered
 * memory and RMA (remote-memory.ts), active messages (active-messages.ts). Their C callbacks
 * (tag completions, UCX's listener connection handler and endpoint error handler, the AM
 * handler) are created on the owning thread, where UCX calls them from inside
 * `ucp_worker_progress` (or the posting call).
 */
import { ptrIsError, UCX_CONSTANTS as C, type Pointer, type Ucx } from "../../ffi/index.ts";
import { Context, type Feature } from "../context.ts";
import { check, ucx } from "../library.ts";
import { OutSlots } from "../out-slots.ts";
import { ActiveMessages } from "./active-messages.ts";
import { AmAtomics } from "./am-atomics.ts";
import { BatchOperations } from "./batch-operations.ts";
import { DirectTags } from "./direct-tags.ts";
import { RequestHandles, setParamsMemh } from "./request-handles.ts";
import { EndpointOperations } from "./endpoint-operations.ts";
import { FastRequests, type FastReport } from "./fast-requests.ts";
import { InlineStaging } from "./inline-staging.ts";
import { ListenerOperations } from "./listener-operations.ts";
import type { OpHost } from "./op-host.ts";
import { operationTable, type OperationHandler } from "./operation-table.ts";
import type { Payload } from "./payload.ts";
import { BOUNCE_POOL_MEMORY, SUB, type Completion, type Op } from "./records.ts";
import { RemoteMemory } from "./remote-memory.ts";
import { RequestTracker } from "./request-tracker.ts";
import type { Ring } from "./ring.ts";
import { setUserData, TagOperations } from "./tag-operations.ts";
import { TakeoverState, WANT_THREAD } from "./takeover-state.ts";
import { enter, leave, Phase, PROFILING } from "../profile.ts";

const UCS_OK = 0;
const UCS_ERR_INVALID_PARAM = -5;
const UCS_ERR_BUFFER_TOO_SMALL = -11;
const UCS_ERR_CANCELED = -16;
const UCS_ERR_BUSY = -15;
/**
 * Takeover: the token is not lent until active messages have stopped coming for this long. Each
 * one that UCX hands to our callback on the application thread waits for this thread's event
 * loop (0.4-1.2 ms): windows of 16 x 8 B AMs ran at 0.04 MB/s against 0.1 without takeover.
 */
const AM_QUIET_MS = 20;
/** Requests an idle round of progress checks (see Executor.progress). */
const IDLE_SCAN = 8;
/** How long one round keeps calling ucp_worker_progress while rendezvous fetches finish (progressRound). */
const FETCH_BURST_MS = 0.05;

/** What the executor writes its completions to (CompletionWriter). */
export interface CompletionSink {
  write(c: Completion): void;
  /** A request's completion (CompletionKind.Request), without a Completion object. */
  writeRequest(id: number, status: number, value: number, tagLo: number, tagHi: number): void;
}

export interface ExecutorOptions {
  readonly features: readonly Feature[];
  readonly config: Readonly<Record<string, string | number | boolean>>;
  /** The bounce pool (proto/bounce-pool.ts): registered once here, sends from it pass its handle. */
  readonly bouncePool?: ArrayBufferLike;
  /**
   * Thread mode with takeover (takeover-state.ts): the memory of the state shared with the
   * application thread. The worker is then UCS_THREAD_MODE_SERIALIZED, fast requests carry no
   * callback and live in the shared table, and endpoint and memory handles are published there.
   */
  readonly takeoverState?: SharedArrayBuffer;
  /**
   * Polling and blocking modes (the executor on the application thread): also take tag sends
   * and receives straight from the caller (direct-tags.ts, `Executor.direct`).
   */
  readonly direct?: boolean;
  /** The smallest send or receive given a memory handle of its own (request-handles.ts); default none. */
  readonly requestHandlesFrom?: number;
  /**
   * Atomics on endpoints with peer error handling go over active messages (am-atomics.ts): this
   * UCX has no protocol for them (ucx-version-gaps.ts); default false. Needs the "am" feature.
   */
  readonly atomicsOverActiveMessages?: boolean;
}

export class Executor {
  private readonly u: Ucx;
  private readonly context: Context;
  readonly worker: Pointer;
  private readonly tracker: RequestTracker;
  private readonly tags: TagOperations;
  private readonly endpoints: EndpointOperations;
  private readonly listeners: ListenerOperations;
  private readonly batches: BatchOperations;
  /** Registered memory, remote keys, RMA and atomics (remote-memory.ts). */
  private readonly rma: RemoteMemory;
  /** Active messages (active-messages.ts), when the context has the "am" feature. */
  private readonly am: ActiveMessages | undefined;
  /** The handler of each Op (operation-table.ts). */
  private readonly operations: OperationHandler[];
  /** Tag sends and receives posted without a record (ExecutorOptions.direct). */
  readonly direct: DirectTags | undefined;
  /** Memory handles mapped for single requests (ExecutorOptions.requestHandlesFrom). */
  readonly handles: RequestHandles;
  /** Atomics over active messages, both sides (am-atomics.ts); with the "am" feature. */
  readonly amAtomics: AmAtomics | undefined;

  // Scratch structs reused by every call (one thread only): never allocate on the data path.
  private readonly param: ReturnType<Ucx["struct"]>;
  private readonly paramAddress: Pointer;
  private readonly out = new OutSlots(2);
  private efd = -1;
  /** `struct pollfd` (int fd; short events; short revents) for waitFd. */
  private readonly pollfd = new DataView(new ArrayBuffer(8));
  private readonly pollfdAddress: Pointer;
  /** Takeover (ExecutorOptions.takeoverState): the shared state and its fast requests. */
  private readonly takeover: TakeoverState | undefined;
  private readonly fast: FastRequests | undefined;
  private readonly reportFast: FastReport = (id, status, value, lo, hi) => this.emitRequest(id, status, value, lo, hi);

  constructor(
    options: ExecutorOptions,
    /** Where completions go: the mode's completion ring (CompletionWriter). */
    private readonly completions: CompletionSink,
    /** Hands a multi-receive's buffers (or its error) to the application thread, before its completion. */
    private readonly deliver: (payload: Payload | Payload[]) => void,
    /** Thread mode: the next active message's memory the application released, if any (not yet taken). */
    released?: () => ArrayBuffer | undefined,
  ) {
    const u = (this.u = ucx());
    this.param = u.struct("ucp_request_param_t");
    this.paramAddress = u.addressOf(this.param.bytes);
    this.pollfdAddress = u.addressOf(this.pollfd);

    // WAKEUP lets an idle progress thread sleep in ucp_worker_wait, and blocking mode wait.
    const features = options.features.includes("wakeup") ? options.features : [...options.features, "wakeup" as const];
    this.context = new Context({ features, config: options.config });
    try {
      const wp = u.struct("ucp_worker_params_t");
      wp.set("field_mask", C.UCP_WORKER_PARAM_FIELD_THREAD_MODE);
      // Takeover: two threads call UCX, never at the same time (the token orders them).
      wp.set("thread_mode", options.takeoverState ? C.UCS_THREAD_MODE_SERIALIZED : C.UCS_THREAD_MODE_SINGLE);
      check(u.ucp_worker_create(this.context.handle, u.addressOf(wp.bytes), this.out.address()), "ucp_worker_create");
      this.worker = this.out.pointer();
    } catch (e) {
      this.context.close();
      throw e;
    }

    const staging = new InlineStaging((b) => u.addressOf(b));
    this.handles = new RequestHandles(u, this.context.handle, this.out, options.requestHandlesFrom ?? Infinity);
    if (options.takeoverState) {
      this.takeover = new TakeoverState(options.takeoverState);
      this.fast = new FastRequests(u, this.takeover);
    }
    const host: OpHost = {
      u,
      worker: this.worker,
      contextHandle: this.context.handle,
      out: this.out,
      handles: this.handles,
      param: this.param,
      endpoint: (id) => this.endpoints.endpoints.get(id),
      endpointIdOf: (handle) => this.endpoints.byHandle.get(handle) ?? 0,
      done: (id, status, value) => this.done(id, status, value),
      emitRequest: (id, status, value, tagLo, tagHi) => this.emitRequest(id, status, value, tagLo, tagHi),
      memh: (memory) => this.rma.memh(memory),
      track: (id, result, endpoint) => this.tracker.track(id, result, "send", endpoint),
      // With takeover a callback could fire on the application thread: checked instead.
      callbacks: !this.fast,
      sendParams: (id, mask, flags, memh) => {
        if (this.fast) return this.params(mask, flags, memh);
        setUserData(this.param, id); // the shared parameters' cb is TagOperations' send callback
        return this.params(mask | C.UCP_OP_ATTR_FIELD_CALLBACK | C.UCP_OP_ATTR_FIELD_USER_DATA, flags, memh);
      },
      trackSend: (id, result, endpoint, memh) => {
        if (memh && result !== 0 && !ptrIsError(result)) {
          // Its handle is unmapped by this thread when it ends: never in takeover's shared table.
          this.tracker.addInflight(id, { request: result, kind: "send", endpoint, memh }, !!this.fast);
          return true;
        }
        this.handles.release(memh); // UCX is done with it already (or never took it)
        if (this.fast || result === 0 || ptrIsError(result)) return this.tracker.track(id, result, "send", endpoint);
        this.tracker.addInflight(id, { request: result, kind: "send", endpoint }, false);
        return true;
      },
      params: (mask, flags, memh) => this.params(mask, flags, memh),
      copyOut: (id, bytes, address, capacity) => this.copyOut(id, bytes.length > 0 ? this.u.addressOf(bytes) : 0, bytes.length, address, capacity),
      copyOutNative: (id, source, length, address, capacity) => this.copyOut(id, source, length, address, capacity),
      queueRequest: (owner, r) => this.tracker.queuePart(owner, r),
      emit: (c) => this.completions.write(c),
      deliver: (p) => this.deliver(p),
      activeMessage: () => {
        this.lastActiveMessage = performance.now();
        this.needToken();
      },
    };
    this.tracker = new RequestTracker(u, this.out, staging, this.fast, host, (ep) => this.endpoints.endpoints.delete(ep), this.handles);
    // Every worker with active messages serves atomics over them: its peers' UCX decides.
    if (options.features.includes("am")) this.amAtomics = new AmAtomics(host, (address, size) => this.rma.atomicWord(address, size));
    this.rma = new RemoteMemory(host, this.amAtomics, options.atomicsOverActiveMessages ?? false);
    this.listeners = new ListenerOperations(host);
    this.endpoints = new EndpointOperations(host, this.tracker, this.takeover, (ep) => this.rma.endpointGone(ep), () => this.needToken());
    this.tags = new TagOperations(host, this.tracker, staging, this.fast);
    if (options.direct && !this.fast) this.direct = new DirectTags(u, this.worker, (id) => this.endpoints.endpoints.get(id), this.handles, staging);
    // The bounce pool, registered once. A pool UCX cannot register is not fatal: its sends then
    // go without a memory handle (sendSource finds none).
    const pool = options.bouncePool;
    if (pool && pool.byteLength > 0) this.rma.register(BOUNCE_POOL_MEMORY, u.addressOf(new Uint8Array(pool)), pool.byteLength);
    this.shareMemory(BOUNCE_POOL_MEMORY);
    if (options.features.includes("am")) this.am = new ActiveMessages(host, released, this.amAtomics);
    this.batches = new BatchOperations(host, this.tracker, this.tags);
    this.operations = operationTable({
      tags: this.tags,
      endpoints: this.endpoints,
      listeners: this.listeners,
      batches: this.batches,
      rma: this.rma,
      am: this.am,
      cancel: (target) => this.cancel(target),
      fence: (id) => this.done(id, this.u.ucp_worker_fence(this.worker)),
      shareMemory: (memory) => this.shareMemory(memory),
      done: (id, status, value) => this.done(id, status, value),
    });
  }

  /**
   * An active message's memory the application released (its views are detached: it was
   * transferred here): kept for later messages. Polling and hybrid modes; thread mode passes
   * `released` instead, since the memory arrives on the thread's port.
   */
  reuseActiveMessageBuffer(buffer: ArrayBuffer): void {
    this.am?.pool.give(buffer);
  }

  /** Requests in flight inside UCX. */
  get pending(): number {
    return this.tracker.inflight.size + this.tracker.partQueues.size + (this.fast?.count ?? 0) + (this.direct?.count ?? 0);
  }

  /**
   * Takeover: true when nothing but fast requests (which either thread can check) is in flight
   * here and nothing waits for this thread: the token may then be lent to the application thread.
   */
  canLend(): boolean {
    const t = this.tracker;
    return (
      t.inflight.size === 0 &&
      t.partQueues.size === 0 &&
      this.batches.idle &&
      t.completedWords === 0 &&
      this.endpoints.quiet &&
      (this.am?.idle ?? true) &&
      performance.now() - this.lastActiveMessage > AM_QUIET_MS
    );
  }

  /** When the last active message arrived (takeover: see canLend). */
  private lastActiveMessage = -Infinity;

  /** Takeover: publish (or withdraw) registration `memory`'s handle for the application thread. */
  private shareMemory(memory: number): void {
    if (!this.takeover) return;
    const memh = this.rma.memh(memory);
    if (memh !== 0) this.takeover.setMemory(memory, memh as number);
    else this.takeover.dropMemory(memory);
  }

  /** Takeover: a callback fired (maybe on the application thread's round) and left work only this thread does. */
  private needToken(): void {
    if (this.takeover) Atomics.store(this.takeover.header, WANT_THREAD, 1);
  }

  // --- the data path -----------------------------------------------------------------------

  /** Execute one submission record at word index `w` of `ring`, through the table of operations. */
  execute(ring: Ring, w: number): void {
    if (!PROFILING) return this.executeRecord(ring, w);
    enter(Phase.Execute);
    try {
      this.executeRecord(ring, w);
    } finally {
      leave();
    }
  }

  private executeRecord(ring: Ring, w: number): void {
    const u32 = ring.u32;
    const f = w >> 1;
    const handler = this.operations[u32[w + SUB.op]! as Op];
    const id = u32[w + SUB.request]!;
    this.tracker.touched = true;
    if (handler === undefined) return this.done(id, UCS_ERR_INVALID_PARAM);
    handler(ring, w, id, u32[w + SUB.target]!, ring.f64[f + SUB.address]!, ring.f64[f + SUB.length]!);
  }

  /**
   * One round of progress: `ucp_worker_progress`, deferred endpoint closes, the requests whose
   * callbacks fired, then a check of the polled ones. Returns UCX's event count plus the
   * completions reported.
   *
   * Every polled request is checked when UCX reported events or this executor called UCX since
   * the last full check (a post or a cancel may complete an earlier request); an idle round
   * checks only the next IDLE_SCAN of them, round robin. Checking all of them every round cost
   * O(in flight) FFI calls per round even with nothing arriving (measured: 1.4 ms a round with
   * 20,000 receives posted, when receives were polled, against 0.2 us with none), and a polling
   * loop runs rounds back to back. Before sleeping, `arm()` checks them all.
   */
  progress(): number {
    if (!PROFILING) return this.progressRound();
    enter(Phase.Progress);
    try {
      return this.progressRound();
    } finally {
      leave();
    }
  }

  private progressRound(): number {
    const t = this.tracker;
    const am = this.am;
    let events: number;
    if (am) {
      events = this.progressActiveMessages(am);
      // A rendezvous message's fetch finishes one per ucp_worker_progress call (UCX 1.13 over
      // shared memory: one cma get of its queue per call). While a call finished one and more
      // are queued, call again now rather than after a round of JavaScript (the rest of this
      // round, the driver's turns): a window of 16 x 64 KiB fetches spent 3-4 us of it between
      // each two gets of ~7 us. Bounded in time, so that the round's other completions wait for
      // a few small gets or one large one at most.
      if (am.fetchesInFlight > 0) {
        const until = performance.now() + FETCH_BURST_MS;
        for (;;) {
          const finished = am.finishFetched();
          events += finished;
          if (finished === 0 || am.fetchesInFlight === 0 || performance.now() > until) break;
          events += this.progressActiveMessages(am);
        }
      }
    } else {
      events = this.u.ucp_worker_progress(this.worker);
      this.endpoints.closeFailed();
    }
    if (t.partQueues.size > 0) events += t.progressParts();
    if (t.completedWords > 0) events += t.finishCompleted();
    // Polled direct receives are checked when this round or a call since may have completed one.
    if (this.direct) events += this.direct.finish(events > 0 || t.touched);
    const full = events > 0 || t.touched;
    if (full) events += t.checkAll();
    else if (t.polled.size > 0) events += t.checkSome(IDLE_SCAN);
    const fast = this.fast;
    if (fast && fast.count > 0) events += full ? fast.checkAll(this.reportFast) : fast.checkSome(IDLE_SCAN, this.reportFast);
    // Last: an endpoint error seen in this round goes after every completion of the round.
    return events + this.endpoints.reportErrors();
  }

  /**
   * `ucp_worker_progress` with the call's active messages handed over together after it
   * (ActiveMessages.endBatch), the endpoints that failed in it closed, then the fetches that had
   * to wait for memory started.
   */
  private progressActiveMessages(am: ActiveMessages): number {
    let events: number;
    am.beginBatch();
    try {
      events = this.u.ucp_worker_progress(this.worker);
    } finally {
      am.endBatch();
    }
    this.endpoints.closeFailed();
    am.fetchPending();
    return events;
  }

  /** The shared parameters with these op_attr_mask and flags, and a memory handle when `memh` is one. */
  private params(mask: number, flags = 0, memh: Pointer = 0): Pointer {
    const p = this.param;
    setParamsMemh(p, mask, memh); // op_attr_mask, with UCP_OP_ATTR_FIELD_MEMH when memh is one
    p.view.setUint32(4, flags, true); // flags
    return this.paramAddress;
  }

  private cancel(target: number): void {
    const r = this.tracker.inflight.get(target);
    // Not in flight: it already completed (its completion is on its way) or never started.
    if (r) return this.u.ucp_request_cancel(this.worker, r.request);
    if (this.fast?.cancel(this.worker, target)) return;
    this.batches.cancel(target);
  }

  /**
   * Copy `length` bytes at `source` out to the application's (address, capacity), or ask for a
   * bigger buffer. A memcpy, not views: under Node each koffi view is an external ArrayBuffer
   * whose native bookkeeping (~170 B) is freed only on an event-loop turn after the GC finds it,
   * so an application creating and closing workers without yielding to the event loop kept two
   * such views per address or packed key (~0.7 KiB a Worker.create/address/packRkey/close cycle,
   * 2026-11-26, heaptrack).
   */
  private copyOut(id: number, source: Pointer, length: number, address: number, capacity: number): void {
    if (length > capacity) return this.done(id, UCS_ERR_BUFFER_TOO_SMALL, length);
    if (length > 0) this.u.memcpy(address, source, length);
    this.done(id, UCS_OK, length);
  }

  // --- completions ---------------------------------------------------------------------------

  private done(id: number, status: number, value = 0): void {
    this.emitRequest(id, status, value, 0, 0);
  }

  private emitRequest(id: number, status: number, value: number, tagLo: number, tagHi: number): void {
    if (id === 0 || id >= 0x80000000) return; // internal request: nobody to tell
    this.completions.writeRequest(id, status, value, tagLo, tagHi);
  }

  // --- sleeping and shutdown -----------------------------------------------------------------

  /** `ucp_worker_arm`: UCS_OK when it is safe to sleep, UCS_ERR_BUSY when events are pending. */
  arm(): number {
    const t = this.tracker;
    // Nothing may sleep on a completion an idle round has not checked yet (see progress()).
    if ((t.completedWords > 0 && t.finishCompleted() > 0) || (t.polled.size > 0 && t.checkAll() > 0)) return UCS_ERR_BUSY;
    if (this.fast && this.fast.count > 0 && this.fast.checkAll(this.reportFast) > 0) return UCS_ERR_BUSY;
    if (this.direct && this.direct.anyPolledDone()) return UCS_ERR_BUSY;
    return this.u.ucp_worker_arm(this.worker);
  }

  /** Sleep in `ucp_worker_wait` until UCX has an event or `ucp_worker_signal` is called. */
  wait(): number {
    return this.u.ucp_worker_wait(this.worker);
  }

  /** The worker's event fd (ucp_worker_get_efd), fetched once. */
  eventFd(): number {
    if (this.efd < 0) {
      check(this.u.ucp_worker_get_efd(this.worker, this.out.address()), "ucp_worker_get_efd");
      this.efd = this.out.i32();
    }
    return this.efd;
  }

  /**
   * Sleep on the worker's event fd for at most `timeoutMs` (poll(2); -1: no limit). Call after
   * `arm()` returned UCS_OK. Returns poll's result: >0 an event, 0 the timeout.
   */
  waitFd(timeoutMs: number): number {
    const u = this.u;
    const pollfd = this.pollfd;
    pollfd.setInt32(0, this.eventFd(), true);
    pollfd.setInt16(4, 1 /* POLLIN */, true);
    pollfd.setInt16(6, 0, true);
    return u.poll(this.pollfdAddress, 1, timeoutMs);
  }

  /**
   * Cancel everything in flight (each reported as UCS_ERR_CANCELED), force-close endpoints,
   * destroy listeners, the worker and the context. The executor is unusable afterwards.
   */
  destroy(): void {
    const u = this.u;
    const t = this.tracker;
    const cancelParts = () => {
      for (const owner of [...t.partQueues.keys()]) t.cancelParts(this.worker, owner);
    };
    for (const r of t.inflight.values()) u.ucp_request_cancel(this.worker, r.request);
    this.fast?.cancelAll(this.worker);
    this.direct?.cancelAll();
    cancelParts();
    this.am?.releasePending();
    this.am?.cancelFetches();
    const amFetching = () => (this.am?.fetchesInFlight ?? 0) > 0;
    const direct = () => this.direct?.count ?? 0;
    for (let i = 0; i < 1000 && (t.inflight.size > 0 || t.partQueues.size > 0 || (this.fast?.count ?? 0) > 0 || direct() > 0 || amFetching()); i++) {
      this.progress();
      // Parts posted by a batch's callbacks meanwhile (a header's next receive) are cancelled too.
      cancelParts();
    }
    // What UCX did not complete: released now (UCX asserts, and aborts the process, when it
    // destroys an endpoint with a request the application has not released), reported only
    // after the worker is destroyed, so that no buffer is let go while UCX could still touch it.
    const abandoned = [...t.inflight.keys(), ...(this.fast?.releaseAll() ?? [])];
    const abandonedDirect = this.direct?.releaseAll() ?? [];
    t.releaseAll();
    this.am?.releaseFetches();
    this.listeners.destroyAll();
    this.rma.destroyRkeys();
    this.endpoints.closeAll();
    // A "none" endpoint's close waits for its peer (a worker closing at the same moment, in a
    // pair in one process): give it some time, not just some rounds.
    const deadline = performance.now() + 500;
    for (let i = 0; t.inflight.size > 0 && (i < 1000 || performance.now() < deadline); i++) this.progress();
    t.releaseAll();
    u.ucp_worker_destroy(this.worker);
    for (const id of abandoned) this.emitRequest(id, UCS_ERR_CANCELED, 0, 0, 0);
    for (const settle of abandonedDirect) settle();
    this.handles.releaseAbandoned();
    this.rma.unmapAll();
    this.context.close();
    this.listeners.closeCallback();
    this.endpoints.closeCallback();
    this.tags.close();
    this.direct?.close();
    this.am?.close();
  }
}
