/**
 * Polling and blocking modes: tag sends and receives handed to UCX straight from the caller's
 * call, for a caller that drives progress itself and counts completions with callbacks (the
 * collectives' steps, src/ucg/), for small `ep.send`s (SendPath.sendDirect), and for the
 * application's tag receives (`recvRequest`: their entry and Promise stay in the request table,
 * RequestPath.directReceive). The executor runs on the application thread in these modes, so
 * the posting call may call UCX itself: no submission record is written and read back, no
 * request entry, no operation table, no completion record (issue 23: that JavaScript around each
 * C call was ~1 us of a 2-rank 8 B allreduce's ~5 us).
 *
 * The engine's invariants hold as on the ring's path:
 *  - a request UCX keeps (a receive, a send not finished in place) keeps its buffer referenced in
 *    a slot here until its completion arrives, and the executor's shutdown cancels and releases
 *    it before the worker is destroyed (cancelAll, releaseAll), reporting it cancelled after;
 *  - order: the caller asks the engine first (InlineEngine.directOpen), which executes every
 *    record still in the ring, so a direct call never overtakes an earlier send or receive;
 *  - completions come through C callbacks that only queue (slot, status) and are finished inside
 *    the executor's progress round (finish), before the round's endpoint errors are reported.
 * A send UCX finished inside ucp_tag_send_nbx (an eager send: its bytes are copied) holds
 * nothing and reports nothing later.
 */
import { callbackTypes, ptrIsError, UCX_CONSTANTS as C, type NativeCallback, type Pointer, type Ucx } from "../../ffi/index.ts";
import { u64At } from "./fast-requests.ts";
import type { EndpointState } from "./op-host.ts";
import { tagArgument } from "./records.ts";
import type { InlineStaging } from "./inline-staging.ts";
import { setParamsMemh, type RequestHandles } from "./request-handles.ts";
import { setUserData } from "./tag-operations.ts";
import { mark, Mark, TURNAROUND } from "../turnaround.ts";

const UCS_OK = 0;
const UCS_INPROGRESS = 1;
const UCS_ERR_NOT_CONNECTED = -24;
const UCS_ERR_CANCELED = -16;

/**
 * Sends posted without a callback (`sendQueued`: a `sendMany` window's), in posting order: the
 * progress round checks them from `next` on and stops at the first UCX has not finished (one
 * endpoint's sends end in order), as the ring's part tracker checks a batch's parts.
 */
export interface SendQueue {
  /** The id of each send UCX kept, in posting order (its slot is `slotOf(id)`). */
  readonly ids: number[];
  /** The first not yet found finished. */
  next: number;
}

/** A direct request's end: its status and, for a receive, the received length (UCX's, also when truncated). */
export type DirectSettle = (status: number, length: number) => void;
/**
 * Where a receive of the request table ends (`recvRequest`): request `id`'s completion, with the
 * received length and the sender's tag, as the ring's completion records carry them.
 */
export type RequestSink = (id: number, status: number, length: number, tagLo: number, tagHi: number) => void;

/**
 * A request's id: DIRECT_BASE (above every id of the request table, requests.ts) + a count of
 * requests x SLOTS + its slot, so that a stale id never names a reused slot.
 */
const SLOTS = 2 ** 20;
const DIRECT_BASE = 2 ** 31;
/** The slot of request id `id`. */
const slotOf = (id: number): number => (id - DIRECT_BASE) % SLOTS;
const SEND_MASK = C.UCP_OP_ATTR_FIELD_CALLBACK | C.UCP_OP_ATTR_FIELD_USER_DATA;
const RECV_MASK = C.UCP_OP_ATTR_FLAG_NO_IMM_CMPL | SEND_MASK;
/** A polled receive's: no callback, no user data. */
const POLLED_MASK = C.UCP_OP_ATTR_FLAG_NO_IMM_CMPL;
/** A queued send's (sendQueued): no callback, no user data; it may finish in place. */
const QUEUED_SEND_MASK = 0;
/**
 * Receives posted while fewer than this many polled ones are in flight go without a callback:
 * `finish` finds them done with ucp_tag_recv_request_test, in rounds where UCX reported events
 * or this thread called UCX since (`touched`: a post, a send, a cancel; the executor's own
 * calls). A callback from C into JavaScript is dearer than a check: an 8 B round trip of the FFI
 * floor, two processes, detecting its receive by callback instead of by test, took Node +0.29,
 * Deno +0.64 and Bun +0.42 us (2026-12-07; bench/ffi-floor-peer.ts and its variant). But every
 * eventful round checks each polled receive: a few are cheaper than their callbacks, many would
 * not be, so beyond this many a receive takes the callback.
 */
const POLLED_MAX = 4;
/** Sends are told from receives by their slot's kind. */
const RECV = 1;
const SEND = 2;

export class DirectTags {
  private readonly recvCallback: NativeCallback;
  private readonly sendCallback: NativeCallback;
  /** Request parameters: receives with NO_IMM_CMPL (UCX 1.13 fills no info for one completed in place: tag-operations.ts). */
  private readonly recvParam: ReturnType<Ucx["struct"]>;
  private readonly recvParamAddress: Pointer;
  private readonly sendParam: ReturnType<Ucx["struct"]>;
  private readonly sendParamAddress: Pointer;
  /** Polled receives' parameters (POLLED_MASK, and a memory handle when one is given). */
  private readonly pollParam: ReturnType<Ucx["struct"]>;
  private readonly pollParamAddress: Pointer;
  /** Filled by ucp_tag_recv_request_test: sender tag, length (u32 words). */
  private readonly info: Uint32Array;
  private readonly infoAddress: Pointer;
  /** The slots of the receives posted without a callback, in posting order (POLLED_MAX). */
  private readonly polled: number[] = [];
  /** This thread called UCX since the polled receives were last checked: one may have completed. */
  private touched = false;
  /** What `finishPolled` found done, five words each (slot, status, length, tag lo, hi), reported after its scan. */
  private readonly polledDone: number[] = [];
  /** The send queues with sends in flight (sendQueued), checked by `finish`. */
  private readonly sendQueues: SendQueue[] = [];
  /** Queued sends' parameters (QUEUED_SEND_MASK, and a memory handle when one is given). */
  private readonly queuedSendParam: ReturnType<Ucx["struct"]>;
  private readonly queuedSendParamAddress: Pointer;

  // One entry per slot: the UCX request (0: free), its kind, id, settle and buffer.
  private readonly requests: number[] = [];
  private readonly kinds: number[] = [];
  private readonly ids: number[] = [];
  private readonly settles: (DirectSettle | undefined)[] = [];
  /** The request table's id of a `recvRequest` receive (0: none; it then reports to `requestSink`). */
  private readonly tableIds: number[] = [];
  /** Where `recvRequest` receives report (set by the request path that posts them). */
  requestSink: RequestSink = () => {};
  private readonly keeps: unknown[] = [];
  /** The memory handle mapped for the slot's request (0: none). */
  private readonly memhs: Pointer[] = [];
  /** The staging chunk holding the slot's send bytes (sendCopy; -1: none). */
  private readonly chunks: number[] = [];
  /** The endpoint id of the slot's send (0: a receive), for `sendsTo`. */
  private readonly endpoints: number[] = [];
  private readonly free: number[] = [];
  private sequence = 0;
  /** Requests in flight (held in slots). */
  count = 0;
  /** Sends and receives handed to UCX this way (the tests see the path was taken). */
  readonly posted = { sends: 0, receives: 0 };

  /** Sends and receives posted so far, together: a driver sees the application post (event-loop.ts postedAndWaiting). */
  get posts(): number {
    return this.posted.sends + this.posted.receives;
  }
  /** (slot, status) pairs queued by the callbacks, finished by `finish`. */
  private readonly completed: number[] = [];
  private completedWords = 0;
  private finishing = false;

  constructor(
    private readonly u: Ucx,
    private readonly worker: Pointer,
    private readonly endpoint: (id: number) => EndpointState | undefined,
    /** Memory handles for requests that may go by rendezvous, where this UCX needs them (request-handles.ts). */
    private readonly handles: RequestHandles,
    /** The executor's staging memory for inline sends (sendCopy). */
    private readonly staging: InlineStaging,
  ) {
    // Both fire inside ucp_worker_progress or ucp_request_cancel (a receive's also inside its
    // posting call, a message already there): they only queue; `finish` does the rest.
    this.recvCallback = u.callback(callbackTypes.ucp_tag_recv_nbx_callback_t, (_request: number, status: number, _info: number, slot: number) => {
      if (TURNAROUND) mark(Mark.Arrived);
      this.queue(slot, status);
    });
    this.sendCallback = u.callback(callbackTypes.ucp_send_nbx_callback_t, (_request: number, status: number, slot: number) => this.queue(slot, status));
    this.recvParam = u.struct("ucp_request_param_t");
    this.recvParam.set("op_attr_mask", RECV_MASK);
    this.recvParam.set("cb", this.recvCallback.address);
    this.recvParamAddress = u.addressOf(this.recvParam.bytes);
    this.sendParam = u.struct("ucp_request_param_t");
    this.sendParam.set("op_attr_mask", SEND_MASK);
    this.sendParam.set("cb", this.sendCallback.address);
    this.sendParamAddress = u.addressOf(this.sendParam.bytes);
    this.pollParam = u.struct("ucp_request_param_t");
    this.pollParam.set("op_attr_mask", POLLED_MASK);
    this.pollParamAddress = u.addressOf(this.pollParam.bytes);
    this.queuedSendParam = u.struct("ucp_request_param_t");
    this.queuedSendParam.set("op_attr_mask", QUEUED_SEND_MASK);
    this.queuedSendParamAddress = u.addressOf(this.queuedSendParam.bytes);
    const info = u.struct("ucp_tag_recv_info_t");
    this.info = new Uint32Array(info.bytes.buffer, info.bytes.byteOffset, 4);
    this.infoAddress = u.addressOf(info.bytes);
  }

  /**
   * ucp_tag_send_nbx of `length` bytes at `address` (of `keep`) on endpoint `ep` with tag
   * (tagLo, tagHi). Returns UCS_OK when UCX finished it in place (nothing held, nothing reported
   * later), a negative status when it failed now, or a request id (DirectTags.owns) when it is
   * in flight: give it its settle with `settleWith` before the next progress round, which may
   * finish it.
   */
  send(ep: number, address: number, length: number, tagLo: number, tagHi: number, keep: unknown, chunk = -1): number {
    return this.postSend(ep, address, length, tagLo, tagHi, keep, chunk, this.sendParam, this.sendParamAddress, SEND_MASK);
  }

  /**
   * `send` without a callback into JavaScript, for a window of sends (Endpoint.sendMany): one
   * UCX keeps joins queue `q` and is found finished by the progress round's check of `q`, in
   * posting order, instead of by a callback (a callback from C costs Deno ~0.6 us, Node ~0.3;
   * in windows of 256 x 8 B, 75-81 % of the sends outlast the call while shared memory's FIFO
   * is full). Returns as `send` does; give an id its settle with `settleWith`.
   */
  sendQueued(q: SendQueue, ep: number, address: number, length: number, tagLo: number, tagHi: number, keep: unknown): number {
    const id = this.postSend(ep, address, length, tagLo, tagHi, keep, -1, this.queuedSendParam, this.queuedSendParamAddress, QUEUED_SEND_MASK);
    if (id <= 0) return id; // finished in place, or failed
    if (q.ids.length === q.next) this.sendQueues.push(q); // its first send in flight (again)
    q.ids.push(id);
    return id;
  }

  /** One ucp_tag_send_nbx with `param` (its op_attr_mask `mask`: with a callback, the slot is its user data); as `send` returns. */
  private postSend(ep: number, address: number, length: number, tagLo: number, tagHi: number, keep: unknown, chunk: number, param: ReturnType<Ucx["struct"]>, paramAddress: Pointer, mask: number): number {
    const e = this.endpoint(ep);
    if (!e) return UCS_ERR_NOT_CONNECTED;
    if (e.failed) return e.failed;
    const slot = this.nextSlot();
    if (mask === SEND_MASK) setUserData(param, slot);
    this.posted.sends++;
    // Only a peer-error-handling endpoint invalidates a failed rendezvous (request-handles.ts).
    const memh = e.peer ? this.handles.map(address, length) : 0;
    if (memh) setParamsMemh(param, mask, memh);
    if (TURNAROUND) mark(Mark.Posted);
    // A send to this worker itself may complete a polled receive inside the call.
    this.touched = true;
    const r = this.u.ucp_tag_send_nbx(e.handle, address, length, tagArgument(tagLo, tagHi), paramAddress);
    if (memh) setParamsMemh(param, mask, 0);
    if (r === 0 || ptrIsError(r)) {
      this.handles.release(memh);
      return r === 0 ? UCS_OK : r;
    }
    return this.hold(slot, r, SEND, keep, undefined, memh, chunk, 0, ep);
  }

  /**
   * How many sends to endpoint `ep` UCX still holds (a forced close's quiesce waits for them,
   * endpoint-quiesce.ts). A scan of the slots: asked only while an endpoint closes, so the
   * sends themselves pay one array write for it.
   */
  sendsTo(ep: number): number {
    let n = 0;
    for (let slot = 0; slot < this.requests.length; slot++) if (this.requests[slot]! !== 0 && this.endpoints[slot] === ep) n++;
    return n;
  }

  /**
   * `send` of a copy of `bytes` (at most INLINE_CAPACITY), staged as the ring's inline sends
   * are (inline-staging.ts): the caller may reuse `bytes` at once, and no address of its buffer
   * is taken (taking one moves a small on-heap array off the heap). Returns as `send` does; the
   * chunk goes back when UCX is done with it (at once when it finished the send in place).
   */
  sendCopy(ep: number, bytes: Uint8Array, tagLo: number, tagHi: number): number {
    const chunk = this.staging.stage(bytes);
    const r = this.send(ep, this.staging.address(chunk), bytes.length, tagLo, tagHi, undefined, chunk);
    if (r <= 0) this.staging.release(chunk);
    return r;
  }

  /** The settle of send `id` that `send` left in flight (made only for those: most finish in place). */
  settleWith(id: number, settle: DirectSettle): void {
    const slot = slotOf(id);
    if (this.ids[slot] === id) this.settles[slot] = settle;
  }

  /**
   * A worker-wide ucp_tag_recv_nbx of exactly (tagLo, tagHi) into `length` bytes at `address`
   * (of `keep`). Returns its request id (`cancel` takes it), or a negative status when UCX
   * refused it; `settle(status, length)` runs from inside the progress round that finishes it.
   */
  recv(address: number, length: number, tagLo: number, tagHi: number, keep: unknown, settle: DirectSettle): number {
    return this.post(address, length, tagLo, tagHi, 0xffffffff, 0xffffffff, keep, settle, 0);
  }

  /**
   * A worker-wide ucp_tag_recv_nbx of (tagLo, tagHi) under (maskLo, maskHi) for request `tableId`
   * of the request table (requests.ts: its Promise, owner and buffers live there, as for a
   * receive the ring carries), reported to `requestSink` from inside the progress round that
   * finishes it, with the received length and the sender's tag. Returns as `recv` does.
   */
  recvRequest(tableId: number, address: number, length: number, tagLo: number, tagHi: number, maskLo: number, maskHi: number, keep: unknown): number {
    return this.post(address, length, tagLo, tagHi, maskLo, maskHi, keep, undefined, tableId);
  }

  private post(address: number, length: number, tagLo: number, tagHi: number, maskLo: number, maskHi: number, keep: unknown, settle: DirectSettle | undefined, tableId: number): number {
    const slot = this.nextSlot();
    const poll = this.polled.length < POLLED_MAX;
    const param = poll ? this.pollParam : this.recvParam;
    const mask = poll ? POLLED_MASK : RECV_MASK;
    if (!poll) setUserData(this.recvParam, slot);
    this.posted.receives++;
    // A receive's rendezvous may hand its buffer's rkey to the sender (request-handles.ts).
    const memh = this.handles.map(address, length);
    if (memh) setParamsMemh(param, mask, memh);
    const r = this.u.ucp_tag_recv_nbx(this.worker, address, length, tagArgument(tagLo, tagHi), tagArgument(maskLo, maskHi), poll ? this.pollParamAddress : this.recvParamAddress);
    if (memh) setParamsMemh(param, mask, 0);
    if (ptrIsError(r)) {
      this.handles.release(memh);
      return r;
    }
    const id = this.hold(slot, r, RECV, keep, settle, memh, -1, tableId);
    if (poll) {
      this.polled.push(slot);
      // A message already there completed it inside the call.
      this.touched = true;
    }
    return id;
  }

  /** Is `id` one of ours (a request id `send` or `recv` returned)? */
  static owns(id: number): boolean {
    return id >= DIRECT_BASE;
  }

  /** Ask UCX to cancel request `id` (it then settles with UCS_ERR_CANCELED); one already finished is left alone. */
  cancel(id: number): void {
    const slot = slotOf(id);
    if (this.ids[slot] === id && this.requests[slot]! !== 0) {
      this.touched = true;
      this.u.ucp_request_cancel(this.worker, this.requests[slot]!);
    }
  }

  /** The slot the next request takes if UCX keeps it (its user data is set before the call). */
  private nextSlot(): number {
    const free = this.free;
    return free.length > 0 ? free[free.length - 1]! : this.requests.length;
  }

  private hold(slot: number, request: number, kind: number, keep: unknown, settle: DirectSettle | undefined, memh: Pointer, chunk = -1, tableId = 0, ep = 0): number {
    if (slot === this.requests.length) {
      if (slot >= SLOTS) throw new RangeError("too many direct tag requests in flight");
      this.requests.push(0);
      this.kinds.push(0);
      this.ids.push(0);
      this.settles.push(undefined);
      this.tableIds.push(0);
      this.keeps.push(undefined);
      this.memhs.push(0);
      this.chunks.push(-1);
      this.endpoints.push(0);
    } else this.free.pop();
    // Ids stay below 2^52 (exact Numbers).
    this.sequence = (this.sequence % 0x7fffffff) + 1;
    const id = DIRECT_BASE + this.sequence * SLOTS + slot;
    this.requests[slot] = request;
    this.kinds[slot] = kind;
    this.ids[slot] = id;
    this.settles[slot] = settle;
    this.tableIds[slot] = tableId;
    this.keeps[slot] = keep;
    this.memhs[slot] = memh;
    this.chunks[slot] = chunk;
    this.endpoints[slot] = ep;
    this.count++;
    return id;
  }

  private queue(slot: number, status: number): void {
    const q = this.completed;
    q[this.completedWords++] = slot;
    q[this.completedWords++] = status;
  }

  /**
   * Is a polled receive (or a queued send) done that no round has reported yet? (Checked before
   * the thread sleeps: the next round then checks them, whatever UCX reports.)
   */
  anyPolledDone(): boolean {
    for (const slot of this.polled) {
      if (this.u.ucp_request_check_status(this.requests[slot]!) !== UCS_INPROGRESS) {
        this.touched = true;
        return true;
      }
    }
    // A queue's first unfinished send (the rest end after it).
    for (const q of this.sendQueues) {
      const request = q.next < q.ids.length ? this.liveRequest(q.ids[q.next]!) : 0;
      if (request !== 0 && this.u.ucp_request_check_status(request) !== UCS_INPROGRESS) {
        this.touched = true;
        return true;
      }
    }
    return false;
  }

  /**
   * Finish the requests whose callbacks fired, the queued sends that are done, and the polled
   * receives that are done if this round may have completed one (`eventful`: UCX reported
   * events, or the executor called UCX since the last round): read a receive's length, free the
   * request, settle. Returns how many.
   */
  finish(eventful = true): number {
    if (this.finishing) return 0;
    const check = this.polled.length > 0 && (eventful || this.touched);
    // Every round, as the ring's part tracker checks a batch's parts: a send UCX kept while
    // shared memory's FIFO was full is sent from UCX's pending queue in a round that need not
    // report an event (nothing arrived), and nothing else would look at it again.
    const checkSends = this.sendQueues.length > 0;
    if (this.completedWords === 0 && !check && !checkSends) return 0;
    this.finishing = true;
    let n = 0;
    try {
      if (check) n += this.finishPolled();
      if (checkSends) n += this.finishSendQueues();
      n += this.finishQueued();
    } finally {
      this.finishing = false;
    }
    return n;
  }

  /** The polled receives that are done: taken out of `polled` first (a settle may post more), then finished in posting order. */
  private finishPolled(): number {
    this.touched = false;
    const polled = this.polled;
    const done = this.polledDone;
    let words = 0;
    for (let i = 0; i < polled.length; ) {
      const slot = polled[i]!;
      const status = this.u.ucp_tag_recv_request_test(this.requests[slot]!, this.infoAddress);
      if (status === UCS_INPROGRESS) {
        i++;
        continue;
      }
      polled.splice(i, 1);
      if (TURNAROUND) mark(Mark.Arrived);
      // Valid for a truncated message too: the length is then the incoming size.
      done[words++] = slot;
      done[words++] = status;
      done[words++] = u64At(this.info, 2);
      done[words++] = this.info[0]!;
      done[words++] = this.info[1]!;
    }
    for (let i = 0; i < words; i += 5) this.end(done[i]!, done[i + 1]!, done[i + 2]!, done[i + 3]!, done[i + 4]!);
    return words / 5;
  }

  /**
   * The queued sends UCX has finished, each queue checked in posting order up to the first it has
   * not (sendQueued): one check per queue in a round where none finished. A send the shutdown
   * released is skipped (its id no longer names its slot).
   */
  private finishSendQueues(): number {
    const queues = this.sendQueues;
    let n = 0;
    for (let i = 0; i < queues.length; ) {
      const q = queues[i]!;
      while (q.next < q.ids.length) {
        const id = q.ids[q.next]!;
        const request = this.liveRequest(id);
        if (request === 0) {
          q.next++;
          continue;
        }
        const status = this.u.ucp_request_check_status(request);
        if (status === UCS_INPROGRESS) break;
        q.next++;
        n++;
        this.end(slotOf(id), status, 0, 0, 0);
      }
      if (q.next < q.ids.length) i++;
      else queues.splice(i, 1);
    }
    return n;
  }

  /** The UCX request of `id` while it is in flight; 0 once it ended or the shutdown released it (its slot may be another's). */
  private liveRequest(id: number): number {
    const slot = slotOf(id);
    return this.ids[slot] === id ? this.requests[slot]! : 0;
  }

  /** The requests whose callbacks fired. */
  private finishQueued(): number {
    if (this.completedWords === 0) return 0;
    const q = this.completed;
    let n = 0;
    try {
      // A settle may cancel other requests, whose callbacks queue more pairs: the loop takes them too.
      for (let i = 0; i < this.completedWords; i += 2) {
        const slot = q[i]!;
        const request = this.requests[slot]!;
        if (request === undefined || request === 0) continue;
        let length = 0;
        // Valid for a truncated message too: the length is then the incoming size.
        if (this.kinds[slot] === RECV) {
          this.u.ucp_tag_recv_request_test(request, this.infoAddress);
          length = u64At(this.info, 2);
        }
        n++;
        // The sender's tag: the info's first u64 (as two u32 words).
        this.end(slot, q[i + 1]!, length, this.info[0]!, this.info[1]!);
      }
    } finally {
      this.completedWords = 0;
    }
    return n;
  }

  /** Request `slot` ended with `status`: free it, let go of its slot, and report it where it goes. */
  private end(slot: number, status: number, length: number, tagLo: number, tagHi: number): void {
    this.u.ucp_request_free(this.requests[slot]!);
    this.handles.release(this.memhs[slot]);
    const tableId = this.tableIds[slot]!;
    const settle = this.release(slot);
    if (tableId !== 0) this.requestSink(tableId, status, length, tagLo, tagHi);
    else settle?.(status, length);
  }

  private release(slot: number): DirectSettle | undefined {
    const settle = this.settles[slot];
    this.requests[slot] = 0;
    this.settles[slot] = undefined;
    this.tableIds[slot] = 0;
    this.keeps[slot] = undefined;
    this.memhs[slot] = 0;
    const chunk = this.chunks[slot]!;
    if (chunk >= 0) {
      this.staging.release(chunk);
      this.chunks[slot] = -1;
    }
    this.free.push(slot);
    this.count--;
    return settle;
  }

  /** Shutdown: cancel every request in flight (each settles UCS_ERR_CANCELED as progress finishes it). */
  cancelAll(): void {
    this.touched = true;
    for (let slot = 0; slot < this.requests.length; slot++) if (this.requests[slot]! !== 0) this.u.ucp_request_cancel(this.worker, this.requests[slot]!);
  }

  /**
   * Shutdown, before the worker is destroyed: free what UCX did not finish. Returns their settles,
   * to be told UCS_ERR_CANCELED only once the worker is gone (their buffers are let go then).
   */
  releaseAll(): (() => unknown)[] {
    const abandoned: (() => unknown)[] = [];
    for (let slot = 0; slot < this.requests.length; slot++) {
      const request = this.requests[slot]!;
      if (request === 0) continue;
      this.u.ucp_request_free(request);
      this.handles.abandon(this.memhs[slot]); // unmapped once the worker is gone
      const keep = this.keeps[slot];
      const tableId = this.tableIds[slot]!;
      const sink = this.requestSink;
      const settle = this.release(slot);
      abandoned.push(() => {
        if (tableId !== 0) sink(tableId, UCS_ERR_CANCELED, 0, 0, 0);
        else settle?.(UCS_ERR_CANCELED, 0);
        // Held until now by returning it: a closure that only names it (`void keep`) may not
        // keep it (under Bun such a header was collected while UCX still read it: am-atomics.ts).
        return keep;
      });
    }
    this.completedWords = 0;
    this.polled.length = 0;
    this.sendQueues.length = 0;
    return abandoned;
  }

  /** The executor is destroyed: UCX calls these callbacks no more. */
  close(): void {
    this.recvCallback.close();
    this.sendCallback.close();
  }
}
