/**
 * Atomics carried over active messages, on the executor's thread: both the initiator's side (an
 * atomic on an endpoint with peer error handling, where UCX >= 1.16 under protocols v2 has no
 * protocol for it: ucx-version-gaps.ts) and the target's (every worker with the "am" feature
 * serves them, whatever its own UCX, since its peer decides).
 *
 * The initiator sends one request (am-atomic-wire.ts) with UCP_AM_SEND_FLAG_REPLY; the target,
 * inside UCX's AM callback, applies the operation with JavaScript's `Atomics` to a word of memory
 * it registered AND exported (a key packed for it: MemoryHandle.packRkey), and answers on the
 * reply endpoint with the old value or the status that refused it. The request ends when that
 * reply comes back on the same endpoint, or fails with the endpoint.
 *
 * Atomicity: `Atomics` on a view of the target's memory are the CPU's atomic instructions, so the
 * operations are atomic against each other, against UCX's own atomics on the same word (software
 * ones run on this same thread; shared-memory ones are CPU atomics too) and against the target's
 * `Atomics` on a SharedArrayBuffer. Plain JavaScript writes by the target are not atomic with
 * anything, as with UCX's atomics.
 */
import { ptrIsError, UCX_CONSTANTS as C, type Pointer } from "../../ffi/index.ts";
import type { EndpointState, OpHost } from "./op-host.ts";
import {
  ATOMIC_AM_ID,
  ATOMIC_REPLY_BYTES,
  ATOMIC_REQUEST_BYTES,
  type AtomicRequest,
  AtomicWireError,
  decodeAtomicMessage,
  encodeAtomicReply,
  encodeAtomicRequest,
} from "./am-atomic-wire.ts";

const UCS_OK = 0;
const UCS_ERR_CANCELED = -16;
const UCS_ERR_INVALID_PARAM = -5;

/** ucp_atomic_op_t. */
const ADD = 0;
const SWAP = 1;
const CSWAP = 2;
const AND = 3;
const OR = 4;
const XOR = 5;

/** A word the target may operate on: one element of `words` (Uint32Array for 4 bytes, BigUint64Array for 8). */
export interface AtomicWord {
  readonly words: Uint32Array | BigUint64Array;
  readonly index: number;
}

/** Finds the word at (address, size) in exported memory, or the status that refuses it. */
export type AtomicWordFinder = (address: number, size: 4 | 8) => AtomicWord | number;

/** One request sent and not answered yet. */
interface Pending {
  readonly id: number;
  readonly endpoint: number;
  /** The application's scratch (endpoint-rma.ts): operands at 0 and 8, the old value goes to 8. */
  readonly scratch: number;
  readonly size: number;
  readonly fetch: boolean;
}

/** The operation on `word`; returns the value before it (what UCX's fetching atomics give back). */
export function applyAtomic(word: AtomicWord, op: number, value: bigint, compare: bigint): bigint {
  const { index } = word;
  if (word.words instanceof BigUint64Array) {
    const w = word.words;
    switch (op) {
      case ADD: return Atomics.add(w, index, value);
      case SWAP: return Atomics.exchange(w, index, value);
      case CSWAP: return Atomics.compareExchange(w, index, compare, value);
      case AND: return Atomics.and(w, index, value);
      case OR: return Atomics.or(w, index, value);
      case XOR: return Atomics.xor(w, index, value);
    }
  } else {
    const w = word.words;
    const v = Number(value);
    switch (op) {
      case ADD: return BigInt(Atomics.add(w, index, v));
      case SWAP: return BigInt(Atomics.exchange(w, index, v));
      case CSWAP: return BigInt(Atomics.compareExchange(w, index, Number(compare), v));
      case AND: return BigInt(Atomics.and(w, index, v));
      case OR: return BigInt(Atomics.or(w, index, v));
      case XOR: return BigInt(Atomics.xor(w, index, v));
    }
  }
  throw new RangeError(`unknown atomic op ${op}`);
}

export class AmAtomics {
  private readonly pending = new Map<number, Pending>();
  private nextToken = 1;
  /** Where arriving headers and the application's operands are copied to be read. */
  private readonly staging = new Uint8Array(ATOMIC_REQUEST_BYTES);
  private readonly stagingAddress: number;
  private readonly stagingView = new DataView(this.staging.buffer);
  /** Messages on ATOMIC_AM_ID that were neither a valid request nor an expected reply (tests read it). */
  dropped = 0;
  /** Requests of peers answered, applied or refused (tests read it). */
  served = 0;

  constructor(
    private readonly h: OpHost,
    private readonly findWord: AtomicWordFinder,
  ) {
    this.stagingAddress = h.u.addressOf(this.staging);
  }

  /** Requests waiting for their reply (tests read it: none may stay behind a failed endpoint). */
  get waiting(): number {
    return this.pending.size;
  }

  /**
   * Request `id`: the atomic `op` of `size` bytes at `remote` in the peer's memory, operands in
   * the application's `scratch` (endpoint-rma.ts's layout: for cswap the compare value at 0 and
   * the new value at 8, else the operand at 0; the old value is written to 8).
   */
  post(id: number, ep: number, e: EndpointState, scratch: number, size: number, remote: number, op: number, fetch: boolean): void {
    const u = this.h.u;
    u.memcpy(this.stagingAddress, scratch, 16);
    const first = size === 8 ? this.stagingView.getBigUint64(0, true) : BigInt(this.stagingView.getUint32(0, true));
    const second = size === 8 ? this.stagingView.getBigUint64(8, true) : BigInt(this.stagingView.getUint32(8, true));
    const token = this.nextToken;
    this.nextToken = token >= 0xffffffff ? 1 : token + 1;
    // UCX reads the header until the send ends (not only inside the call): one of its own.
    const header = new Uint8Array(ATOMIC_REQUEST_BYTES);
    encodeAtomicRequest(header, {
      op,
      size: size as 4 | 8,
      fetch,
      token,
      address: remote,
      value: op === CSWAP ? second : first,
      compare: op === CSWAP ? first : 0n,
    });
    this.pending.set(token, { id, endpoint: ep, scratch, size, fetch });
    this.send(e.handle, header, (status) => this.finish(token, status, 0n));
  }

  /**
   * A message on ATOMIC_AM_ID (from UCX's AM callback): a request to serve, or the reply to one
   * of ours. `replyEp` is UCX's endpoint back to the sender (0: none); `endpoint` ours for it.
   */
  arrived(header: Pointer, headerLength: number, replyEp: Pointer, endpoint: number): void {
    if (headerLength === 0 || headerLength > ATOMIC_REQUEST_BYTES) return void this.dropped++;
    this.h.u.memcpy(this.stagingAddress, header, headerLength);
    let message;
    try {
      message = decodeAtomicMessage(this.staging.subarray(0, headerLength));
    } catch (e) {
      if (e instanceof AtomicWireError) return void this.dropped++;
      throw e;
    }
    if (message.kind === "request") return this.serve(message, replyEp);
    const p = this.pending.get(message.token);
    // A reply must come from the peer the request went to: another peer cannot settle it.
    if (!p || p.endpoint !== endpoint || endpoint === 0) return void this.dropped++;
    this.finish(message.token, message.status, message.old);
  }

  /** Endpoint `ep` failed or closed: its requests end with its status (UCS_ERR_CANCELED if none). */
  endpointGone(ep: number, status: number): void {
    for (const [token, p] of this.pending) if (p.endpoint === ep) this.finish(token, status || UCS_ERR_CANCELED, 0n);
  }

  private serve(r: AtomicRequest, replyEp: Pointer): void {
    if (replyEp === 0) return void this.dropped++; // nowhere to answer: the sender did not ask for one
    this.served++;
    const word = this.findWord(r.address, r.size);
    let status = typeof word === "number" ? word : UCS_OK;
    let old = 0n;
    if (typeof word !== "number") {
      try {
        old = applyAtomic(word, r.op, r.value, r.compare);
      } catch {
        status = UCS_ERR_INVALID_PARAM;
      }
    }
    const reply = new Uint8Array(ATOMIC_REPLY_BYTES);
    encodeAtomicReply(reply, r.token, r.fetch ? old : 0n, status);
    // Inside UCX's AM callback, as UCX's own software atomics answer: the reply endpoint is
    // certain to be valid only here. A failed reply is the initiator's loss (its endpoint fails).
    this.send(replyEp, reply, () => {});
  }

  /** An AM of `header` alone (no data) on `ep`; `onDone` hears only of a send that failed. */
  private send(ep: Pointer, header: Uint8Array, onDone: (status: number) => void): void {
    const u = this.h.u;
    const r = u.ucp_am_send_nbx(ep, ATOMIC_AM_ID, u.addressOf(header), header.length, 0, 0, this.h.params(C.UCP_OP_ATTR_FIELD_FLAGS, C.UCP_AM_SEND_FLAG_REPLY));
    if (r === 0) return;
    if (ptrIsError(r)) return onDone(r);
    // `holds`: the header stays referenced until UCX is done with the send (op-host.ts says why).
    this.h.queueRequest(this, { request: r, kind: "send", holds: header, onDone: (status) => status !== UCS_OK && onDone(status) });
  }

  /** Request `token` ended: its old value into the application's scratch, its status to the application. */
  private finish(token: number, status: number, old: bigint): void {
    const p = this.pending.get(token);
    if (!p) return; // already ended (its reply came before a failed send's report, or the reverse)
    this.pending.delete(token);
    if (status === UCS_OK && p.fetch) {
      this.stagingView.setBigUint64(8, old, true);
      this.h.u.memcpy(p.scratch + 8, this.stagingAddress + 8, p.size);
    }
    this.h.done(p.id, status);
  }
}
