/**
 * The record formats that travel through the rings: a submission (one operation the
 * application asks UCX for) and a completion (its outcome, or an event such as an incoming
 * connection). Both are written and read through the ring's typed views at a word index.
 *
 * Submission, 256 bytes:
 *   f64[0] address    buffer / sockaddr / output address (Numbers: addresses < 2^48)
 *   f64[1] length     bytes
 *   f64[2] handle     a UCX handle passed back in (connection request)
 *   u32[6] op         Op
 *   u32[7] request    request id (0: none)
 *   u32[8] target     endpoint, listener or request id the op acts on
 *   u32[9] flags      op-specific (error mode, force close, ...)
 *   u32[10..11]       tag (lo, hi)
 *   u32[12..13]       tag mask (lo, hi)
 *   bytes 64..255     a send's payload when its protocol is "inline" (flags SEND_FLAG_INLINE)
 *
 * Completion, 32 bytes:
 *   f64[0] value      length received, port, handle, ...
 *   u32[2] kind       CompletionKind
 *   u32[3] id         request id, or listener/endpoint id for events
 *   i32[4] status     ucs_status_t
 *   u32[5..6]         tag (lo, hi) of a received message; client IPv4 and port for a connection
 *   u32[7] aux
 */

export const SUBMISSION_BYTES = 256;
/** Where an inline send's bytes start in a submission record, and how many fit. */
export const INLINE_OFFSET = 64;
export const INLINE_CAPACITY = SUBMISSION_BYTES - INLINE_OFFSET;
export const COMPLETION_BYTES = 32;

export const Op = {
  TagSend: 1,
  TagRecv: 2,
  TagProbe: 3,
  StreamSend: 4,
  StreamRecv: 5,
  Cancel: 6,
  EndpointCreateAddress: 7,
  EndpointCreateSockaddr: 8,
  EndpointCreateConnRequest: 9,
  EndpointClose: 10,
  EndpointFlush: 11,
  EndpointInfo: 12,
  Listen: 13,
  ListenerClose: 14,
  ListenerReject: 15,
  WorkerAddress: 16,
  WorkerFlush: 17,
  Stop: 18,
  /** A multi-buffer send: address = descriptor of (f64 address, f64 length) pairs, length = their count. */
  MultiSend: 19,
  /** A multi-buffer receive: length = maxBytes, handle = maxHeaders; buffers come back as a payload. */
  MultiRecv: 20,
  /** Register memory: address, length; target = memory id. */
  MemMap: 21,
  /** Unregister memory `target`. */
  MemUnmap: 22,
  /** Pack memory `target`'s remote key into (address, length); value = bytes needed. */
  RkeyPack: 23,
  /** Unpack the remote key at (address, length) for endpoint `target`; flags = remote key id. */
  RkeyUnpack: 24,
  /** Destroy remote key `flags`. */
  RkeyDestroy: 25,
  /** Put (address, length) to remote address `handle` with remote key `flags`, on endpoint `target`. */
  Put: 26,
  /** Get into (address, length) from remote address `handle` with remote key `flags`, on endpoint `target`. */
  Get: 27,
  /**
   * Atomic on endpoint `target` at remote address `handle`, remote key `flags`: operand at
   * `address`, reply (compare value in, old value out) at `address + 8`; length = 4 or 8 bytes;
   * tagLo = ucp_atomic_op_t; tagHi = 1 to fetch the old value.
   */
  Atomic: 28,
  /** ucp_worker_fence. */
  WorkerFence: 29,
  /**
   * Active message on endpoint `target`: data (address, length), header at `handle` of `flags`
   * bytes, AM id in tagLo, ucp_am_send flags in tagHi.
   */
  AmSend: 30,
  /** Receive UCX active messages with id `target` (id 0, UCXX's, is set up with the worker). */
  AmRegister: 31,
  /**
   * A tag receive on a failed endpoint (fields as TagRecv): posted only if UCX already holds a
   * matching message, else it completes at once with UCS_ERR_NO_MESSAGE (nothing can come).
   */
  TagRecvIfQueued: 32,
  /**
   * Many tag receives in one record (`recvMany`): address = descriptor of `length` entries of
   * 32 bytes (f64 address, f64 capacity in; f64 length received, u32 sender tag lo, hi out), tag
   * and mask as TagRecv; flags MULTI_FLAG_IF_QUEUED as MultiRecv. One completion for all.
   */
  RecvMany: 33,
  /**
   * A small active message whose data and header ride in the record (inline: data, then header):
   * endpoint `target`, data `length` bytes, header `flags` bytes, AM id in tagLo, ucp_am_send
   * flags in tagHi. Its Promise resolved when it was written (SendPath.amSendInline).
   */
  AmSendInline: 34,
  /**
   * A window of active messages in one record (`amSendMany`): address = descriptor of (f64
   * address, f64 length) pairs, length = their count; every message on endpoint `target` with
   * the header at `handle` of `flags` bytes, AM id in tagLo, ucp_am_send flags in tagHi. One
   * completion for all.
   */
  AmSendMany: 35,
} as const;
export type Op = (typeof Op)[keyof typeof Op];

export const CompletionKind = {
  /** Request `id` finished with `status` (and `value`, `tag` where relevant). */
  Request: 1,
  /** Listener `id` got a connection request: handle in `value`, client IPv4/port in tag words. */
  ConnectionRequest: 2,
  /** Endpoint `id` failed with `status`; its pending requests fail too. */
  EndpointError: 3,
  /** The engine stopped and freed everything (answer to Op.Stop). */
  Stopped: 4,
  /**
   * An active message arrived: `id` the endpoint it came on (0: unknown), `value` its payload's
   * event id, tagLo the AM id; its data and header are in the payload.
   */
  AmMessage: 5,
  /**
   * Thread mode with takeover: the progress thread lent the token (takeover-state.ts). Written
   * as a record so that it moves the ring's tail: an application thread about to park on the
   * tail cannot miss it, as it could miss a bare notify sent just before it parks.
   */
  TokenLent: 6,
  /**
   * Small active messages packed together (am-pack.ts): `id` how many, `value` the event id of
   * their payload (the packed data and its index, which names each one's endpoint and AM id).
   */
  AmBatch: 7,
} as const;
export type CompletionKind = (typeof CompletionKind)[keyof typeof CompletionKind];

/** One completion as the executor reports it; the mode writes it into the completion ring (DONE). */
export interface Completion {
  kind: CompletionKind;
  id: number;
  status: number;
  value: number;
  tagLo: number;
  tagHi: number;
  aux: number;
}

/** Endpoint flags in a submission. */
export const EP_FLAG_ERR_PEER = 1;
/** Send flags (tag and stream sends): how the bytes travel (proto/protocols.ts). */
export const SEND_FLAG_INLINE = 1;
/**
 * The bytes are in registered memory `handle` (the bounce pool, a registration-cache entry, a
 * user's memMap): send with its memory handle.
 */
export const SEND_FLAG_MEMH = 2;
/** The memory id of the bounce pool, registered by the executor at start (the worker's ids start at 1). */
export const BOUNCE_POOL_MEMORY = 0;
/** MultiRecv flags: every part is received only if UCX already holds it (see TagRecvIfQueued). */
export const MULTI_FLAG_IF_QUEUED = 1;
/** Close flags in a submission. */
export const CLOSE_FLAG_FORCE = 1;

export const SUB = { address: 0, length: 1, handle: 2, op: 6, request: 7, target: 8, flags: 9, tagLo: 10, tagHi: 11, maskLo: 12, maskHi: 13 } as const;
export const DONE = { value: 0, kind: 2, id: 3, status: 4, tagLo: 5, tagHi: 6, aux: 7 } as const;

const TWO32 = 4294967296;

/** Split a tag (Number up to 2^53, or BigInt up to 2^64) into two u32 words. */
export function splitTag(tag: number | bigint): [lo: number, hi: number] {
  if (typeof tag === "bigint") {
    const t = BigInt.asUintN(64, tag);
    return [Number(t & 0xffffffffn), Number(t >> 32n)];
  }
  return [tag >>> 0, Math.floor(tag / TWO32) >>> 0];
}

/** Join two u32 words into a tag: a Number when it fits exactly, else a BigInt. */
export function joinTag(lo: number, hi: number): number | bigint {
  if (hi < 0x200000) return hi * TWO32 + lo;
  return (BigInt(hi) << 32n) | BigInt(lo);
}

/**
 * The same tag as the `i64` argument UCX's tag functions are declared with here: a Number
 * when it fits (no BigInt on the hot path), else a signed BigInt with the same 64 bits.
 */
export function tagArgument(lo: number, hi: number): number | bigint {
  if (hi === 0xffffffff && lo === 0xffffffff) return -1;
  if (hi < 0x200000) return hi * TWO32 + lo;
  return BigInt.asIntN(64, (BigInt(hi) << 32n) | BigInt(lo));
}
