/**
 * What an endpoint needs of the worker that made it (worker.ts implements it). Defined here,
 * below both, so that endpoint.ts never imports worker.ts: the worker sits above its endpoints
 * and listeners, and they reach it only through this.
 */
import type { UcxRequest } from "./ucx-request.ts";
import type { DirectTags } from "./engine/direct-tags.ts";
import type { AmInbox, AmMessage } from "./am/inbox.ts";
import type { Feature } from "./context.ts";
import type { DrainHost } from "./endpoint-drain.ts";
import type { Submission } from "./engine/engine.ts";
import type { UcxError } from "./errors.ts";
import type { SendPath } from "./proto/send-path.ts";
import type { MultiRecvOptions, RecvOptions, RecvResult } from "./receive-options.ts";
import type { Tag } from "./tag.ts";
import type { BufferLike } from "./buffers.ts";
import type { DeviceBuffer } from "./cuda/device-buffer.ts";
import type { TagPort } from "./cuda/staged-multi-receive.ts";

/** A request as the worker hands it back: its id (for tracking) and its Promise. */
export interface Submitted<T> {
  readonly id: number;
  readonly promise: Promise<T>;
}

export interface EndpointHost extends DrainHost {
  readonly closed: boolean;
  /** The UCP features of the worker's context (an operation checks its own is there). */
  readonly features: readonly Feature[];
  /** Sends' protocol selection (proto/send-path.ts). */
  readonly sendPath: SendPath;
  /** Submit `s` as a request: `keep` stays referenced until UCX is done (Worker.request). */
  request<T>(
    s: Omit<Submission, "request">,
    keep: unknown,
    operation: string,
    onOk: (value: number, tagLo: number, tagHi: number) => T,
    onError?: (status: number, value: number) => UcxError | undefined,
    /** Hand it to UCX now, not at the next round of progress (Engine.submit). */
    now?: boolean,
  ): Submitted<T>;
  /** Await `p`, progressing the worker meanwhile in polling and blocking modes. */
  settled<T>(p: Promise<T>): Promise<T>;
  addressOf(bytes: Uint8Array): number;
  /** `addressOf` through a cache, for views posted again and again (request-path.ts cachedAddressOf). */
  cachedAddressOf(bytes: Uint8Array): number;
  newObjectId(): number;
  /** Polling and blocking modes: the engine's direct tag calls, when one may go to UCX now (RequestPath.directTags). */
  directTags(): DirectTags | undefined;
  /** Request `id` belongs to endpoint `owner` (a receive when `receive`). */
  ownRequest(id: number, owner: object, receive?: boolean): void;
  exposeRequest(id: number, promise: Promise<unknown>): void;
  cancelOnAbort(r: Submitted<unknown>, signal: AbortSignal | undefined, rejectAtOnce?: boolean, operation?: string): void;
  holdMemory<T>(bytes: Uint8Array, promise: Promise<T>): Promise<T>;
  tagRecv(buffer: BufferLike, tag: Tag, mask: Tag, options: RecvOptions, scope?: number, ifQueued?: boolean, released?: () => void): Submitted<RecvResult>;
  tagRecvRequest(buffer: BufferLike, tag: Tag, mask: Tag, scope?: number, ifQueued?: boolean): { id: number; request: UcxRequest<RecvResult> };
  /** A multi-receive with device frames through the receiving pipeline, its receives posted on `port`. */
  recvMultiStaged(tag: Tag, options: MultiRecvOptions, port: TagPort): Promise<(Uint8Array | DeviceBuffer)[]>;
  /**
   * How many of endpoint `owner`'s requests other than receives UCX still holds (settled early or
   * not), with its sends straight to UCX (on endpoint id `endpointId`).
   */
  requestsInFlightOf(owner: object, endpointId?: number): number;
  /** Ask UCX to cancel request `id`. */
  cancel(id: number): void;
  tagRecvMulti(tag: Tag, options: MultiRecvOptions, scope?: number, ifQueued?: boolean): Submitted<(Uint8Array | DeviceBuffer)[]>;
  tagRecvMany(buffers: readonly BufferLike[], tag: Tag, mask: Tag, options: RecvOptions, scope?: number, ifQueued?: boolean): Submitted<RecvResult[]>;
  amInbox(endpointId: number): AmInbox;
  amTake(endpointId: number, signal?: AbortSignal): Promise<AmMessage>;
  amTakeMany(endpointId: number, count: number, signal?: AbortSignal): Promise<AmMessage[]>;
  /** The endpoint is closed: forget it (and release its receive scope). */
  forgetEndpoint(id: number): void;
  /** The endpoint is closed: its inbox rejects its waiters with `error` and is forgotten. */
  closeAmInbox(endpointId: number, error: UcxError): void;
}
