/**
 * What the executor hands to the application thread besides a completion record: the memory it
 * allocated for a receive whose size only the sender knew (multi-buffer frames, active messages)
 * or a failure it can explain better than a status. In thread mode it travels on a port of its
 * own, its ArrayBuffers transferred (moved, not copied), posted before the completion record
 * that refers to it, and taken synchronously when that record arrives.
 */
export interface Payload {
  /** A request id (multi-receive), or an event id at or above 2^31 (active message). */
  readonly id: number;
  /** Multi-receive frames in order, or an active message's data as the only element. */
  readonly buffers?: ArrayBuffer[];
  /** Multi-receive: which frames the sender marked device memory (received here into host memory). */
  readonly device?: boolean[];
  /** A ucx-ts error code (`UCX_TS_*`) and message, when the operation failed for a reason of ours. */
  readonly code?: string;
  readonly message?: string;
  /** Active messages: the UCX AM id and the header bytes as received. */
  readonly amId?: number;
  readonly header?: Uint8Array;
  /** Active messages: the data's length, when its buffer (memory reused) is larger. */
  readonly length?: number;
}
