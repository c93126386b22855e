/**
 * The wire format of atomics carried over active messages (am-atomics.ts says when and why):
 * a request and its reply, each one UCX AM header (no data) on the reserved AM id
 * `ATOMIC_AM_ID`, all fields little-endian. What arrives is a peer's bytes: `decodeAtomicMessage`
 * checks every field before anything acts on it (and is fuzzed, test/fuzz).
 *
 * Request, 32 bytes:
 *   0  kind      u8   1
 *   1  op        u8   ucp_atomic_op_t: add 0, swap 1, cswap 2, and 3, or 4, xor 5
 *   2  size      u8   4 or 8: the word's width in bytes
 *   3  flags     u8   bit 0: fetch (reply with the old value); no other bit may be set
 *   4  token     u32  the initiator's, echoed in the reply
 *   8  address   u64  the word, in the target's address space (aligned to size)
 *  16  value     u64  the operand (for cswap: the value swapped in)
 *  24  compare   u64  cswap's compare value (0 for the other ops)
 *
 * Reply, 24 bytes:
 *   0  kind      u8   2
 *   1  reserved  3 bytes (0)
 *   4  token     u32  the request's
 *   8  old       u64  the word before the operation (0 unless fetched)
 *  16  status    i32  ucs_status_t: UCS_OK, or why the target refused
 *  20  reserved  u32  (0)
 *
 * A 32-bit operation carries its values in the low 32 bits; the high 32 must be zero.
 */

/** The UCX AM id reserved for these messages (Worker.onAm refuses it). */
export const ATOMIC_AM_ID = 0xffff;

export const ATOMIC_REQUEST_BYTES = 32;
export const ATOMIC_REPLY_BYTES = 24;

const KIND_REQUEST = 1;
const KIND_REPLY = 2;
const FLAG_FETCH = 1;
/** ucp_atomic_op_t's last value (xor). */
const OP_MAX = 5;

export interface AtomicRequest {
  readonly kind: "request";
  readonly op: number;
  readonly size: 4 | 8;
  readonly fetch: boolean;
  readonly token: number;
  readonly address: number;
  readonly value: bigint;
  readonly compare: bigint;
}

export interface AtomicReply {
  readonly kind: "reply";
  readonly token: number;
  readonly old: bigint;
  readonly status: number;
}

/** Why a message was not a valid request or reply (nothing of it is acted on). */
export class AtomicWireError extends Error {}

export function encodeAtomicRequest(out: Uint8Array, r: Omit<AtomicRequest, "kind">): void {
  const v = new DataView(out.buffer, out.byteOffset, ATOMIC_REQUEST_BYTES);
  v.setUint8(0, KIND_REQUEST);
  v.setUint8(1, r.op);
  v.setUint8(2, r.size);
  v.setUint8(3, r.fetch ? FLAG_FETCH : 0);
  v.setUint32(4, r.token, true);
  v.setBigUint64(8, BigInt(r.address), true);
  v.setBigUint64(16, r.value, true);
  v.setBigUint64(24, r.compare, true);
}

export function encodeAtomicReply(out: Uint8Array, token: number, old: bigint, status: number): void {
  const v = new DataView(out.buffer, out.byteOffset, ATOMIC_REPLY_BYTES);
  for (let i = 0; i < ATOMIC_REPLY_BYTES; i++) out[i] = 0;
  v.setUint8(0, KIND_REPLY);
  v.setUint32(4, token, true);
  v.setBigUint64(8, old, true);
  v.setInt32(16, status, true);
}

/** A request or a reply from a peer's bytes; throws AtomicWireError for anything else. */
export function decodeAtomicMessage(bytes: Uint8Array): AtomicRequest | AtomicReply {
  if (bytes.length === 0) throw new AtomicWireError("empty atomic message");
  const v = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const kind = bytes[0];
  if (kind === KIND_REQUEST) {
    if (bytes.length !== ATOMIC_REQUEST_BYTES) throw new AtomicWireError(`atomic request of ${bytes.length} bytes, not ${ATOMIC_REQUEST_BYTES}`);
    const op = bytes[1]!;
    const size = bytes[2]!;
    const flags = bytes[3]!;
    if (op > OP_MAX) throw new AtomicWireError(`atomic request: unknown op ${op}`);
    if (size !== 4 && size !== 8) throw new AtomicWireError(`atomic request: size ${size}, not 4 or 8`);
    if ((flags & ~FLAG_FETCH) !== 0) throw new AtomicWireError(`atomic request: unknown flags 0x${flags.toString(16)}`);
    const address = v.getBigUint64(8, true);
    if (address === 0n || address > BigInt(Number.MAX_SAFE_INTEGER)) throw new AtomicWireError(`atomic request: address ${address} out of range`);
    if (address % BigInt(size) !== 0n) throw new AtomicWireError(`atomic request: address ${address} not aligned to ${size}`);
    const value = v.getBigUint64(16, true);
    const compare = v.getBigUint64(24, true);
    if (size === 4 && (value >> 32n !== 0n || compare >> 32n !== 0n)) throw new AtomicWireError("atomic request: a 32-bit operand with high bits set");
    if (op !== 2 && compare !== 0n) throw new AtomicWireError("atomic request: a compare value on an op other than cswap");
    const fetch = (flags & FLAG_FETCH) !== 0;
    return { kind: "request", op, size, fetch, token: v.getUint32(4, true), address: Number(address), value, compare };
  }
  if (kind === KIND_REPLY) {
    if (bytes.length !== ATOMIC_REPLY_BYTES) throw new AtomicWireError(`atomic reply of ${bytes.length} bytes, not ${ATOMIC_REPLY_BYTES}`);
    if (bytes[1] !== 0 || bytes[2] !== 0 || bytes[3] !== 0 || v.getUint32(20, true) !== 0) throw new AtomicWireError("atomic reply: reserved bytes are not zero");
    const status = v.getInt32(16, true);
    // ucs_status_t: UCS_OK or an error (-1 .. -255 in UCX's numbering); nothing in progress.
    if (status > 0 || status < -255) throw new AtomicWireError(`atomic reply: status ${status} is not a UCX error status`);
    return { kind: "reply", token: v.getUint32(4, true), old: v.getBigUint64(8, true), status };
  }
  throw new AtomicWireError(`not an atomic message: kind ${kind}`);
}
