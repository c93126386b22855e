/**
 * Tag and stream operations on the executor's thread: tag sends and receives, probes, stream
 * sends and receives. Tag receives and sends report their own completion through a callback
 * (a callback costs ~0.1-0.35 us); thousands of receives may be posted and may stay a long time,
 * and checking each with `ucp_request_check_status` every round cost ~100 us a round for 1,000
 * parked receives. With takeover they carry no callback and are checked instead, by whichever
 * thread holds the token (fast-requests.ts).
 */
import { callbackTypes, ptrIsError, UCX_CONSTANTS as C, type NativeCallback, type Pointer, type Ucx } from "../../ffi/index.ts";
import type { FastRequests } from "./fast-requests.ts";
import type { InlineStaging } from "./inline-staging.ts";
import type { OpHost } from "./op-host.ts";
import { INLINE_OFFSET, SEND_FLAG_INLINE, SEND_FLAG_MEMH, SUB, tagArgument } from "./records.ts";
import { setParamsMemh } from "./request-handles.ts";
import type { RequestTracker } from "./request-tracker.ts";
import type { Ring } from "./ring.ts";
import { FastKind } from "./takeover-state.ts";
import { mark, Mark, TURNAROUND } from "../turnaround.ts";
import { amSendFlags } from "../am/send-protocol.ts";

const UCS_OK = 0;
const UCS_INPROGRESS = 1;
const UCS_ERR_NO_MESSAGE = -1;
const UCS_ERR_NOT_CONNECTED = -24;
/** The op_attr_mask of every tag receive's own parameters: NO_IMM_CMPL (see tagRecv), the callback, the id as user data. */
const RECV_MASK = C.UCP_OP_ATTR_FLAG_NO_IMM_CMPL | C.UCP_OP_ATTR_FIELD_CALLBACK | C.UCP_OP_ATTR_FIELD_USER_DATA;

export class TagOperations {
  private readonly recvCallback: NativeCallback;
  private readonly sendCallback: NativeCallback;
  /** Request parameters of every tag receive: NO_IMM_CMPL, the callback, the id as user data. */
  private readonly recvParam: ReturnType<Ucx["struct"]>;
  private readonly recvParamAddress: Pointer;
  /** Where sendSource leaves a send's address, staging chunk and own memory handle (fields: nothing allocated per send). */
  private sourceAddress = 0;
  private sourceStaging: number | undefined;
  private sourceMemh: Pointer = 0;

  constructor(
    private readonly h: OpHost,
    private readonly tracker: RequestTracker,
    private readonly staging: InlineStaging,
    /** Takeover's shared table of fast requests, if takeover is on. */
    private readonly fast: FastRequests | undefined,
  ) {
    const u = h.u;
    // Fires inside ucp_worker_progress, ucp_request_cancel, or ucp_tag_recv_nbx itself (a
    // message already there): it only queues; progress() finishes the receive.
    this.recvCallback = u.callback(callbackTypes.ucp_tag_recv_nbx_callback_t, (_request: number, status: number, _info: number, userData: number) => {
      if (TURNAROUND) mark(Mark.Arrived);
      tracker.queueCompleted(userData, status);
    });
    // Sends: called only for a send that did not complete in its posting call.
    this.sendCallback = u.callback(callbackTypes.ucp_send_nbx_callback_t, (_request: number, status: number, userData: number) => {
      tracker.queueCompleted(userData, status);
    });
    h.param.set("cb", this.sendCallback.address); // used only with UCP_OP_ATTR_FIELD_CALLBACK (sends)
    this.recvParam = u.struct("ucp_request_param_t");
    this.recvParam.set("op_attr_mask", RECV_MASK);
    this.recvParam.set("cb", this.recvCallback.address);
    this.recvParamAddress = u.addressOf(this.recvParam.bytes);
  }

  /**
   * A send's bytes as its protocol delivered them (proto/protocols.ts): inline in the record
   * (staged here, since the slot is reused), in the bounce pool (sent with the pool's memory
   * handle), or the caller's buffer by address. Returns the request parameters to send with and
   * leaves the address in `sourceAddress`, the staging chunk (or undefined) in `sourceStaging`
   * and, for a buffer by address that may go by rendezvous on a peer-error-handling endpoint
   * (`rendezvous`), the handle mapped for it (request-handles.ts) in `sourceMemh`.
   */
  private sendSource(ring: Ring, w: number, id: number, address: number, length: number, rendezvous: boolean): Pointer {
    const flags = ring.u32[w + SUB.flags]!;
    this.sourceAddress = address;
    this.sourceStaging = undefined;
    this.sourceMemh = 0;
    // Completion by callback (sendCallback, set once in the shared parameters), with the id;
    // with takeover, by checking (no callback may fire on the other thread).
    setUserData(this.h.param, id);
    const byCallback = this.fast ? 0 : C.UCP_OP_ATTR_FIELD_CALLBACK | C.UCP_OP_ATTR_FIELD_USER_DATA;
    if (flags & SEND_FLAG_INLINE) {
      const at = w * 4 + INLINE_OFFSET;
      const chunk = this.staging.stage(ring.u8.subarray(at, at + length));
      this.sourceAddress = this.staging.address(chunk);
      this.sourceStaging = chunk;
      return this.h.params(byCallback);
    }
    if (flags & SEND_FLAG_MEMH) {
      // The application's registration (one that failed gives 0: sent without a handle).
      return this.h.params(byCallback, 0, this.h.memh(ring.f64[(w >> 1) + SUB.handle]!));
    }
    if (rendezvous) this.sourceMemh = this.h.handles.map(address, length);
    return this.h.params(byCallback, 0, this.sourceMemh);
  }

  /**
   * Track a send (its callback reports it: not polled), or report it done at once; frees its
   * staging chunk and unmaps its own handle when UCX no longer needs them.
   */
  private trackSend(id: number, ep: number, result: Pointer, length: number, staging: number | undefined, memh: Pointer = 0): void {
    if (result !== 0 && !ptrIsError(result)) {
      // Takeover: in the shared table, unless its bytes are staged here or it has its own
      // handle (only this thread frees them).
      if (this.fast && (staging !== undefined || memh !== 0 || !this.fast.add(result, id, FastKind.Send, ep))) {
        this.tracker.addInflight(id, { request: result, kind: "send", endpoint: ep, staging, memh }, true);
      } else if (!this.fast) this.tracker.addInflight(id, { request: result, kind: "send", endpoint: ep, staging, memh }, false);
      return;
    }
    if (staging !== undefined) this.staging.release(staging);
    this.h.handles.release(memh);
    if (result === 0) this.h.done(id, UCS_OK, length);
    else this.h.done(id, result);
  }

  tagSend(ring: Ring, w: number, id: number, ep: number, address: number, length: number, tagLo: number, tagHi: number): void {
    const e = this.h.endpoint(ep);
    if (!e) return this.h.done(id, UCS_ERR_NOT_CONNECTED);
    if (e.failed) return this.h.done(id, e.failed);
    // Only a peer-error-handling endpoint invalidates a failed rendezvous (request-handles.ts).
    const param = this.sendSource(ring, w, id, address, length, e.peer);
    if (TURNAROUND) mark(Mark.Posted);
    const r = this.h.u.ucp_tag_send_nbx(e.handle, this.sourceAddress, length, tagArgument(tagLo, tagHi), param);
    this.trackSend(id, ep, r, length, this.sourceStaging, this.sourceMemh);
  }

  /**
   * A small active message (Op.AmSendInline): its data and header, staged together from the
   * record as an inline tag send's bytes are, go to ucp_am_send_nbx; tracked as a send.
   */
  amSendInline(ring: Ring, w: number, id: number, ep: number, length: number, headerLength: number, amId: number, amFlags: number): void {
    const e = this.h.endpoint(ep);
    if (!e) return this.h.done(id, UCS_ERR_NOT_CONNECTED);
    if (e.failed) return this.h.done(id, e.failed);
    const at = w * 4 + INLINE_OFFSET;
    const chunk = this.staging.stage(ring.u8.subarray(at, at + length + headerLength));
    const address = this.staging.address(chunk);
    setUserData(this.h.param, id);
    const byCallback = this.fast ? 0 : C.UCP_OP_ATTR_FIELD_CALLBACK | C.UCP_OP_ATTR_FIELD_USER_DATA;
    const param = this.h.params(byCallback | C.UCP_OP_ATTR_FIELD_FLAGS, amSendFlags(amFlags, length));
    const r = this.h.u.ucp_am_send_nbx(e.handle, amId, address + length, headerLength, address, length, param);
    this.trackSend(id, ep, r, length, chunk);
  }

  /**
   * ucp_tag_recv_nbx, always with a request (UCP_OP_ATTR_FLAG_NO_IMM_CMPL: see tagRecv), with
   * memory handle `memh` when it is one.
   */
  postTagRecv(address: number, length: number, tagLo: number, tagHi: number, maskLo: number, maskHi: number, memh: Pointer = 0): Pointer {
    return this.h.u.ucp_tag_recv_nbx(
      this.h.worker,
      address,
      length,
      tagArgument(tagLo, tagHi),
      tagArgument(maskLo, maskHi),
      this.h.params(C.UCP_OP_ATTR_FLAG_NO_IMM_CMPL, 0, memh),
    );
  }

  tagRecv(id: number, address: number, length: number, tagLo: number, tagHi: number, maskLo: number, maskHi: number): void {
    // UCX 1.13.1 does not fill `recv_info` when a receive completes in place (seen here), so
    // never let it: with NO_IMM_CMPL every receive gets a request, whose info
    // ucp_tag_recv_request_test reads when it is finished. Its callback queues it when it
    // completes, possibly inside this very call (a message already there); progress() finishes it.
    setUserData(this.recvParam, id);
    // A receive's rendezvous may hand its buffer's rkey to the sender (protocols v2's RTR): it
    // may need a handle of its own as a send does (request-handles.ts).
    const memh = this.h.handles.map(address, length);
    // Takeover: no callback (checked instead, by whichever thread holds the token).
    const own = !this.fast && memh !== 0; // the receives' own parameters carry it for this call
    if (own) setParamsMemh(this.recvParam, RECV_MASK, memh);
    const param = this.fast ? this.h.params(C.UCP_OP_ATTR_FLAG_NO_IMM_CMPL, 0, memh) : this.recvParamAddress;
    const r = this.h.u.ucp_tag_recv_nbx(this.h.worker, address, length, tagArgument(tagLo, tagHi), tagArgument(maskLo, maskHi), param);
    if (own) setParamsMemh(this.recvParam, RECV_MASK, 0);
    if (!this.tracker.track(id, r, "tagRecv", 0, undefined, memh)) return this.h.done(id, UCS_INPROGRESS); // cannot happen with NO_IMM_CMPL
  }


  /** A receive on a failed endpoint past its drain: posted only if UCX holds a match (see queued). */
  tagRecvIfQueued(id: number, address: number, length: number, tagLo: number, tagHi: number, maskLo: number, maskHi: number): void {
    if (!this.queued(tagLo, tagHi, maskLo, maskHi)) return this.h.done(id, UCS_ERR_NO_MESSAGE);
    this.tagRecv(id, address, length, tagLo, tagHi, maskLo, maskHi);
  }

  /**
   * Does UCX hold a message matching (tag, mask) in its unexpected queue? Asked right before a
   * receive on a failed endpoint is posted, in the same step of this thread, so that no other
   * receive can take the message in between: the receive then matches it at once, and a receive
   * nothing can satisfy is refused instead of waiting forever for a peer that is gone.
   */
  queued(tagLo: number, tagHi: number, maskLo: number, maskHi: number): boolean {
    return this.h.u.ucp_tag_probe_nb(this.h.worker, tagArgument(tagLo, tagHi), tagArgument(maskLo, maskHi), 0, this.tracker.recvInfoAddress) !== 0;
  }

  tagProbe(id: number, tagLo: number, tagHi: number, maskLo: number, maskHi: number): void {
    const t = this.tracker;
    const message = this.h.u.ucp_tag_probe_nb(this.h.worker, tagArgument(tagLo, tagHi), tagArgument(maskLo, maskHi), 0, t.recvInfoAddress);
    if (message === 0) return this.h.done(id, UCS_ERR_NO_MESSAGE);
    this.h.emitRequest(id, UCS_OK, t.recvLength(), t.recvInfoWords[0]!, t.recvInfoWords[1]!);
  }

  streamSend(ring: Ring, w: number, id: number, ep: number, address: number, length: number): void {
    const e = this.h.endpoint(ep);
    if (!e) return this.h.done(id, UCS_ERR_NOT_CONNECTED);
    if (e.failed) return this.h.done(id, e.failed);
    const param = this.sendSource(ring, w, id, address, length, false); // streams have no rendezvous
    this.trackSend(id, ep, this.h.u.ucp_stream_send_nbx(e.handle, this.sourceAddress, length, param), length, this.sourceStaging);
  }

  streamRecv(id: number, ep: number, address: number, length: number): void {
    const e = this.h.endpoint(ep);
    if (!e) return this.h.done(id, UCS_ERR_NOT_CONNECTED);
    if (e.failed) return this.h.done(id, e.failed);
    if (length === 0) return this.h.done(id, UCS_OK, 0); // UCX rejects a zero-length stream receive
    const r = this.h.u.ucp_stream_recv_nbx(
      e.handle,
      address,
      length,
      this.h.out.address(),
      this.h.params(C.UCP_OP_ATTR_FIELD_FLAGS, C.UCP_STREAM_RECV_FLAG_WAITALL),
    );
    if (!this.tracker.track(id, r, "streamRecv", ep)) this.h.done(id, UCS_OK, this.h.out.pointer());
  }

  /** The executor is destroyed: UCX calls these callbacks no more. */
  close(): void {
    this.recvCallback.close();
    this.sendCallback.close();
  }
}

/** A request parameter struct's user_data (offset 32): the request id, which UCX hands back to the callback. */
export function setUserData(param: ReturnType<Ucx["struct"]>, id: number): void {
  param.view.setUint32(32, id, true);
  param.view.setUint32(36, 0, true); // ids are u32
}
