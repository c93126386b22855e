/**
 * UCXX's active-message header (UCXX 0.50 and later), byte for byte, so that `amSend`/`amRecv`
 * talk to UCXX's `am_send`/`am_recv` (C++ and Python). Packed, little-endian:
 *
 *   memoryType           u32     UCS memory type of the data (HOST 0, CUDA 1, ...)
 *   hasReceiverCallback  u8      1: the message is for a named receiver callback
 *   owner                64 B    only with a callback: name, NUL-padded, at most 63 bytes
 *   id                   u64     only with a callback
 *   memoryTypePolicy     u8      0: fall back to host memory, 1: error, if the receiver has no
 *                                allocator for memoryType
 *   userHeaderSize       u64
 *   userHeader           bytes   the application's own header
 *
 * A plain host message without user header is 14 bytes. Reading also accepts what older UCXX
 * and plain UCX peers send: nothing at all (host memory; UCX's ucp_client_server example), 4
 * bytes (memoryType only, UCXX 0.33-0.36) and 5 bytes (plus hasReceiverCallback 0): UCXX treats
 * every field after hasReceiverCallback as optional. A field cut short, a size that does not
 * match what follows, or a flag that is not 0/1 is an error.
 */

/** UCXX reserves this owner name for its own callbacks. */
export const RESERVED_OWNER = "ucxx";
/** Bytes of the owner name field; the name itself is at most one less (NUL-terminated). */
export const OWNER_BYTES = 64;

/** A named receiver callback (UCXX's `AmReceiverCallbackInfo`). */
export interface AmCallbackAddress {
  readonly owner: string;
  readonly id: bigint;
}

export interface AmHeader {
  /** UCS memory type of the data (0 host). */
  readonly memoryType: number;
  readonly callback?: AmCallbackAddress;
  /** 0: fall back to host memory when the receiver cannot allocate memoryType; 1: error. */
  readonly memoryTypePolicy: number;
  readonly userHeader: Uint8Array;
}

/** Why bytes received as an AM header are not one. */
export class AmHeaderError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "AmHeaderError";
  }
}

const encoder = new TextEncoder();
const decoder = new TextDecoder("utf-8", { fatal: true });

/** The owner name as UCXX stores it; throws RangeError for names that do not fit. */
export function ownerBytes(owner: string): Uint8Array {
  const bytes = encoder.encode(owner);
  if (bytes.length === 0 || bytes.length >= OWNER_BYTES || bytes.includes(0)) {
    throw new RangeError(`a receiver-callback owner is 1 to ${OWNER_BYTES - 1} bytes of UTF-8 without NUL, got '${owner}'`);
  }
  return bytes;
}

function isZero(bytes: Uint8Array, from: number, to: number): boolean {
  for (let i = from; i < to; i++) if (bytes[i] !== 0) return false;
  return true;
}

export function encodeAmHeader(h: AmHeader): Uint8Array {
  const size = 4 + 1 + (h.callback ? OWNER_BYTES + 8 : 0) + 1 + 8 + h.userHeader.length;
  const out = new Uint8Array(size);
  const view = new DataView(out.buffer);
  let at = 0;
  view.setUint32(at, h.memoryType, true);
  at += 4;
  view.setUint8(at++, h.callback ? 1 : 0);
  if (h.callback) {
    out.set(ownerBytes(h.callback.owner), at);
    at += OWNER_BYTES;
    view.setBigUint64(at, BigInt.asUintN(64, h.callback.id), true);
    at += 8;
  }
  view.setUint8(at++, h.memoryTypePolicy);
  view.setBigUint64(at, BigInt(h.userHeader.length), true);
  at += 8;
  out.set(h.userHeader, at);
  return out;
}

/** The plain 14-byte header (no receiver callback, no user header), as nearly every message has. */
const PLAIN_BYTES = 14;
/**
 * The plain header of host memory (14 zero bytes) as the receiving side hands it on where the
 * engine saw it and did not carry it (packed messages): this very array, which the router knows
 * without decoding it. Nobody may write to it.
 */
export const RECEIVED_PLAIN_HEADER = new Uint8Array(PLAIN_BYTES);
const NO_USER_HEADER = new Uint8Array(0);

export function decodeAmHeader(bytes: Uint8Array): AmHeader {
  // Fast path for the plain header, read without a DataView or closures (one per message
  // otherwise): hasReceiverCallback 0, memoryTypePolicy 0 or 1, userHeaderSize 0. The same
  // fields the full reading below would give.
  if (bytes.length === PLAIN_BYTES && bytes[4] === 0 && bytes[5]! <= 1 && isZero(bytes, 6, PLAIN_BYTES)) {
    const memoryType = (bytes[0]! | (bytes[1]! << 8) | (bytes[2]! << 16) | (bytes[3]! << 24)) >>> 0;
    return { memoryType, memoryTypePolicy: bytes[5]!, userHeader: NO_USER_HEADER.slice() };
  }
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const none = new Uint8Array(0);
  if (bytes.length === 0) return { memoryType: 0, memoryTypePolicy: 0, userHeader: none };
  let at = 0;
  const need = (n: number, field: string) => {
    if (at + n > bytes.length) throw new AmHeaderError(`AM header ends inside '${field}' (${bytes.length} bytes)`);
  };
  need(4, "memoryType");
  const memoryType = view.getUint32(at, true);
  at += 4;
  if (at === bytes.length) return { memoryType, memoryTypePolicy: 0, userHeader: none };
  const has = view.getUint8(at++);
  if (has > 1) throw new AmHeaderError(`AM header field 'hasReceiverCallback' is ${has}; it must be 0 or 1`);
  let callback: AmCallbackAddress | undefined;
  if (has === 1) {
    need(OWNER_BYTES + 8, "receiver callback");
    const raw = bytes.subarray(at, at + OWNER_BYTES);
    const end = raw.indexOf(0);
    if (end <= 0) throw new AmHeaderError("AM header's receiver-callback owner is empty or not NUL-terminated");
    let owner: string;
    try {
      owner = decoder.decode(raw.subarray(0, end));
    } catch {
      throw new AmHeaderError("AM header's receiver-callback owner is not UTF-8");
    }
    at += OWNER_BYTES;
    callback = { owner, id: view.getBigUint64(at, true) };
    at += 8;
  }
  if (at === bytes.length) return { memoryType, callback, memoryTypePolicy: 0, userHeader: none };
  const policy = view.getUint8(at++);
  if (policy > 1) throw new AmHeaderError(`AM header field 'memoryTypePolicy' is ${policy}; it must be 0 or 1`);
  need(8, "userHeaderSize");
  const userSize = view.getBigUint64(at, true);
  at += 8;
  if (userSize !== BigInt(bytes.length - at)) {
    throw new AmHeaderError(`AM header says its user header is ${userSize} bytes; ${bytes.length - at} follow`);
  }
  return { memoryType, callback, memoryTypePolicy: policy, userHeader: bytes.slice(at) };
}
