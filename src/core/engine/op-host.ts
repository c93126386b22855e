/**
 * What the executor lends the modules that run one family of operations for it
 * (tag-operations.ts, endpoint-operations.ts, listener-operations.ts, batch-operations.ts,
 * remote-memory.ts, active-messages.ts): UCX, the worker, the endpoints, and its ways of
 * reporting and tracking requests. One thread, one executor: nothing here is shared. Declared
 * here, below the executor, so that those modules never import executor.ts.
 */
import type { Pointer, Ucx } from "../../ffi/index.ts";
import type { OutSlots } from "../out-slots.ts";
import type { Completion } from "./records.ts";
import type { PartDone } from "./part-batch.ts";
import type { Payload } from "./payload.ts";
import type { RequestHandles } from "./request-handles.ts";

export interface EndpointState {
  handle: Pointer;
  /** Created with UCP_ERR_HANDLING_MODE_PEER: only such endpoints may be force-closed (ucp.h). */
  peer: boolean;
  /** Set when UCX reported the endpoint failed; sends fail fast afterwards. */
  failed: number;
}

/**
 * A UCX request the executor checks each round on behalf of an owner (a multi-buffer batch, an
 * active message being fetched); `onDone` is told its status instead of the application.
 */
export interface OwnedRequest {
  readonly request: Pointer;
  readonly kind: "send" | "tagRecv";
  readonly onDone: PartDone;
  /** The memory handle mapped for this request (request-handles.ts), unmapped when it ends. */
  readonly memh?: Pointer;
  /**
   * Memory UCX reads until the request ends (a header of ours), held here. A closure that only
   * names it is not enough: under Bun an AM header referenced as `void header` in `onDone` was
   * collected and freed while UCX still had the send queued (it sent malloc's free-list pointers).
   */
  readonly holds?: object;
}

export interface OpHost {
  readonly u: Ucx;
  readonly worker: Pointer;
  readonly contextHandle: Pointer;
  readonly out: OutSlots;
  /** Memory handles for single requests, where this UCX needs them (request-handles.ts). */
  readonly handles: RequestHandles;
  /** The shared ucp_request_param_t (for fields beyond op_attr_mask and flags). */
  readonly param: ReturnType<Ucx["struct"]>;
  endpoint(id: number): EndpointState | undefined;
  /** Our endpoint id for a UCX endpoint handle (0: not one of ours). */
  endpointIdOf(handle: Pointer): number;
  /** Report request `id` finished. */
  done(id: number, status: number, value?: number): void;
  /** Report request `id` finished with a value and a tag (receives, probes). */
  emitRequest(id: number, status: number, value: number, tagLo: number, tagHi: number): void;
  /** The memory handle of registration `memory` (remote-memory.ts), or 0. */
  memh(memory: number): Pointer;
  /** The `ucs_status_ptr_t` of a non-blocking call: false when it completed in place. */
  track(id: number, result: Pointer, endpoint: number): boolean;
  /**
   * UCX calls our callbacks only on this thread (no takeover): a request may report its own end
   * through a callback instead of being checked each round.
   */
  readonly callbacks: boolean;
  /**
   * ucp_request_param_t for a send of request `id` with these op_attr_mask and flags, plus the
   * send callback and `id` as user data when `callbacks` (the send reports itself).
   */
  sendParams(id: number, mask: number, flags?: number, memh?: Pointer): Pointer;
  /**
   * As `track`, for a send posted with `sendParams`: not checked each round when it reports
   * itself. `memh` (from `handles`) is unmapped when the send ends.
   */
  trackSend(id: number, result: Pointer, endpoint: number, memh?: Pointer): boolean;
  /** ucp_request_param_t with these op_attr_mask and flags, and memory handle `memh` when it is one. */
  params(mask: number, flags?: number, memh?: Pointer): Pointer;
  /** Copy bytes out to the application's (address, capacity), or ask for a bigger buffer. */
  copyOut(id: number, bytes: Uint8Array, address: number, capacity: number): void;
  /** The same for `length` bytes of C memory at `source` (UCX's): one memcpy, no view over it. */
  copyOutNative(id: number, source: Pointer, length: number, address: number, capacity: number): void;
  /** Have UCX request `r` checked each round, in order with the others of `owner`. */
  queueRequest(owner: object, r: OwnedRequest): void;
  emit(c: Completion): void;
  /**
   * An active message arrived (called first thing by the AM callback). With takeover the
   * executor's thread takes the token back and keeps it while they come: UCX may call the
   * callback on the application thread, where each call waits for this thread's event loop.
   */
  activeMessage(): void;
  /** Hand payloads to the application thread (several: one hand-over), before their completions. */
  deliver(p: Payload | Payload[]): void;
}
