/**
 * The executor: the only code that calls UCX's data path. It owns the UCP context, worker,
 * endpoints and listeners, turns submission records into UCX calls, keeps the UCX requests in
 * flight, and reports each outcome as a completion record. It runs on whichever thread owns
 * UCX: the progress thread (thread mode) or the application thread (polling and blocking
 * modes), and it is the same code in both.
 *
 * Tag receives and tag/stream sends report their own completion: each carries a callback
 * that queues its id (a callback costs ~0.1-0.35 us); with thread mode's takeover they carry
 * none and are checked instead, by whichever thread holds the token (fast-requests.ts). They may stay in flight a long time, and
 * thousands of receives may be posted: checking each of them with `ucp_request_check_status`
 * every round cost ~100 us a round for 1,000 parked receives, and a 1 MiB send was checked
 * ~100 times before it completed. The rest (closes, flushes, stream receives, RMA, batch parts)
 * are checked with `ucp_request_check_status` after `ucp_worker_progress` (ffi-facts.md). The
 * other C callbacks are UCX's listener connection handler and endpoint error handler. All are
 * created here, on the owning thread, where UCX calls them from inside `ucp_worker_progress`
 * (or the posting call).
 */
import { callbackTypes, ptrIsError, UCX_CONSTANTS as C, type NativeCallback, type Pointer, type Ucx } from "../../ffi/index.ts";
import { Context, type Feature } from "../context.ts";
import { check, ucx } from "../library.ts";
import { capturePrint } from "../print-capture.ts";
import { OutSlots } from "../out-slots.ts";
import {
  CLOSE_FLAG_FORCE,
  CompletionKind,
  type Completion,
  BOUNCE_POOL_MEMORY,
  INLINE_OFFSET,
  SEND_FLAG_INLINE,
  SEND_FLAG_MEMH,
  EP_FLAG_ERR_PEER,
  MULTI_FLAG_IF_QUEUED,
  Op,
  SUB,
  tagArgument,
} from "./records.ts";
import type { Ring } from "./ring.ts";
import { ActiveMessages } from "./active-messages.ts";
import type { EndpointState, OpHost, OwnedRequest } from "./op-host.ts";
import { RemoteMemory } from "./remote-memory.ts";
import { MultiReceive, MultiReceiveQueues, MultiSend, type PartDone, type PartPoster } from "./multi-transfer.ts";
import type { Payload } from "./payload.ts";
import { InlineStaging } from "./inline-staging.ts";
import { FastKind, TakeoverState, WANT_THREAD } from "./takeover-state.ts";
import { FastRequests, u64At, type FastReport } from "./fast-requests.ts";

const UCS_OK = 0;
const UCS_INPROGRESS = 1;
const UCS_ERR_NO_MESSAGE = -1;
const UCS_ERR_INVALID_PARAM = -5;
const UCS_ERR_BUFFER_TOO_SMALL = -11;
const UCS_ERR_NO_ELEM = -12;
const UCS_ERR_CANCELED = -16;
const UCS_ERR_NOT_CONNECTED = -24;
const UCS_ERR_BUSY = -15;
/**
 * Takeover: the token is not lent until active messages have stopped coming for this long. Each
 * one that UCX hands to our callback on the application thread waits for this thread's event
 * loop (0.4-1.2 ms): windows of 16 x 8 B AMs ran at 0.04 MB/s against 0.1 without takeover.
 */
const AM_QUIET_MS = 20;
/** Requests an idle round of progress checks (see Executor.progress). */
const IDLE_SCAN = 8;

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
}


type InflightKind = "send" | "tagRecv" | "streamRecv" | "close" | "flush";

interface Inflight {
  readonly request: Pointer;
  readonly kind: InflightKind;
  /** Endpoint id the request belongs to (0 for worker-level receives). */
  readonly endpoint: number;
  /** For closes: the endpoint id to forget once the close completes. */
  readonly closes?: number;
  /** For inline sends: the staging chunk to free once UCX is done. */
  readonly staging?: number;
}

/**
 * A batch's messages in flight, in posting order. Only the oldest is checked each round: the
 * batch needs all of them anyway, and checking all of a 1,000-frame batch on every round of
 * progress made a batch cost O(frames x rounds) FFI calls (measured: 100 x 64 KiB frames 4-7x
 * slower than one 6.4 MiB send before, see bench/run-multi.mjs).
 */
interface PartQueue {
  readonly parts: OwnedRequest[];
  next: number;
}


export class Executor {
  private readonly u: Ucx;
  private readonly context: Context;
  readonly worker: Pointer;
  private readonly endpoints = new Map<number, EndpointState>();
  private readonly listeners = new Map<number, Pointer>();
  /** Every request in flight (cancel and shutdown find them here). */
  private readonly inflight = new Map<number, Inflight>();
  /** The ones whose completion is found by `ucp_request_check_status` (no callback of their own). */
  private readonly polled = new Map<number, Inflight>();
  /** Requests whose completion callback fired: pairs of id and status, finished in progress(). */
  private readonly completed: number[] = [];
  /** Multi-buffer batches by request id, until their one completion. */
  private readonly batches = new Map<number, MultiSend | MultiReceive>();
  private readonly multiQueues = new MultiReceiveQueues();
  private readonly partQueues = new Map<object, PartQueue>();
  private readonly parts: PartPoster;
  /** Endpoints whose error handler fired: force-closed on the next step, outside the callback. */
  private readonly failedEndpoints: number[] = [];
  /**
   * Endpoint errors not yet reported. UCX calls the error handler from inside
   * `ucp_worker_progress`, often in the same call that completed the last receives from that
   * peer (its last message and its disconnect arrive together); those completions are only
   * seen afterwards, by `ucp_request_check_status`. The application thread rejects every
   * request still pending on an endpoint when its error arrives, so the error is reported at
   * the end of the round, after the round's completions.
   */
  private readonly endpointErrors: Array<{ ep: number; status: number }> = [];
  private readonly connCallback: NativeCallback;
  private readonly recvCallback: NativeCallback;
  private readonly sendCallback: NativeCallback;
  /** Request parameters of every tag receive: NO_IMM_CMPL, the callback, the id as user data. */
  private readonly recvParam: ReturnType<Ucx["struct"]>;
  private readonly recvParamAddress: Pointer;
  private readonly errorCallback: NativeCallback;
  /** Our endpoint id by UCX handle: an active message names its sender by the reply endpoint. */
  private readonly endpointByHandle = new Map<Pointer, number>();
  /** Registered memory, remote keys, RMA and atomics (remote-memory.ts). */
  private readonly rma: RemoteMemory;
  /** Active messages (active-messages.ts), when the context has the "am" feature. */
  private readonly am: ActiveMessages | undefined;

  // Scratch structs reused by every call (one thread only): never allocate on the data path.
  private readonly param: ReturnType<Ucx["struct"]>;
  private readonly paramAddress: Pointer;
  /** Filled by ucp_tag_recv_request_test and ucp_tag_probe_nb. */
  private readonly recvInfo: ReturnType<Ucx["struct"]>;
  private readonly recvInfoAddress: Pointer;
  /**
   * The same 16 bytes as u32 words (sender_tag lo, hi; length lo, hi), read directly on the
   * data path: the struct accessor's BigInt round trip cost more than the UCX call it follows.
   */
  private readonly recvInfoWords: Uint32Array;
  private readonly out = new OutSlots(2);
  private efd = -1;
  /** `struct pollfd` (int fd; short events; short revents) for waitFd. */
  private readonly pollfd = new DataView(new ArrayBuffer(8));
  private readonly pollfdAddress: Pointer;
  /** Inline sends' bytes while UCX holds them. */
  private readonly staging: InlineStaging;
  /** Takeover (ExecutorOptions.takeoverState): the shared state and its fast requests. */
  private readonly takeover: TakeoverState | undefined;
  private readonly fast: FastRequests | undefined;
  private readonly reportFast: FastReport = (id, status, value, lo, hi) => this.emitRequest(id, status, value, lo, hi);

  constructor(
    options: ExecutorOptions,
    private readonly emit: (c: Completion) => void,
    /** Hands a multi-receive's buffers (or its error) to the application thread, before its completion. */
    private readonly deliver: (payload: Payload) => void,
  ) {
    const u = (this.u = ucx());
    this.param = u.struct("ucp_request_param_t");
    this.paramAddress = u.addressOf(this.param.bytes);
    this.recvInfo = u.struct("ucp_tag_recv_info_t");
    this.recvInfoAddress = u.addressOf(this.recvInfo.bytes);
    this.recvInfoWords = new Uint32Array(this.recvInfo.bytes.buffer, this.recvInfo.bytes.byteOffset, 4);
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

    this.staging = new InlineStaging((b) => u.addressOf(b));
    if (options.takeoverState) {
      this.takeover = new TakeoverState(options.takeoverState);
      this.fast = new FastRequests(u, this.takeover);
    }

    this.connCallback = u.callback(callbackTypes.ucp_listener_conn_callback_t, (connRequest: number, arg: number) =>
      this.onConnectionRequest(arg, connRequest),
    );
    this.errorCallback = u.callback(callbackTypes.ucp_err_handler_cb_t, (arg: number, _ep: number, status: number) =>
      this.onEndpointError(arg, status),
    );
    // Fires inside ucp_worker_progress, ucp_request_cancel, or ucp_tag_recv_nbx itself (a
    // message already there): it only queues; progress() finishes the receive.
    this.recvCallback = u.callback(callbackTypes.ucp_tag_recv_nbx_callback_t, (_request: number, status: number, _info: number, userData: number) => {
      this.completed.push(userData, status);
    });
    // Sends: called only for a send that did not complete in its posting call.
    this.sendCallback = u.callback(callbackTypes.ucp_send_nbx_callback_t, (_request: number, status: number, userData: number) => {
      this.completed.push(userData, status);
    });
    this.param.set("cb", this.sendCallback.address); // used only with UCP_OP_ATTR_FIELD_CALLBACK (sends)
    this.recvParam = u.struct("ucp_request_param_t");
    this.recvParam.set("op_attr_mask", C.UCP_OP_ATTR_FLAG_NO_IMM_CMPL | C.UCP_OP_ATTR_FIELD_CALLBACK | C.UCP_OP_ATTR_FIELD_USER_DATA);
    this.recvParam.set("cb", this.recvCallback.address);
    this.recvParamAddress = u.addressOf(this.recvParam.bytes);
    const host: OpHost = {
      u,
      worker: this.worker,
      contextHandle: this.context.handle,
      out: this.out,
      param: this.param,
      endpoint: (id) => this.endpoints.get(id),
      endpointIdOf: (handle) => this.endpointByHandle.get(handle) ?? 0,
      done: (id, status, value) => this.done(id, status, value),
      track: (id, result, endpoint) => this.track(id, result, "send", endpoint),
      params: (mask, flags) => this.params(mask, flags),
      copyOut: (id, bytes, address, capacity) => this.copyOut(id, bytes, address, capacity),
      queueRequest: (owner, r) => this.queuePart(owner, r),
      emit: (c) => this.emit(c),
      deliver: (p) => this.deliver(p),
      activeMessage: () => {
        this.lastActiveMessage = performance.now();
        this.needToken();
      },
    };
    this.rma = new RemoteMemory(host);
    // The bounce pool, registered once. A pool UCX cannot register is not fatal: its sends then
    // go without a memory handle (sendSource finds none).
    const pool = options.bouncePool;
    if (pool && pool.byteLength > 0) this.rma.register(BOUNCE_POOL_MEMORY, u.addressOf(new Uint8Array(pool)), pool.byteLength);
    this.shareMemory(BOUNCE_POOL_MEMORY);
    if (options.features.includes("am")) this.am = new ActiveMessages(host);
    this.parts = {
      sendPart: (owner, ep, address, length, tagLo, tagHi, onDone) => this.sendPart(owner, ep, address, length, tagLo, tagHi, onDone),
      recvPart: (owner, address, length, tagLo, tagHi, maskLo, maskHi, onDone, ifQueued) =>
        this.recvPart(owner, address, length, tagLo, tagHi, maskLo, maskHi, onDone, ifQueued),
      cancelParts: (owner) => {
        const q = this.partQueues.get(owner);
        if (q) for (let i = q.next; i < q.parts.length; i++) this.u.ucp_request_cancel(this.worker, q.parts[i]!.request);
      },
      addressOf: (bytes) => u.addressOf(bytes),
      view: (address, length) => u.view(address, length),
    };
  }

  /** Requests in flight inside UCX. */
  get pending(): number {
    return this.inflight.size + this.partQueues.size + (this.fast?.count ?? 0);
  }

  /**
   * Takeover: true when nothing but fast requests (which either thread can check) is in flight
   * here and nothing waits for this thread: the token may then be lent to the application thread.
   */
  canLend(): boolean {
    return (
      this.inflight.size === 0 &&
      this.partQueues.size === 0 &&
      this.batches.size === 0 &&
      this.completed.length === 0 &&
      this.failedEndpoints.length === 0 &&
      this.endpointErrors.length === 0 &&
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

  /** Execute one submission record at word index `w` of `ring`. */
  execute(ring: Ring, w: number): void {
    const u32 = ring.u32;
    const f = w >> 1;
    const op = u32[w + SUB.op]! as Op;
    const id = u32[w + SUB.request]!;
    const target = u32[w + SUB.target]!;
    const address = ring.f64[f + SUB.address]!;
    const length = ring.f64[f + SUB.length]!;
    this.touched = true;
    switch (op) {
      case Op.TagSend:
        return this.tagSend(ring, w, id, target, address, length, u32[w + SUB.tagLo]!, u32[w + SUB.tagHi]!);
      case Op.TagRecv:
        return this.tagRecv(id, address, length, u32[w + SUB.tagLo]!, u32[w + SUB.tagHi]!, u32[w + SUB.maskLo]!, u32[w + SUB.maskHi]!);
      case Op.TagRecvIfQueued:
        if (!this.queued(u32[w + SUB.tagLo]!, u32[w + SUB.tagHi]!, u32[w + SUB.maskLo]!, u32[w + SUB.maskHi]!)) return this.done(id, UCS_ERR_NO_MESSAGE);
        return this.tagRecv(id, address, length, u32[w + SUB.tagLo]!, u32[w + SUB.tagHi]!, u32[w + SUB.maskLo]!, u32[w + SUB.maskHi]!);
      case Op.TagProbe:
        return this.tagProbe(id, u32[w + SUB.tagLo]!, u32[w + SUB.tagHi]!, u32[w + SUB.maskLo]!, u32[w + SUB.maskHi]!);
      case Op.StreamSend:
        return this.streamSend(ring, w, id, target, address, length);
      case Op.StreamRecv:
        return this.streamRecv(id, target, address, length);
      case Op.Cancel:
        return this.cancel(target);
      case Op.EndpointCreateAddress:
      case Op.EndpointCreateSockaddr:
      case Op.EndpointCreateConnRequest:
        return this.endpointCreate(op, id, target, address, length, ring.f64[f + SUB.handle]!, u32[w + SUB.flags]!);
      case Op.EndpointClose:
        return this.endpointClose(id, target, (u32[w + SUB.flags]! & CLOSE_FLAG_FORCE) !== 0);
      case Op.EndpointFlush:
        return this.flush(id, target);
      case Op.EndpointInfo:
        return this.endpointInfo(id, target, address, length);
      case Op.Listen:
        return this.listen(id, target, address, length);
      case Op.ListenerClose:
        return this.listenerClose(id, target);
      case Op.ListenerReject:
        return this.listenerReject(id, target, ring.f64[f + SUB.handle]!);
      case Op.WorkerAddress:
        return this.workerAddress(id, address, length);
      case Op.WorkerFlush:
        return this.flush(id, 0);
      case Op.MultiSend:
        return this.multiSend(id, target, address, length, u32[w + SUB.tagLo]!, u32[w + SUB.tagHi]!);
      case Op.MultiRecv:
        return this.multiRecv(
          id,
          [u32[w + SUB.tagLo]!, u32[w + SUB.tagHi]!, u32[w + SUB.maskLo]!, u32[w + SUB.maskHi]!],
          { maxBytes: length, maxHeaders: ring.f64[f + SUB.handle]! },
          (u32[w + SUB.flags]! & MULTI_FLAG_IF_QUEUED) !== 0,
        );
      case Op.MemMap:
        this.rma.memMap(id, target, address, length);
        return this.shareMemory(target);
      case Op.MemUnmap:
        this.rma.memUnmap(id, target);
        return this.shareMemory(target);
      case Op.RkeyPack:
        return this.rma.rkeyPack(id, target, address, length);
      case Op.RkeyUnpack:
        return this.rma.rkeyUnpack(id, target, address, length, u32[w + SUB.flags]!);
      case Op.RkeyDestroy:
        return this.rma.rkeyDestroy(id, u32[w + SUB.flags]!);
      case Op.Put:
      case Op.Get:
        return this.rma.rma(op, id, target, address, length, ring.f64[f + SUB.handle]!, u32[w + SUB.flags]!);
      case Op.Atomic:
        return this.rma.atomic(id, target, address, length, ring.f64[f + SUB.handle]!, u32[w + SUB.flags]!, u32[w + SUB.tagLo]!, u32[w + SUB.tagHi]! !== 0);
      case Op.WorkerFence:
        return this.done(id, this.u.ucp_worker_fence(this.worker));
      case Op.AmSend:
        if (!this.am) return this.done(id, UCS_ERR_INVALID_PARAM);
        return this.am.amSend(id, target, address, length, ring.f64[f + SUB.handle]!, u32[w + SUB.flags]!, u32[w + SUB.tagLo]!, u32[w + SUB.tagHi]!);
      case Op.AmRegister:
        return this.done(id, this.am ? this.am.setAmHandler(target) : UCS_ERR_INVALID_PARAM);
      case Op.Stop:
        return; // handled by the mode, which calls destroy()
      default:
        return this.done(id, UCS_ERR_INVALID_PARAM);
    }
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
    const u = this.u;
    let events = u.ucp_worker_progress(this.worker);
    while (this.failedEndpoints.length > 0) this.closeFailed(this.failedEndpoints.shift()!);
    this.am?.fetchPending();
    if (this.partQueues.size > 0) events += this.progressParts();
    if (this.completed.length > 0) events += this.finishCompleted();
    const full = events > 0 || this.touched;
    if (full) events += this.checkAll();
    else if (this.polled.size > 0) events += this.checkSome(IDLE_SCAN);
    const fast = this.fast;
    if (fast && fast.count > 0) events += full ? fast.checkAll(this.reportFast) : fast.checkSome(IDLE_SCAN, this.reportFast);
    // Last: an endpoint error seen in this round goes after every completion of the round.
    if (this.endpointErrors.length > 0) events += this.reportEndpointErrors();
    return events;
  }

  /** Set when this executor called UCX outside `ucp_worker_progress` since the last full check. */
  private touched = false;
  /** Where the idle rounds' partial check goes on (a Map iterator survives deletions). */
  private idleScan: Iterator<[number, Inflight]> | undefined;

  private checkAll(): number {
    this.touched = false;
    let n = 0;
    for (const [id, r] of this.polled) n += this.check(id, r);
    return n;
  }

  /** Finish the requests whose callbacks fired (pairs of id, status in `completed`). */
  private finishCompleted(): number {
    const q = this.completed;
    let n = 0;
    // Finishing fires no callback (it only reads and frees requests), so `q` does not grow here.
    for (let i = 0; i < q.length; i += 2) {
      const id = q[i]!;
      const r = this.inflight.get(id);
      if (!r) continue; // not ours to finish (already finished at shutdown)
      this.complete(id, r, q[i + 1]!);
      n++;
    }
    q.length = 0;
    return n;
  }

  private checkSome(count: number): number {
    let n = 0;
    for (let i = 0; i < count; i++) {
      const next = (this.idleScan ??= this.polled.entries()).next();
      if (next.done) {
        this.idleScan = undefined; // a lap ends; the next idle round starts another
        break;
      }
      n += this.check(next.value[0], next.value[1]);
    }
    return n;
  }

  private check(id: number, r: Inflight): number {
    const status = this.u.ucp_request_check_status(r.request);
    if (status === UCS_INPROGRESS) return 0;
    this.complete(id, r, status);
    return 1;
  }

  /** Request `id` ended with `status` (seen by a check or reported by its callback): forget and finish it. */
  private complete(id: number, r: Inflight, status: number): void {
    this.inflight.delete(id);
    this.polled.delete(id);
    if (r.staging !== undefined) this.staging.release(r.staging);
    this.finish(id, r, status);
  }

  /** Check each batch's oldest messages; a batch's callbacks may post more parts meanwhile. */
  private progressParts(): number {
    let n = 0;
    for (const [owner, q] of this.partQueues) {
      while (q.next < q.parts.length) {
        const part = q.parts[q.next]!;
        const status = this.u.ucp_request_check_status(part.request);
        if (status === UCS_INPROGRESS) break;
        q.next++;
        n++;
        this.finishPart(part, status);
      }
      if (q.next >= q.parts.length && this.partQueues.get(owner) === q) this.partQueues.delete(owner);
    }
    return n;
  }

  private finishPart(part: OwnedRequest, status: number): void {
    const u = this.u;
    let length = 0;
    let lo = 0;
    let hi = 0;
    if (part.kind === "tagRecv") {
      // As for single receives: the info is valid for truncated messages too (incoming size).
      u.ucp_tag_recv_request_test(part.request, this.recvInfoAddress);
      length = this.recvLength();
      lo = this.recvInfoWords[0]!;
      hi = this.recvInfoWords[1]!;
    }
    u.ucp_request_free(part.request);
    part.onDone(status, length, lo, hi);
  }

  private queuePart(owner: object, part: OwnedRequest): void {
    let q = this.partQueues.get(owner);
    if (!q) this.partQueues.set(owner, (q = { parts: [], next: 0 }));
    else if (q.next > 1024 && q.next * 2 > q.parts.length) {
      q.parts.splice(0, q.next); // drop the finished head now and then
      q.next = 0;
    }
    q.parts.push(part);
  }

  /** The length in `recvInfo` (its second u64), as ucp_tag_recv_request_test or probe left it. */
  private recvLength(): number {
    return u64At(this.recvInfoWords, 2);
  }

  private finish(id: number, r: Inflight, status: number): void {
    const u = this.u;
    if (r.kind === "tagRecv") {
      // The info is valid for truncated messages too: length is then the incoming size.
      u.ucp_tag_recv_request_test(r.request, this.recvInfoAddress);
      this.emitRequest(id, status, this.recvLength(), this.recvInfoWords[0]!, this.recvInfoWords[1]!);
    } else if (r.kind === "streamRecv") {
      u.ucp_stream_recv_request_test(r.request, this.out.address());
      this.emitRequest(id, status, status === UCS_OK ? this.out.pointer() : 0, 0, 0);
    } else {
      if (r.closes !== undefined) this.endpoints.delete(r.closes);
      this.done(id, status);
    }
    u.ucp_request_free(r.request);
  }

  /** Handle the `ucs_status_ptr_t` of a non-blocking call: done now, failed now, or in flight. */
  private track(id: number, result: Pointer, kind: InflightKind, endpoint: number, closes?: number): boolean {
    if (result === 0) return false; // completed in place
    if (ptrIsError(result)) {
      if (closes !== undefined) this.endpoints.delete(closes);
      this.done(id, result);
      return true;
    }
    if (this.fast && (kind === "tagRecv" || kind === "streamRecv")) {
      if (this.fast.add(result, id, kind === "tagRecv" ? FastKind.TagRecv : FastKind.StreamRecv, endpoint)) return true;
      this.addInflight(id, { request: result, kind, endpoint }, true); // the table is full: polled here
      return true;
    }
    this.addInflight(id, { request: result, kind, endpoint, closes }, kind !== "tagRecv"); // a tag receive reports itself
    return true;
  }

  /** Remember a request in flight; `polled`: its completion is found by checking, not by a callback. */
  private addInflight(id: number, entry: Inflight, polled: boolean): void {
    this.inflight.set(id, entry);
    if (polled) this.polled.set(id, entry);
  }

  private params(mask: number, flags = 0): Pointer {
    const p = this.param;
    p.view.setUint32(0, mask, true); // op_attr_mask
    p.view.setUint32(4, flags, true); // flags
    return this.paramAddress;
  }

  private endpoint(id: number): EndpointState | undefined {
    return this.endpoints.get(id);
  }

  /**
   * A send's bytes as its protocol delivered them (proto/protocols.ts): inline in the record
   * (staged here, since the slot is reused), in the bounce pool (sent with the pool's memory
   * handle), or the caller's buffer by address. Returns the request parameters to send with and
   * leaves the address in `sourceAddress` and the staging chunk (or undefined) in `sourceStaging`
   * (fields, not an object: nothing is allocated per send).
   */
  private sendSource(ring: Ring, w: number, id: number, address: number, length: number): Pointer {
    const flags = ring.u32[w + SUB.flags]!;
    this.sourceAddress = address;
    this.sourceStaging = undefined;
    // Completion by callback (sendCallback, set once in the shared parameters), with the id;
    // with takeover, by checking (no callback may fire on the other thread).
    setUserData(this.param, id);
    const byCallback = this.fast ? 0 : C.UCP_OP_ATTR_FIELD_CALLBACK | C.UCP_OP_ATTR_FIELD_USER_DATA;
    if (flags & SEND_FLAG_INLINE) {
      const at = w * 4 + INLINE_OFFSET;
      const chunk = this.staging.stage(ring.u8.subarray(at, at + length));
      this.sourceAddress = this.staging.address(chunk);
      this.sourceStaging = chunk;
      return this.params(byCallback);
    }
    const memh = flags & SEND_FLAG_MEMH ? this.rma.memh(ring.f64[(w >> 1) + SUB.handle]!) : 0;
    if (memh === 0) return this.params(byCallback); // a registration that failed: send without a handle
    this.param.set("memh", memh as number | bigint);
    return this.params(byCallback | C.UCP_OP_ATTR_FIELD_MEMH);
  }
  private sourceAddress = 0;
  private sourceStaging: number | undefined;

  /**
   * Track a send (its callback reports it: not polled), or report it done at once; frees its
   * staging chunk when UCX no longer needs it.
   */
  private trackSend(id: number, ep: number, result: Pointer, length: number, staging: number | undefined): void {
    if (result !== 0 && !ptrIsError(result)) {
      // Takeover: in the shared table, unless its bytes are staged here (only this thread frees them).
      if (this.fast && (staging !== undefined || !this.fast.add(result, id, FastKind.Send, ep))) {
        this.addInflight(id, { request: result, kind: "send", endpoint: ep, staging }, true);
      } else if (!this.fast) this.addInflight(id, { request: result, kind: "send", endpoint: ep, staging }, false);
      return;
    }
    if (staging !== undefined) this.staging.release(staging);
    if (result === 0) this.done(id, UCS_OK, length);
    else this.done(id, result);
  }

  private tagSend(ring: Ring, w: number, id: number, ep: number, address: number, length: number, tagLo: number, tagHi: number): void {
    const e = this.endpoint(ep);
    if (!e) return this.done(id, UCS_ERR_NOT_CONNECTED);
    if (e.failed) return this.done(id, e.failed);
    const param = this.sendSource(ring, w, id, address, length);
    const r = this.u.ucp_tag_send_nbx(e.handle, this.sourceAddress, length, tagArgument(tagLo, tagHi), param);
    this.trackSend(id, ep, r, length, this.sourceStaging);
  }

  /** ucp_tag_recv_nbx, always with a request (UCP_OP_ATTR_FLAG_NO_IMM_CMPL: see tagRecv). */
  private postTagRecv(address: number, length: number, tagLo: number, tagHi: number, maskLo: number, maskHi: number): Pointer {
    return this.u.ucp_tag_recv_nbx(
      this.worker,
      address,
      length,
      tagArgument(tagLo, tagHi),
      tagArgument(maskLo, maskHi),
      this.params(C.UCP_OP_ATTR_FLAG_NO_IMM_CMPL),
    );
  }

  private tagRecv(id: number, address: number, length: number, tagLo: number, tagHi: number, maskLo: number, maskHi: number): void {
    // UCX 1.13.1 does not fill `recv_info` when a receive completes in place (seen here), so
    // never let it: with NO_IMM_CMPL every receive gets a request, whose info
    // ucp_tag_recv_request_test reads when it is finished. Its callback queues it when it
    // completes, possibly inside this very call (a message already there); progress() finishes it.
    setUserData(this.recvParam, id);
    // Takeover: no callback (checked instead, by whichever thread holds the token).
    const param = this.fast ? this.params(C.UCP_OP_ATTR_FLAG_NO_IMM_CMPL) : this.recvParamAddress;
    const r = this.u.ucp_tag_recv_nbx(this.worker, address, length, tagArgument(tagLo, tagHi), tagArgument(maskLo, maskHi), param);
    if (!this.track(id, r, "tagRecv", 0)) return this.done(id, UCS_INPROGRESS); // cannot happen with NO_IMM_CMPL
  }

  /**
   * Does UCX hold a message matching (tag, mask) in its unexpected queue? Asked right before a
   * receive on a failed endpoint is posted, in the same step of this thread, so that no other
   * receive can take the message in between: the receive then matches it at once, and a receive
   * nothing can satisfy is refused instead of waiting forever for a peer that is gone.
   */
  private queued(tagLo: number, tagHi: number, maskLo: number, maskHi: number): boolean {
    return this.u.ucp_tag_probe_nb(this.worker, tagArgument(tagLo, tagHi), tagArgument(maskLo, maskHi), 0, this.recvInfoAddress) !== 0;
  }

  private tagProbe(id: number, tagLo: number, tagHi: number, maskLo: number, maskHi: number): void {
    const message = this.u.ucp_tag_probe_nb(this.worker, tagArgument(tagLo, tagHi), tagArgument(maskLo, maskHi), 0, this.recvInfoAddress);
    if (message === 0) return this.done(id, UCS_ERR_NO_MESSAGE);
    this.emitRequest(id, UCS_OK, this.recvLength(), this.recvInfoWords[0]!, this.recvInfoWords[1]!);
  }

  private streamSend(ring: Ring, w: number, id: number, ep: number, address: number, length: number): void {
    const e = this.endpoint(ep);
    if (!e) return this.done(id, UCS_ERR_NOT_CONNECTED);
    if (e.failed) return this.done(id, e.failed);
    const param = this.sendSource(ring, w, id, address, length);
    this.trackSend(id, ep, this.u.ucp_stream_send_nbx(e.handle, this.sourceAddress, length, param), length, this.sourceStaging);
  }

  private streamRecv(id: number, ep: number, address: number, length: number): void {
    const e = this.endpoint(ep);
    if (!e) return this.done(id, UCS_ERR_NOT_CONNECTED);
    if (e.failed) return this.done(id, e.failed);
    if (length === 0) return this.done(id, UCS_OK, 0); // UCX rejects a zero-length stream receive
    const r = this.u.ucp_stream_recv_nbx(
      e.handle,
      address,
      length,
      this.out.address(),
      this.params(C.UCP_OP_ATTR_FIELD_FLAGS, C.UCP_STREAM_RECV_FLAG_WAITALL),
    );
    if (!this.track(id, r, "streamRecv", ep)) this.done(id, UCS_OK, this.out.pointer());
  }

  private cancel(target: number): void {
    const r = this.inflight.get(target);
    // Not in flight: it already completed (its completion is on its way) or never started.
    if (r) return this.u.ucp_request_cancel(this.worker, r.request);
    if (this.fast?.cancel(this.worker, target)) return;
    const batch = this.batches.get(target);
    if (batch instanceof MultiReceive && this.multiQueues.isWaiting(batch)) {
      this.multiQueues.release(batch);
      batch.cancelQueued();
    } else batch?.cancel();
  }

  // --- multi-buffer batches (multi-transfer.ts) ---------------------------------------------

  private multiSend(id: number, ep: number, descriptor: number, count: number, tagLo: number, tagHi: number): void {
    const e = this.endpoint(ep);
    if (!e) return this.done(id, UCS_ERR_NOT_CONNECTED);
    if (e.failed) return this.done(id, e.failed);
    const batch = new MultiSend(this.parts, id, (bid, status, value) => this.batchDone(bid, status, value));
    this.batches.set(id, batch);
    batch.start(ep, descriptor, count, tagLo, tagHi);
  }

  private multiRecv(id: number, tag: [number, number, number, number], limits: { maxBytes: number; maxHeaders: number }, ifQueued: boolean): void {
    const batch = new MultiReceive(
      this.parts,
      id,
      tag,
      limits,
      (bid, status, value, payload) => this.batchDone(bid, status, value, payload),
      (r) => this.multiQueues.release(r),
      ifQueued,
    );
    this.batches.set(id, batch);
    this.multiQueues.add(batch, tag);
  }

  private batchDone(id: number, status: number, value: number, payload?: Payload): void {
    this.batches.delete(id);
    if (payload) this.deliver(payload); // first: the application takes it when the completion arrives
    this.done(id, status, value);
  }

  private sendPart(owner: object, ep: number, address: number, length: number, tagLo: number, tagHi: number, onDone: PartDone): void {
    const e = this.endpoint(ep);
    if (!e) return onDone(UCS_ERR_NOT_CONNECTED, 0, 0, 0);
    if (e.failed) return onDone(e.failed, 0, 0, 0);
    const r = this.u.ucp_tag_send_nbx(e.handle, address, length, tagArgument(tagLo, tagHi), this.params(0));
    if (r === 0) return onDone(UCS_OK, length, 0, 0);
    if (ptrIsError(r)) return onDone(r, 0, 0, 0);
    this.queuePart(owner, { request: r, kind: "send", onDone });
  }

  private recvPart(
    owner: object,
    address: number,
    length: number,
    tagLo: number,
    tagHi: number,
    maskLo: number,
    maskHi: number,
    onDone: PartDone,
    ifQueued: boolean,
  ): void {
    if (ifQueued && !this.queued(tagLo, tagHi, maskLo, maskHi)) return onDone(UCS_ERR_NO_MESSAGE, 0, 0, 0);
    const r = this.postTagRecv(address, length, tagLo, tagHi, maskLo, maskHi);
    if (ptrIsError(r)) return onDone(r, 0, 0, 0);
    const part: OwnedRequest = { request: r, kind: "tagRecv", onDone };
    // Already matched (an unexpected message was waiting) and the queue is empty: finish now.
    const q = this.partQueues.get(owner);
    if ((!q || q.next >= q.parts.length) && this.u.ucp_request_check_status(r) !== UCS_INPROGRESS) {
      return this.finishPart(part, this.u.ucp_request_check_status(r));
    }
    this.queuePart(owner, part);
  }

  private endpointCreate(op: Op, id: number, ep: number, address: number, length: number, handle: number, flags: number): void {
    const u = this.u;
    const p = u.struct("ucp_ep_params_t");
    let mask = C.UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE | C.UCP_EP_PARAM_FIELD_ERR_HANDLER;
    if (op === Op.EndpointCreateAddress) {
      mask |= C.UCP_EP_PARAM_FIELD_REMOTE_ADDRESS;
      p.set("address", address);
    } else if (op === Op.EndpointCreateSockaddr) {
      mask |= C.UCP_EP_PARAM_FIELD_SOCK_ADDR | C.UCP_EP_PARAM_FIELD_FLAGS;
      p.set("flags", C.UCP_EP_PARAMS_FLAGS_CLIENT_SERVER);
      p.set("sockaddr.addr", address);
      p.set("sockaddr.addrlen", length);
    } else {
      mask |= C.UCP_EP_PARAM_FIELD_CONN_REQUEST;
      p.set("conn_request", handle);
    }
    p.set("field_mask", mask);
    p.set("err_mode", flags & EP_FLAG_ERR_PEER ? C.UCP_ERR_HANDLING_MODE_PEER : C.UCP_ERR_HANDLING_MODE_NONE);
    p.set("err_handler.cb", this.errorCallback.address);
    p.set("err_handler.arg", ep);
    const status = u.ucp_ep_create(this.worker, u.addressOf(p.bytes), this.out.address());
    if (status === UCS_OK) {
      this.endpoints.set(ep, { handle: this.out.pointer(), peer: (flags & EP_FLAG_ERR_PEER) !== 0, failed: 0 });
      this.endpointByHandle.set(this.out.pointer(), ep);
      this.takeover?.setEndpoint(ep, this.out.pointer() as number);
    }
    this.done(id, status);
  }

  private endpointClose(id: number, ep: number, force: boolean): void {
    const e = this.endpoint(ep);
    if (!e) return this.done(id, UCS_OK); // already gone (closed after an error)
    this.takeover?.dropEndpoint(ep);
    this.rma.destroyRkeysOf(ep);
    this.endpointByHandle.delete(e.handle);
    // A failed endpoint can only be force-closed, and only peer-mode endpoints can be (ucp.h;
    // UCX answers UCS_ERR_INVALID_PARAM otherwise): a "none" endpoint always flushes and closes.
    const flags = (force || e.failed) && e.peer ? C.UCP_EP_CLOSE_FLAG_FORCE : 0;
    const r = this.u.ucp_ep_close_nbx(e.handle, this.params(C.UCP_OP_ATTR_FIELD_FLAGS, flags));
    if (!this.track(id, r, "close", ep, ep)) {
      this.endpoints.delete(ep);
      this.done(id, UCS_OK);
    }
  }

  private flush(id: number, ep: number): void {
    let r: Pointer;
    if (ep === 0) r = this.u.ucp_worker_flush_nbx(this.worker, this.params(0));
    else {
      const e = this.endpoint(ep);
      if (!e) return this.done(id, UCS_ERR_NOT_CONNECTED);
      if (e.failed) return this.done(id, e.failed);
      r = this.u.ucp_ep_flush_nbx(e.handle, this.params(0));
    }
    if (!this.track(id, r, "flush", ep)) this.done(id, UCS_OK);
  }

  /** `ucp_ep_print_info` into the caller's buffer (address, capacity); value = bytes needed. */
  private endpointInfo(id: number, ep: number, address: number, capacity: number): void {
    const e = this.endpoint(ep);
    if (!e) return this.done(id, UCS_ERR_NOT_CONNECTED);
    const text = new TextEncoder().encode(capturePrint((file) => this.u.ucp_ep_print_info(e.handle, file)));
    this.copyOut(id, text, address, capacity);
  }

  private copyOut(id: number, bytes: Uint8Array, address: number, capacity: number): void {
    if (bytes.length > capacity) return this.done(id, UCS_ERR_BUFFER_TOO_SMALL, bytes.length);
    new Uint8Array(this.u.view(address, bytes.length)).set(bytes);
    this.done(id, UCS_OK, bytes.length);
  }

  private workerAddress(id: number, address: number, capacity: number): void {
    const u = this.u;
    const status = u.ucp_worker_get_address(this.worker, this.out.address(0), this.out.address(1));
    if (status !== UCS_OK) return this.done(id, status);
    const local = this.out.pointer(0);
    try {
      this.copyOut(id, new Uint8Array(u.view(local, this.out.pointer(1))), address, capacity);
    } finally {
      u.ucp_worker_release_address(this.worker, local);
    }
  }

  private listen(id: number, listener: number, address: number, length: number): void {
    const u = this.u;
    const p = u.struct("ucp_listener_params_t");
    p.set("field_mask", C.UCP_LISTENER_PARAM_FIELD_SOCK_ADDR | C.UCP_LISTENER_PARAM_FIELD_CONN_HANDLER);
    p.set("sockaddr.addr", address);
    p.set("sockaddr.addrlen", length);
    p.set("conn_handler.cb", this.connCallback.address);
    p.set("conn_handler.arg", listener);
    const status = u.ucp_listener_create(this.worker, u.addressOf(p.bytes), this.out.address());
    if (status !== UCS_OK) return this.done(id, status);
    const handle = this.out.pointer();
    this.listeners.set(listener, handle);
    // Report the port actually bound (port 0 asks the OS for a free one).
    const attr = u.struct("ucp_listener_attr_t");
    attr.set("field_mask", C.UCP_LISTENER_ATTR_FIELD_SOCKADDR);
    const q = u.ucp_listener_query(handle, u.addressOf(attr.bytes));
    const sa = attr.getBytes("sockaddr");
    this.done(id, q, q === UCS_OK ? (sa[2]! << 8) | sa[3]! : 0);
  }

  private listenerClose(id: number, listener: number): void {
    const h = this.listeners.get(listener);
    if (h !== undefined) {
      this.u.ucp_listener_destroy(h);
      this.listeners.delete(listener);
    }
    this.done(id, UCS_OK);
  }

  private listenerReject(id: number, listener: number, connRequest: number): void {
    const h = this.listeners.get(listener);
    this.done(id, h === undefined ? UCS_ERR_NO_ELEM : this.u.ucp_listener_reject(h, connRequest));
  }

  // --- callbacks from inside ucp_worker_progress ----------------------------------------------

  private onConnectionRequest(listener: number, connRequest: number): void {
    const u = this.u;
    const attr = u.struct("ucp_conn_request_attr_t");
    attr.set("field_mask", C.UCP_CONN_REQUEST_ATTR_FIELD_CLIENT_ADDR);
    let ip = 0;
    let port = 0;
    if (u.ucp_conn_request_query(connRequest, u.addressOf(attr.bytes)) === UCS_OK) {
      const sa = attr.getBytes("client_address");
      const family = sa[0]! | (sa[1]! << 8);
      if (family === 2 /* AF_INET */) {
        port = (sa[2]! << 8) | sa[3]!;
        ip = ((sa[4]! << 24) | (sa[5]! << 16) | (sa[6]! << 8) | sa[7]!) >>> 0;
      }
    }
    this.emit({ kind: CompletionKind.ConnectionRequest, id: listener, status: UCS_OK, value: connRequest, tagLo: ip, tagHi: port, aux: 0 });
  }

  private onEndpointError(ep: number, status: number): void {
    const e = this.endpoints.get(ep);
    if (!e || e.failed) return;
    e.failed = status;
    this.takeover?.failEndpoint(ep, status);
    this.needToken();
    // Closing from inside UCX's callback is not allowed: do it on the next progress round.
    this.failedEndpoints.push(ep);
    this.endpointErrors.push({ ep, status }); // reported at the end of this round (see progress)
  }

  private reportEndpointErrors(): number {
    const errors = this.endpointErrors.splice(0);
    for (const { ep, status } of errors) {
      this.emit({ kind: CompletionKind.EndpointError, id: ep, status, value: 0, tagLo: 0, tagHi: 0, aux: 0 });
    }
    return errors.length;
  }

  private closeFailed(ep: number): void {
    const e = this.endpoints.get(ep);
    if (!e) return;
    this.takeover?.dropEndpoint(ep);
    this.rma.destroyRkeysOf(ep);
    this.endpointByHandle.delete(e.handle);
    const r = this.u.ucp_ep_close_nbx(e.handle, this.params(C.UCP_OP_ATTR_FIELD_FLAGS, C.UCP_EP_CLOSE_FLAG_FORCE));
    this.endpoints.delete(ep);
    // Nobody awaits this close: free its request when it is done, without a completion.
    if (r !== 0 && !ptrIsError(r)) this.addInflight(0x80000000 + ep, { request: r, kind: "close", endpoint: ep }, true);
  }

  // --- completions ---------------------------------------------------------------------------

  private done(id: number, status: number, value = 0): void {
    this.emitRequest(id, status, value, 0, 0);
  }

  private emitRequest(id: number, status: number, value: number, tagLo: number, tagHi: number): void {
    if (id === 0 || id >= 0x80000000) return; // internal request: nobody to tell
    this.emit({ kind: CompletionKind.Request, id, status, value, tagLo, tagHi, aux: 0 });
  }

  // --- sleeping and shutdown -----------------------------------------------------------------

  /** `ucp_worker_arm`: UCS_OK when it is safe to sleep, UCS_ERR_BUSY when events are pending. */
  arm(): number {
    // Nothing may sleep on a completion an idle round has not checked yet (see progress()).
    if ((this.completed.length > 0 && this.finishCompleted() > 0) || (this.polled.size > 0 && this.checkAll() > 0)) return UCS_ERR_BUSY;
    if (this.fast && this.fast.count > 0 && this.fast.checkAll(this.reportFast) > 0) return UCS_ERR_BUSY;
    return this.u.ucp_worker_arm(this.worker);
  }

  /** Sleep in `ucp_worker_wait` until UCX has an event or `ucp_worker_signal` is called. */
  wait(): number {
    return this.u.ucp_worker_wait(this.worker);
  }

  /**
   * Sleep on the worker's event fd for at most `timeoutMs` (poll(2); -1: no limit). Call after
   * `arm()` returned UCS_OK. Returns poll's result: >0 an event, 0 the timeout.
   */
  /** The worker's event fd (ucp_worker_get_efd), fetched once. */
  eventFd(): number {
    if (this.efd < 0) {
      check(this.u.ucp_worker_get_efd(this.worker, this.out.address()), "ucp_worker_get_efd");
      this.efd = this.out.i32();
    }
    return this.efd;
  }

  waitFd(timeoutMs: number): number {
    const u = this.u;
    const pollfd = this.pollfd;
    pollfd.setInt32(0, this.eventFd(), true);
    pollfd.setInt16(4, 1 /* POLLIN */, true);
    pollfd.setInt16(6, 0, true);
    return u.poll(this.pollfdAddress, 1, timeoutMs);
  }

  /** Release (ucp_request_free) every request and batch part still in flight, and forget them. */
  private releaseInflight(): void {
    for (const r of this.inflight.values()) this.u.ucp_request_free(r.request);
    this.inflight.clear();
    this.polled.clear();
    this.completed.length = 0;
    for (const q of this.partQueues.values()) for (let i = q.next; i < q.parts.length; i++) this.u.ucp_request_free(q.parts[i]!.request);
    this.partQueues.clear();
  }

  /**
   * Cancel everything in flight (each reported as UCS_ERR_CANCELED), force-close endpoints,
   * destroy listeners, the worker and the context. The executor is unusable afterwards.
   */
  destroy(): void {
    const u = this.u;
    for (const r of this.inflight.values()) u.ucp_request_cancel(this.worker, r.request);
    this.fast?.cancelAll(this.worker);
    for (const owner of [...this.partQueues.keys()]) this.parts.cancelParts(owner);
    this.am?.releasePending();
    for (let i = 0; i < 1000 && (this.inflight.size > 0 || this.partQueues.size > 0 || (this.fast?.count ?? 0) > 0); i++) {
      this.progress();
      // Parts posted by a batch's callbacks meanwhile (a header's next receive) are cancelled too.
      for (const owner of [...this.partQueues.keys()]) this.parts.cancelParts(owner);
    }
    // What UCX did not complete: released now (UCX asserts, and aborts the process, when it
    // destroys an endpoint with a request the application has not released), reported only
    // after the worker is destroyed, so that no buffer is let go while UCX could still touch it.
    const abandoned = [...this.inflight.keys(), ...(this.fast?.releaseAll() ?? [])];
    this.releaseInflight();
    for (const h of this.listeners.values()) u.ucp_listener_destroy(h);
    this.listeners.clear();
    this.rma.destroyRkeys();
    for (const [id, e] of this.endpoints) {
      const r = u.ucp_ep_close_nbx(e.handle, this.params(C.UCP_OP_ATTR_FIELD_FLAGS, e.peer ? C.UCP_EP_CLOSE_FLAG_FORCE : 0));
      if (r !== 0 && !ptrIsError(r)) this.addInflight(0x80000000 + id, { request: r, kind: "close", endpoint: id }, true);
    }
    this.endpoints.clear();
    // A "none" endpoint's close waits for its peer (a worker closing at the same moment, in a
    // pair in one process): give it some time, not just some rounds.
    const deadline = performance.now() + 500;
    for (let i = 0; this.inflight.size > 0 && (i < 1000 || performance.now() < deadline); i++) this.progress();
    this.releaseInflight();
    u.ucp_worker_destroy(this.worker);
    for (const id of abandoned) this.emitRequest(id, UCS_ERR_CANCELED, 0, 0, 0);
    this.rma.unmapAll();
    this.context.close();
    this.connCallback.close();
    this.errorCallback.close();
    this.recvCallback.close();
    this.sendCallback.close();
    this.am?.close();
  }
}

/** A request parameter struct's user_data (offset 32): the request id, which UCX hands back to the callback. */
function setUserData(param: ReturnType<Ucx["struct"]>, id: number): void {
  param.view.setUint32(32, id, true);
  param.view.setUint32(36, 0, true); // ids are u32
}
