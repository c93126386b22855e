/**
 * Active messages on the executor's thread: UCX's AM handler (id 0 for UCXX's messages, other
 * ids on request), sends, and delivery. Eager data is valid only inside UCX's callback, so it is
 * copied there; rendezvous data is fetched with ucp_am_recv_data_nbx into memory allocated here,
 * or reused from what the application released (am-buffer-pool.ts). Into reused memory the
 * fetch starts inside the AM callback, as ucx_perftest's ucp_am_bw does, else right after
 * progress; it reports its end through a callback (with takeover, where a callback could fire
 * on the other thread: it starts after progress and is checked each round instead). Both reach
 * the application as a payload with a completion record, in UCX's arrival order per (endpoint,
 * AM id): a rendezvous message is ready only once fetched, and the ones behind it wait.
 */
import { callbackTypes, ptrIsError, UCX_CONSTANTS as C, type NativeCallback, type Pointer } from "../../ffi/index.ts";
import { CompletionKind } from "./records.ts";
import type { OpHost } from "./op-host.ts";
import { AM_POOL_MIN_BYTES, AmBufferPool } from "./am-buffer-pool.ts";
import { setUserData } from "./tag-operations.ts";
import { AmPack } from "./am-pack.ts";
import { setParamsMemh } from "./request-handles.ts";
import type { Payload } from "./payload.ts";
import type { AmAtomics } from "./am-atomics.ts";
import { ATOMIC_AM_ID } from "./am-atomic-wire.ts";
import { amSendFlags } from "../am/send-protocol.ts";

const UCS_OK = 0;
const UCS_INPROGRESS = 1;
const UCS_ERR_NO_MEMORY = -4;
const UCS_ERR_NOT_CONNECTED = -24;

/** One active message on its way to the application, in its (endpoint, AM id) order. */
interface AmSlot {
  readonly amId: number;
  readonly endpoint: number;
  readonly header: Uint8Array;
  buffer: ArrayBuffer | undefined;
  /** The message's length (its buffer, reused, may be larger). */
  length: number;
  status: number;
  ready: boolean;
}

/** A rendezvous message announced by UCX, not fetched yet. */
interface Announced {
  readonly desc: Pointer;
  readonly length: number;
  readonly slot: AmSlot;
}

/** A fetch in flight that reports itself (ucp_am_recv_data_nbx with a callback). */
interface Fetching {
  request: Pointer;
  readonly buffer: ArrayBuffer;
  readonly slot: AmSlot;
  /** The memory handle mapped for it (request-handles.ts; 0: none), unmapped when it ends. */
  readonly memh: Pointer;
}

/** A fetch's parameters: it reports itself through its callback, with its key as user data. */
const FETCH_MASK = C.UCP_OP_ATTR_FIELD_CALLBACK | C.UCP_OP_ATTR_FIELD_USER_DATA;

/** Event ids of payloads that answer no request (active messages): 2^31 .. 2^32-1. */
const EVENT_ID_FIRST = 0x80000000;

/**
 * Eager data up to this size is copied (one memcpy) into a staging area of ours, then into the
 * message's own ArrayBuffer with a JavaScript slice; larger data straight into its own (one memcpy).
 */
const STAGING_BYTES = 64 * 1024;

/**
 * UCXX's plain header for host memory (no callback, no user header): 14 zero bytes. One array
 * stands for every such header received: the router only decodes it (AM id 0), nobody sees it.
 */
const PLAIN_HEADER = new Uint8Array(14);

/** The key of an (endpoint, AM id) order: a number, not a string made per message. */
const orderKey = (endpoint: number, amId: number) => endpoint * 0x10000 + amId;

export class ActiveMessages {
  private readonly callback: NativeCallback;
  /** Rendezvous messages announced inside the callback, fetched right after progress. */
  private readonly pending: Announced[] = [];
  /** Fetches in flight that report themselves, by the key given to UCX as user data. */
  private readonly fetching = new Map<number, Fetching>();
  /** (key, status) pairs of fetches whose callback fired, finished after progress. */
  private readonly fetched: number[] = [];
  private nextFetchKey = 1;
  private readonly fetchCallback: NativeCallback;
  /** ucp_request_param_t of every fetch that reports itself: the callback, a key as user data. */
  private readonly fetchParam: ReturnType<OpHost["u"]["struct"]>;
  private readonly fetchParamAddress: number;
  private readonly amOrder = new Map<number, AmSlot[]>();
  private nextEventId = EVENT_ID_FIRST;
  /** Where the callback's parameters (ucp_am_recv_param_t), header and small data are copied first. */
  private readonly staging = new Uint8Array(STAGING_BYTES);
  private readonly stagingAddress: number;
  private readonly stagingWords = new Uint32Array(this.staging.buffer, 0, 4);
  /** Memory the application released, reused for large messages (no allocation, no zero-fill). */
  readonly pool = new AmBufferPool();

  constructor(
    private readonly h: OpHost,
    /** Thread mode: memory released on the application thread, not yet taken into the pool here. */
    private readonly released: () => ArrayBuffer | undefined = () => undefined,
    /** Atomics over active messages (am-atomics.ts): the messages of ATOMIC_AM_ID go there. */
    private readonly atomics?: AmAtomics,
  ) {
    this.stagingAddress = h.u.addressOf(this.staging);
    this.packed = new AmPack(h.u);
    this.callback = h.u.callback(callbackTypes.ucp_am_recv_callback_t, (arg: number, header: number, headerLength: number, data: number, length: number, param: number) =>
      this.onActiveMessage(arg, header, headerLength, data, length, param),
    );
    // Fires inside ucp_worker_progress or ucp_request_cancel: it only queues (finishFetched).
    this.fetchCallback = h.u.callback(callbackTypes.ucp_am_recv_data_nbx_callback_t, (_request: number, status: number, _length: number, key: number) => {
      this.fetched.push(key, status);
    });
    this.fetchParam = h.u.struct("ucp_request_param_t");
    this.fetchParam.set("op_attr_mask", FETCH_MASK);
    this.fetchParam.set("cb", this.fetchCallback.address);
    this.fetchParamAddress = h.u.addressOf(this.fetchParam.bytes);
    this.setAmHandler(0); // UCXX's AM id
    if (atomics) this.setAmHandler(ATOMIC_AM_ID);
  }


  setAmHandler(amId: number): number {
    const u = this.h.u;
    const p = u.struct("ucp_am_handler_param_t");
    p.set("field_mask", C.UCP_AM_HANDLER_PARAM_FIELD_ID | C.UCP_AM_HANDLER_PARAM_FIELD_CB | C.UCP_AM_HANDLER_PARAM_FIELD_ARG);
    p.set("id", amId);
    p.set("cb", this.callback.address);
    p.set("arg", amId);
    return u.ucp_worker_set_am_recv_handler(this.h.worker, u.addressOf(p.bytes));
  }

  amSend(id: number, ep: number, address: number, length: number, header: number, headerLength: number, amId: number, flags: number): void {
    const e = this.h.endpoint(ep);
    if (!e) return this.h.done(id, UCS_ERR_NOT_CONNECTED);
    if (e.failed) return this.h.done(id, e.failed);
    // Only a peer-error-handling endpoint invalidates a failed rendezvous (request-handles.ts).
    const memh = e.peer ? this.h.handles.map(address, length) : 0;
    // Reports its own end through the send callback where it can (no request checked per round).
    const r = this.h.u.ucp_am_send_nbx(e.handle, amId, header, headerLength, address, length, this.h.sendParams(id, C.UCP_OP_ATTR_FIELD_FLAGS, amSendFlags(flags, length), memh));
    if (!this.h.trackSend(id, r, ep, memh)) this.h.done(id, UCS_OK, length);
  }

  /**
   * UCX's AM callback, inside ucp_worker_progress. Eager data is valid only during the call:
   * copy it. Rendezvous data is fetched now (with takeover: after progress; returning
   * UCS_INPROGRESS keeps UCX's descriptor), into memory allocated here; both reach the
   * application as a payload.
   */
  onActiveMessage(amId: number, header: number, headerLength: number, data: number, length: number, param: number): number {
    // Said once per progress call (endBatch), not per message: it reads the clock.
    if (this.batching) this.arrivedInBatch = true;
    else this.h.activeMessage();
    const u = this.h.u;
    // ucp_am_recv_param_t (16 bytes: recv_attr u64, reply_ep pointer), read from our copy.
    u.memcpy(this.stagingAddress, param, 16);
    const w = this.stagingWords;
    const attr = w[0]!; // the flags used here are in the low word
    const reply = attr & C.UCP_AM_RECV_ATTR_FIELD_REPLY_EP ? w[2]! + w[3]! * 0x100000000 : 0;
    const endpoint = this.h.endpointIdOf(reply);
    if (amId === ATOMIC_AM_ID && this.atomics) {
      // A header and no data; anything else is not ours to keep (UCS_OK drops rendezvous data too).
      if (length === 0 && !(attr & C.UCP_AM_RECV_ATTR_FLAG_RNDV)) this.atomics.arrived(header, headerLength, reply, endpoint);
      else this.atomics.dropped++;
      return UCS_OK;
    }
    const key = orderKey(endpoint, amId);
    const order = this.amOrder.size > 0 ? this.amOrder.get(key) : undefined;
    if (!(attr & C.UCP_AM_RECV_ATTR_FLAG_RNDV) && !order) {
      // Eager with nothing of its (endpoint, AM id) waiting to be fetched: delivered at once,
      // with no slot in an order (most small messages); a small one inside a progress call is
      // packed with the others of that call (am-pack.ts).
      if (!this.batching || !this.packed.add(endpoint, amId, header, headerLength, data, length, this.flushPacked))
        this.deliverEager(endpoint, amId, header, headerLength, data, length);
      return UCS_OK;
    }
    const headerBytes = this.copyHeader(amId, header, headerLength);
    const slot: AmSlot = { amId, endpoint, header: headerBytes, buffer: undefined, length, status: UCS_OK, ready: false };
    if (order) order.push(slot);
    else this.amOrder.set(key, [slot]);
    if (attr & C.UCP_AM_RECV_ATTR_FLAG_RNDV) {
      // Into released memory, the fetch starts here, in this very progress call (deferred to
      // after it, a window of rendezvous messages waited a round each). Memory that must be
      // allocated is allocated after progress, outside UCX's call: a large allocation inside
      // it (a 256 MiB message under Deno) crashed the runtime (SIGTRAP, seen once).
      const reused = this.h.callbacks ? this.reusable(length) : undefined;
      if (reused) this.fetchActiveMessage({ desc: data, length, slot }, reused);
      else this.pending.push({ desc: data, length, slot });
      return UCS_INPROGRESS;
    }
    this.amReady(slot, length > 0 ? this.copyData(data, length) : new ArrayBuffer(0), UCS_OK);
    return UCS_OK;
  }

  /**
   * An eager message with nothing ahead of it: copied and delivered inside the callback. A small
   * one whose header UCX put right after its data (UCX 1.13 packs an eager message so) takes one
   * memcpy for both; a plain UCXX header (14 zero bytes: host memory, no callback, no user
   * header) is handed on as one shared array instead of a copy of its own.
   */
  private deliverEager(endpoint: number, amId: number, header: Pointer, headerLength: number, data: Pointer, length: number): void {
    let buffer: ArrayBuffer;
    let headerBytes: Uint8Array;
    const total = length + headerLength;
    if (length < AM_POOL_MIN_BYTES && total <= STAGING_BYTES && (headerLength === 0 || (header as number) === (data as number) + length)) {
      if (total > 0) this.h.u.memcpy(this.stagingAddress, data, total);
      buffer = this.staging.slice(0, length).buffer as ArrayBuffer;
      headerBytes = this.stagedHeader(amId, length, headerLength);
    } else {
      headerBytes = this.copyHeader(amId, header, headerLength);
      buffer = length > 0 ? this.copyData(data, length) : new ArrayBuffer(0);
    }
    this.deliverMessage(endpoint, amId, headerBytes, buffer, length, UCS_OK);
  }

  /**
   * The header staged at `at`: UCXX's plain host header (AM id 0, 14 zero bytes) as the one
   * shared PLAIN_HEADER, any other as a copy of its own.
   */
  private stagedHeader(amId: number, at: number, headerLength: number): Uint8Array {
    if (headerLength === 0) return new Uint8Array(0);
    const s = this.staging;
    let plain = amId === 0 && headerLength === PLAIN_HEADER.length;
    for (let i = at; plain && i < at + headerLength; i++) plain = s[i] === 0;
    return plain ? PLAIN_HEADER : s.slice(at, at + headerLength);
  }

  /**
   * A message's header, copied out of UCX's memory: a plain one as the shared PLAIN_HEADER, as
   * deliverEager's small path does (stagedHeader), any other in an ArrayBuffer of its own. Large
   * eager and rendezvous messages come this way: a copy each was ~200 B of garbage a message.
   */
  private copyHeader(amId: number, header: Pointer, headerLength: number): Uint8Array {
    if (headerLength === 0) return new Uint8Array(0);
    if (amId !== 0 || headerLength !== PLAIN_HEADER.length) return this.copyOut(header, headerLength);
    this.h.u.memcpy(this.stagingAddress, header, headerLength);
    return this.stagedHeader(amId, 0, headerLength);
  }

  /** A copy of `length` bytes of UCX's memory at `address`, in an ArrayBuffer of its own. */
  private copyOut(address: Pointer, length: number): Uint8Array {
    if (length > STAGING_BYTES) {
      // Into memory of its own directly: a view of UCX's memory would hold ~200 B of malloc
      // until the isolate's next full collection (part-batch.ts, copyIn).
      const own = new Uint8Array(length);
      this.h.u.memcpy(this.h.u.addressOf(own), address, length);
      return own;
    }
    this.h.u.memcpy(this.stagingAddress, address, length);
    return this.staging.slice(0, length);
  }

  /** Eager data: into released memory when there is some (one memcpy), else a copy of its own. */
  private copyData(address: Pointer, length: number): ArrayBuffer {
    const reused = this.reusable(length);
    if (!reused) return this.copyOut(address, length).buffer as ArrayBuffer;
    this.h.u.memcpy(this.h.u.addressOf(new Uint8Array(reused, 0, length)), address, length);
    return reused;
  }

  /** Released memory of at least `length` bytes, taking in what the application released since. */
  private reusable(length: number): ArrayBuffer | undefined {
    if (length < AM_POOL_MIN_BYTES) return undefined;
    for (let b = this.released(); b; b = this.released()) this.pool.give(b);
    return this.pool.take(length);
  }

  fetchActiveMessage(m: Announced, reused?: ArrayBuffer): void {
    let buffer: ArrayBuffer;
    try {
      buffer = reused ?? this.reusable(m.length) ?? new ArrayBuffer(m.length);
    } catch {
      this.h.u.ucp_am_data_release(this.h.worker, m.desc);
      return this.amReady(m.slot, new ArrayBuffer(0), UCS_ERR_NO_MEMORY);
    }
    const byCallback = this.h.callbacks;
    const key = this.nextFetchKey;
    const address = this.h.u.addressOf(new Uint8Array(buffer));
    // The fetch's rendezvous may hand this buffer's rkey to the sender (request-handles.ts).
    const memh = this.h.handles.map(address, m.length);
    let fetch: Fetching | undefined;
    if (byCallback) {
      this.nextFetchKey = key >= 0xffffffff ? 1 : key + 1; // user data is carried as a u32 here
      setUserData(this.fetchParam, key);
      // Known before the call: UCX may complete the transfer, and call back, inside it (a
      // shared-memory get), and still return the request.
      fetch = { request: 0, buffer, slot: m.slot, memh };
      this.fetching.set(key, fetch);
      if (memh) setParamsMemh(this.fetchParam, FETCH_MASK, memh);
    }
    const param = byCallback ? this.fetchParamAddress : this.h.params(0, 0, memh);
    const r = this.h.u.ucp_am_recv_data_nbx(this.h.worker, m.desc, address, m.length, param);
    if (byCallback && memh) setParamsMemh(this.fetchParam, FETCH_MASK, 0);
    if (r === 0 || ptrIsError(r)) {
      this.fetching.delete(key);
      this.h.handles.release(memh);
      return this.fetchDone(m.slot, buffer, r === 0 ? UCS_OK : r);
    }
    if (fetch) fetch.request = r;
    else this.h.queueRequest(m, { request: r, kind: "send", memh, onDone: (status) => this.fetchDone(m.slot, buffer, status) });
  }

  private fetchDone(slot: AmSlot, buffer: ArrayBuffer, status: number): void {
    if (status !== UCS_OK) this.pool.give(buffer); // UCX is done with it and nobody else saw it
    this.amReady(slot, status === UCS_OK ? buffer : new ArrayBuffer(0), status);
  }

  /** After progress (or a cancel): finish the fetches whose callback fired. Returns how many. */
  finishFetched(): number {
    const q = this.fetched;
    let n = 0;
    // Finishing fires no fetch callback (delivery only writes records), so `q` does not grow here.
    for (let i = 0; i < q.length; i += 2) {
      const f = this.fetching.get(q[i]!);
      if (!f) continue;
      this.fetching.delete(q[i]!);
      this.h.u.ucp_request_free(f.request);
      this.h.handles.release(f.memh);
      this.fetchDone(f.slot, f.buffer, q[i + 1]!);
      n++;
    }
    q.length = 0;
    return n;
  }

  /** Fetches in flight that report themselves. */
  get fetchesInFlight(): number {
    return this.fetching.size;
  }

  /** Shutdown: cancel the fetches in flight (each reports UCS_ERR_CANCELED through its callback). */
  cancelFetches(): void {
    for (const f of this.fetching.values()) if (f.request !== 0) this.h.u.ucp_request_cancel(this.h.worker, f.request);
  }

  /** Shutdown, before the worker is destroyed: release what UCX did not finish (its buffers are let go with us). */
  releaseFetches(): void {
    for (const f of this.fetching.values()) {
      if (f.request === 0) continue;
      this.h.u.ucp_request_free(f.request);
      this.h.handles.abandon(f.memh); // unmapped once the worker is gone
    }
    this.fetching.clear();
  }

  /** `slot`'s data is in: deliver it and every ready message behind it, in order. */
  amReady(slot: AmSlot, buffer: ArrayBuffer, status: number): void {
    slot.buffer = buffer;
    slot.status = status;
    slot.ready = true;
    const key = orderKey(slot.endpoint, slot.amId);
    const order = this.amOrder.get(key)!;
    while (order.length > 0 && order[0]!.ready) {
      const s = order.shift()!;
      this.deliverMessage(s.endpoint, s.amId, s.header, s.buffer!, s.length, s.status);
    }
    if (order.length === 0) this.amOrder.delete(key);
  }

  /**
   * Hand one message to the application: its payload, then its completion record. Inside a
   * batch (one ucp_worker_progress call: beginBatch/endBatch) both wait for the batch's end,
   * where the payloads go in one hand-over (thread mode: one postMessage for the lot, not one
   * per message) before their records, in arrival order.
   */
  private deliverMessage(endpoint: number, amId: number, header: Uint8Array, buffer: ArrayBuffer, length: number, status: number): void {
    const id = this.eventId();
    const payload: Payload = buffer.byteLength !== length && status === UCS_OK ? { id, buffers: [buffer], header, amId, length } : { id, buffers: [buffer], header, amId };
    if (this.batching) {
      // Packed messages that arrived before this one go first: arrival order per endpoint.
      if (this.packed.count > 0) this.flushPacked();
      this.batchPayloads.push(payload);
      this.batchRecords.push(CompletionKind.AmMessage, endpoint, status, id, amId);
      return;
    }
    this.h.deliver(payload);
    this.h.emit({ kind: CompletionKind.AmMessage, id: endpoint, status, value: id, tagLo: amId, tagHi: 0, aux: 0 });
  }

  private eventId(): number {
    const id = this.nextEventId;
    this.nextEventId = id >= 0xffffffff ? EVENT_ID_FIRST : id + 1;
    return id;
  }

  private batching = false;
  /** A message arrived during this progress call (the executor is told at its end). */
  private arrivedInBatch = false;
  private readonly batchPayloads: Payload[] = [];
  /** (record kind, endpoint or count, status, event id, AM id) of each batched hand-over. */
  private readonly batchRecords: number[] = [];
  /** Small eager messages of this progress call, packed into one buffer (am-pack.ts). */
  private readonly packed: AmPack;

  /**
   * The packed messages join the batch as one payload and one AmBatch record; a lone one goes
   * as an ordinary message (a round trip's single message: no index to allocate and read).
   */
  private readonly flushPacked = (): void => {
    const p = this.packed;
    if (p.count === 1) {
      const m = p.takeOne(PLAIN_HEADER);
      const id = this.eventId();
      this.batchPayloads.push({ id, buffers: [m.buffer], header: m.header, amId: m.amId });
      this.batchRecords.push(CompletionKind.AmMessage, m.endpoint, UCS_OK, id, m.amId);
      return;
    }
    const count = p.count;
    const id = this.eventId();
    this.batchPayloads.push({ id, buffers: p.take() });
    this.batchRecords.push(CompletionKind.AmBatch, count, UCS_OK, id, 0);
  };

  /** Messages delivered from now on wait for endBatch (the executor's ucp_worker_progress call). */
  beginBatch(): void {
    this.batching = true;
  }

  /** Deliver the batched messages: their payloads at once, then their completion records. */
  endBatch(): void {
    this.batching = false;
    if (this.arrivedInBatch) {
      this.arrivedInBatch = false;
      this.h.activeMessage();
    }
    if (this.packed.count > 0) this.flushPacked();
    const payloads = this.batchPayloads;
    if (payloads.length === 0) return;
    if (payloads.length === 1) this.h.deliver(payloads[0]!);
    else this.h.deliver(payloads.slice());
    payloads.length = 0;
    const r = this.batchRecords;
    for (let i = 0; i < r.length; i += 5)
      this.h.emit({ kind: r[i]! as CompletionKind, id: r[i + 1]!, status: r[i + 2]!, value: r[i + 3]!, tagLo: r[i + 4]!, tagHi: 0, aux: 0 });
    r.length = 0;
  }

  /** Nothing announced and waiting to be fetched or delivered. */
  get idle(): boolean {
    return this.pending.length === 0 && this.amOrder.size === 0;
  }

  /** After ucp_worker_progress: fetch the rendezvous messages its callbacks announced. */
  fetchPending(): void {
    while (this.pending.length > 0) this.fetchActiveMessage(this.pending.shift()!);
  }

  /** Shutdown: let go of UCX's descriptors of messages not fetched. */
  releasePending(): void {
    for (const m of this.pending.splice(0)) this.h.u.ucp_am_data_release(this.h.worker, m.desc);
  }

  /** After the worker is destroyed: UCX can no longer call the handler. */
  close(): void {
    this.pool.clear();
    this.callback.close();
    this.fetchCallback.close();
  }
}
