/**
 * Endpoints on the executor's thread: `ucp_ep_create` (by worker address, by sockaddr, from a
 * listener's connection request), flush, close, `ucp_ep_print_info`, the worker's address, and
 * UCX's endpoint error handler: a failed endpoint is force-closed on the next round (closing
 * inside UCX's callback is not allowed) and its error reported after the round's completions.
 */
import { callbackTypes, ptrIsError, UCX_CONSTANTS as C, type NativeCallback, type Pointer } from "../../ffi/index.ts";
import { capturePrint } from "../print-capture.ts";
import type { EndpointState, OpHost } from "./op-host.ts";
import { CompletionKind, EP_FLAG_ERR_PEER, Op } from "./records.ts";
import type { RequestTracker } from "./request-tracker.ts";
import type { TakeoverState } from "./takeover-state.ts";

const UCS_OK = 0;
const UCS_ERR_NOT_CONNECTED = -24;

export class EndpointOperations {
  readonly endpoints = new Map<number, EndpointState>();
  /** Our endpoint id by UCX handle: an active message names its sender by the reply endpoint. */
  readonly byHandle = new Map<Pointer, number>();
  /** Endpoints whose error handler fired: force-closed on the next step, outside the callback. */
  private readonly failed: number[] = [];
  /**
   * Endpoint errors not yet reported. UCX calls the error handler from inside
   * `ucp_worker_progress`, often in the same call that completed the last receives from that
   * peer (its last message and its disconnect arrive together); those completions are only
   * seen afterwards, by `ucp_request_check_status`. The application thread rejects every
   * request still pending on an endpoint when its error arrives, so the error is reported at
   * the end of the round, after the round's completions.
   */
  private readonly errors: Array<{ ep: number; status: number }> = [];
  private readonly errorCallback: NativeCallback;

  constructor(
    private readonly h: OpHost,
    private readonly tracker: RequestTracker,
    private readonly takeover: TakeoverState | undefined,
    /** Endpoint `ep` is going (closed or failed): its remote keys and atomics over AM end first. */
    private readonly endpointGone: (ep: number) => void,
    /** Takeover: an endpoint failed, work only the executor's thread does (Executor.needToken). */
    private readonly needToken: () => void,
  ) {
    this.errorCallback = h.u.callback(callbackTypes.ucp_err_handler_cb_t, (arg: number, _ep: number, status: number) => this.onEndpointError(arg, status));
  }

  /** Nothing failed and waits to be closed or reported (takeover: see Executor.canLend). */
  get quiet(): boolean {
    return this.failed.length === 0 && this.errors.length === 0;
  }

  create(op: Op, id: number, ep: number, address: number, length: number, handle: number, flags: number): void {
    const u = this.h.u;
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
    const out = this.h.out;
    const status = u.ucp_ep_create(this.h.worker, u.addressOf(p.bytes), out.address());
    if (status === UCS_OK) {
      this.endpoints.set(ep, { handle: out.pointer(), peer: (flags & EP_FLAG_ERR_PEER) !== 0, failed: 0 });
      this.byHandle.set(out.pointer(), ep);
      this.takeover?.setEndpoint(ep, out.pointer() as number);
    }
    this.h.done(id, status);
  }

  close(id: number, ep: number, force: boolean): void {
    const e = this.endpoints.get(ep);
    if (!e) return this.h.done(id, UCS_OK); // already gone (closed after an error)
    this.takeover?.dropEndpoint(ep);
    this.endpointGone(ep);
    this.byHandle.delete(e.handle);
    // A failed endpoint can only be force-closed, and only peer-mode endpoints can be (ucp.h;
    // UCX answers UCS_ERR_INVALID_PARAM otherwise): a "none" endpoint always flushes and closes.
    const flags = (force || e.failed) && e.peer ? C.UCP_EP_CLOSE_FLAG_FORCE : 0;
    const r = this.h.u.ucp_ep_close_nbx(e.handle, this.h.params(C.UCP_OP_ATTR_FIELD_FLAGS, flags));
    if (!this.tracker.track(id, r, "close", ep, ep)) {
      this.endpoints.delete(ep);
      this.h.done(id, UCS_OK);
    }
  }

  /** Flush endpoint `ep`, or with 0 the whole worker. */
  flush(id: number, ep: number): void {
    let r: Pointer;
    if (ep === 0) r = this.h.u.ucp_worker_flush_nbx(this.h.worker, this.h.params(0));
    else {
      const e = this.endpoints.get(ep);
      if (!e) return this.h.done(id, UCS_ERR_NOT_CONNECTED);
      if (e.failed) return this.h.done(id, e.failed);
      r = this.h.u.ucp_ep_flush_nbx(e.handle, this.h.params(0));
    }
    if (!this.tracker.track(id, r, "flush", ep)) this.h.done(id, UCS_OK);
  }

  /** `ucp_ep_print_info` into the caller's buffer (address, capacity); value = bytes needed. */
  info(id: number, ep: number, address: number, capacity: number): void {
    const e = this.endpoints.get(ep);
    if (!e) return this.h.done(id, UCS_ERR_NOT_CONNECTED);
    const text = new TextEncoder().encode(capturePrint((file) => this.h.u.ucp_ep_print_info(e.handle, file)));
    this.h.copyOut(id, text, address, capacity);
  }

  /** The worker's address into the caller's buffer (address, capacity); value = bytes needed. */
  workerAddress(id: number, address: number, capacity: number): void {
    const u = this.h.u;
    const out = this.h.out;
    const status = u.ucp_worker_get_address(this.h.worker, out.address(0), out.address(1));
    if (status !== UCS_OK) return this.h.done(id, status);
    const local = out.pointer(0);
    try {
      this.h.copyOutNative(id, local, out.pointer(1), address, capacity);
    } finally {
      u.ucp_worker_release_address(this.h.worker, local);
    }
  }

  // --- failures (UCX's error handler, from inside ucp_worker_progress) --------------------------

  private onEndpointError(ep: number, status: number): void {
    const e = this.endpoints.get(ep);
    if (!e || e.failed) return;
    e.failed = status;
    this.takeover?.failEndpoint(ep, status);
    this.needToken();
    // Closing from inside UCX's callback is not allowed: do it on the next progress round.
    this.failed.push(ep);
    this.errors.push({ ep, status }); // reported at the end of this round (see Executor.progress)
  }

  /** Force-close the endpoints that failed since the last round (first thing in a round). */
  closeFailed(): void {
    while (this.failed.length > 0) this.closeOneFailed(this.failed.shift()!);
  }

  private closeOneFailed(ep: number): void {
    const e = this.endpoints.get(ep);
    if (!e) return;
    this.takeover?.dropEndpoint(ep);
    this.endpointGone(ep);
    this.byHandle.delete(e.handle);
    const r = this.h.u.ucp_ep_close_nbx(e.handle, this.h.params(C.UCP_OP_ATTR_FIELD_FLAGS, C.UCP_EP_CLOSE_FLAG_FORCE));
    this.endpoints.delete(ep);
    // Nobody awaits this close: free its request when it is done, without a completion.
    if (r !== 0 && !ptrIsError(r)) this.tracker.addInflight(0x80000000 + ep, { request: r, kind: "close", endpoint: ep }, true);
  }

  /** Report the round's endpoint errors (last in a round, after every completion of it). */
  reportErrors(): number {
    if (this.errors.length === 0) return 0;
    const errors = this.errors.splice(0);
    for (const { ep, status } of errors) {
      this.h.emit({ kind: CompletionKind.EndpointError, id: ep, status, value: 0, tagLo: 0, tagHi: 0, aux: 0 });
    }
    return errors.length;
  }

  /** Shutdown: close every endpoint (forced where UCX allows it); their requests are tracked. */
  closeAll(): void {
    for (const [id, e] of this.endpoints) {
      const r = this.h.u.ucp_ep_close_nbx(e.handle, this.h.params(C.UCP_OP_ATTR_FIELD_FLAGS, e.peer ? C.UCP_EP_CLOSE_FLAG_FORCE : 0));
      if (r !== 0 && !ptrIsError(r)) this.tracker.addInflight(0x80000000 + id, { request: r, kind: "close", endpoint: id }, true);
    }
    this.endpoints.clear();
  }

  /** The executor is destroyed: UCX calls the error handler no more. */
  closeCallback(): void {
    this.errorCallback.close();
  }
}
