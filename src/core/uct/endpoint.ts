/**
 * A UCT endpoint (`uct_ep_h`) and its operations: active messages (short, bcopy, zcopy), RMA
 * (put/get short, bcopy, zcopy), atomics (32/64-bit post, fetch, compare-swap), the pending
 * queue, flush and fence. Each is the inline call of uct.h through the interface's ops table.
 *
 * Every operation returns what UCT returned (status.ts): UCS_OK, UCS_INPROGRESS (the completion
 * given, if any, is called when its count reaches zero) or UCS_ERR_NO_RESOURCE (nothing
 * started: progress and retry, or `pendingAdd`); bcopy returns the packed length instead of
 * UCS_OK. Anything else throws `UcxError`. Operations check their arguments against the
 * transport's attributes before UCT sees them.
 *
 * Zero-copy buffers are JavaScript memory that UCT reads or writes after the call returns: an
 * operation that returns UCS_INPROGRESS holds its buffers (on its completion when given, on the
 * endpoint until a flush completes otherwise).
 */
import { UCX_CONSTANTS as C, type Pointer } from "../../ffi/index.ts";
import { markCloseOnExec } from "../close-on-exec.ts";
import { invalidArgument, UcxError } from "../errors.ts";
import { check, ucx } from "../library.ts";
import { OutSlots } from "../out-slots.ts";
import type { UctCompletion } from "./completion.ts";
import type { UctInterfaceAddress } from "./interface-address.ts";
import type { UctOps } from "./ops.ts";
import type { UctMemory, UctRemoteKey } from "./memory.ts";
import { nativeCallbacks, type PackSource } from "./native-callbacks.ts";
import { addressOfView } from "./native-memory.ts";
import { bcopyResult, sendStatus, UCS_INPROGRESS, UCS_OK, type UctSendStatus } from "./status.ts";
import type { UctAtomicOpName, UctTransportAttributes } from "./transport-attributes.ts";

/** One zero-copy segment: a buffer, with the registration it lies in when the transport needs one. */
export interface UctIovEntry {
  readonly buffer: Uint8Array;
  readonly memory?: UctMemory;
}

const ATOMIC_OPCODE: Record<UctAtomicOpName, number> = {
  add: C.UCT_ATOMIC_OP_ADD,
  and: C.UCT_ATOMIC_OP_AND,
  or: C.UCT_ATOMIC_OP_OR,
  xor: C.UCT_ATOMIC_OP_XOR,
  swap: C.UCT_ATOMIC_OP_SWAP,
  cswap: C.UCT_ATOMIC_OP_CSWAP,
};

const IOV_SIZE = 40; // uct_iov_t (layout table)
const PENDING_REQ_SIZE = 48; // uct_pending_req_t

/**
 * What an endpoint uses of its interface (interface.ts's UctInterface implements it; declared
 * here so that endpoint.ts does not import interface.ts, which creates endpoints).
 */
export interface UctEndpointInterface {
  /** The `uct_iface_h`. */
  readonly iface: Pointer;
  readonly transport: string;
  readonly attributes: UctTransportAttributes;
  readonly capabilitySet: ReadonlySet<string>;
  readonly ops: UctOps;
  readonly endpoints: Set<UctEndpoint>;
}

export class UctEndpoint {
  private destroyed = false;
  /** Buffers of operations still in flight without a completion of their own, until a flush completes. */
  private held: unknown[] = [];
  private readonly result = new BigUint64Array(1);
  private readonly resultAddress: Pointer;

  private constructor(
    readonly iface: UctEndpointInterface,
    /** The `uct_ep_h`. */
    readonly handle: Pointer,
  ) {
    this.resultAddress = ucx().addressOf(this.result);
  }

  static create(iface: UctEndpointInterface, peer: UctInterfaceAddress | undefined): UctEndpoint {
    const u = ucx();
    const params = u.struct("uct_ep_params_t");
    let mask = C.UCT_EP_PARAM_FIELD_IFACE;
    params.set("iface", iface.iface);
    if (peer) {
      mask |= C.UCT_EP_PARAM_FIELD_DEV_ADDR | C.UCT_EP_PARAM_FIELD_IFACE_ADDR;
      params.set("dev_addr", peer.deviceAddress.length > 0 ? u.addressOf(peer.deviceAddress) : 0);
      params.set("iface_addr", peer.interfaceAddress.length > 0 ? u.addressOf(peer.interfaceAddress) : 0);
    }
    params.set("field_mask", mask);
    const out = new OutSlots(1);
    check(u.uct_ep_create(u.addressOf(params.bytes), out.address()), `uct_ep_create(${iface.transport})`);
    const ep = new UctEndpoint(iface, out.pointer());
    iface.endpoints.add(ep);
    markCloseOnExec(); // a tcp endpoint's socket (close-on-exec.ts)
    return ep;
  }

  get ep(): Pointer {
    if (this.destroyed) throw new UcxError("UCX_TS_CLOSED", "UCT endpoint is destroyed");
    return this.handle;
  }

  /** `uct_ep_get_address` (CONNECT_TO_EP transports): what the peer's `connectToEndpoint` needs. */
  address(): Uint8Array {
    this.requireConnectToEndpoint("address");
    const n = this.iface.attributes.endpointAddressLength;
    const out = new Uint8Array(Math.max(1, n));
    check(ucx().uct_ep_get_address(this.ep, ucx().addressOf(out)), "uct_ep_get_address");
    return out.slice(0, n);
  }

  /** `uct_ep_connect_to_ep`: both sides call it with the other's device and endpoint addresses. */
  connectToEndpoint(deviceAddress: Uint8Array, endpointAddress: Uint8Array): void {
    this.requireConnectToEndpoint("connectToEndpoint");
    const a = this.iface.attributes;
    if (deviceAddress.length !== a.deviceAddressLength || endpointAddress.length !== a.endpointAddressLength) {
      throw invalidArgument(
        `connectToEndpoint: addresses of ${deviceAddress.length}/${endpointAddress.length} bytes, ${this.iface.transport} uses ${a.deviceAddressLength}/${a.endpointAddressLength}`,
      );
    }
    const u = ucx();
    check(u.uct_ep_connect_to_ep(this.ep, u.addressOf(deviceAddress), u.addressOf(endpointAddress)), "uct_ep_connect_to_ep");
  }

  /**
   * The ops of a transport without CONNECT_TO_EP leave ep_get_address and ep_connect_to_ep NULL:
   * uct.h would call through the NULL pointer (a segfault, seen with posix), so refuse first.
   */
  private requireConnectToEndpoint(what: string): void {
    if (!this.iface.attributes.connectToEndpoint) {
      throw new UcxError("UCS_ERR_UNSUPPORTED", `${what}: ${this.iface.transport} endpoints connect to interfaces, not to endpoints`, { status: -22 });
    }
  }

  private require(capability: string): void {
    if (!this.iface.capabilitySet.has(capability)) {
      throw new UcxError("UCS_ERR_UNSUPPORTED", `${this.iface.transport} has no ${capability}`, { status: -22 });
    }
  }

  private checkId(id: number): void {
    if (!Number.isInteger(id) || id < 0 || id >= C.UCT_AM_ID_MAX) throw invalidArgument(`AM id must be 0..${C.UCT_AM_ID_MAX - 1}, got ${id}`);
  }

  private hold(status: UctSendStatus, completion: UctCompletion | undefined, what: unknown): UctSendStatus {
    if (status === UCS_INPROGRESS) {
      if (completion) completion.holdUntilFired(what);
      else this.held.push(what);
    }
    return status;
  }

  // --- active messages -----------------------------------------------------------------

  /** `uct_ep_am_short`: the peer's handler gets the 8-byte header (little-endian) then the payload. */
  amShort(id: number, header: number | bigint, payload: Uint8Array): UctSendStatus {
    this.checkId(id);
    this.require("am_short");
    if (payload.length + 8 > this.iface.attributes.am.maxShort) {
      throw invalidArgument(`am_short of ${payload.length} + 8 header bytes exceeds ${this.iface.transport}'s max_short ${this.iface.attributes.am.maxShort}`);
    }
    return sendStatus(this.iface.ops.ep_am_short(this.ep, id, header, addressOfView(payload), payload.length), "uct_ep_am_short");
  }

  /**
   * `uct_ep_am_bcopy`: `source` is copied into UCT's buffer inside the call (a Uint8Array, or a
   * function given UCT's buffer, up to max_bcopy bytes, that returns how many it wrote).
   * Returns the length sent, or UCS_ERR_NO_RESOURCE.
   */
  amBcopy(id: number, source: PackSource, flags = 0): number {
    this.checkId(id);
    this.require("am_bcopy");
    const max = this.iface.attributes.am.maxBcopy;
    if (source instanceof Uint8Array && source.length > max) {
      throw invalidArgument(`am_bcopy of ${source.length} bytes exceeds ${this.iface.transport}'s max_bcopy ${max}`);
    }
    return this.withPackSource(source, max, (cb, token) =>
      bcopyResult(this.iface.ops.ep_am_bcopy(this.ep, id, cb, token, flags), "uct_ep_am_bcopy"),
    );
  }

  private withPackSource(source: PackSource, max: number, call: (cb: Pointer, token: number) => number): number {
    const callbacks = nativeCallbacks();
    const token = callbacks.nextToken();
    callbacks.packSources.set(token, { source, max });
    try {
      return call(callbacks.pack, token);
    } finally {
      callbacks.packSources.delete(token);
    }
  }

  private iov(entries: readonly UctIovEntry[], maxIov: number): Uint8Array {
    if (entries.length === 0 || entries.length > maxIov) {
      throw invalidArgument(`${entries.length} iov entries; ${this.iface.transport} takes 1..${maxIov}`);
    }
    const iov = new Uint8Array(new ArrayBuffer(entries.length * IOV_SIZE));
    const v = new DataView(iov.buffer);
    entries.forEach((e, i) => {
      const o = i * IOV_SIZE;
      v.setBigUint64(o, BigInt(addressOfView(e.buffer)), true);
      v.setBigUint64(o + 8, BigInt(e.buffer.length), true);
      v.setBigUint64(o + 16, BigInt(e.memory?.memh ?? 0), true);
      v.setBigUint64(o + 24, 0n, true);
      v.setUint32(o + 32, 1, true);
    });
    return iov;
  }

  /** `uct_ep_am_zcopy`: header (up to max_hdr bytes) and payload segments sent without a copy. */
  amZcopy(id: number, header: Uint8Array, payload: readonly UctIovEntry[], completion?: UctCompletion, flags = 0): UctSendStatus {
    this.checkId(id);
    this.require("am_zcopy");
    const a = this.iface.attributes.am;
    if (header.length > a.maxHeader) throw invalidArgument(`am_zcopy header of ${header.length} bytes exceeds max_hdr ${a.maxHeader}`);
    const total = payload.reduce((n, e) => n + e.buffer.length, 0);
    if (total > a.maxZcopy) throw invalidArgument(`am_zcopy of ${total} bytes exceeds max_zcopy ${a.maxZcopy}`);
    const iov = this.iov(payload, a.maxIov);
    const u = ucx();
    const status = sendStatus(
      this.iface.ops.ep_am_zcopy(this.ep, id, addressOfView(header), header.length, u.addressOf(iov), payload.length, flags, completion?.address ?? 0),
      "uct_ep_am_zcopy",
    );
    return this.hold(status, completion, [header, payload, iov]);
  }

  // --- RMA ------------------------------------------------------------------------------

  /** `uct_ep_put_short`. */
  putShort(buffer: Uint8Array, remoteAddress: number, rkey: UctRemoteKey): UctSendStatus {
    this.require("put_short");
    if (buffer.length > this.iface.attributes.put.maxShort) throw invalidArgument(`put_short of ${buffer.length} bytes exceeds max_short`);
    return sendStatus(this.iface.ops.ep_put_short(this.ep, addressOfView(buffer), buffer.length, remoteAddress, liveKey(rkey)), "uct_ep_put_short");
  }

  /** `uct_ep_put_bcopy`: returns the length put, or UCS_ERR_NO_RESOURCE. */
  putBcopy(source: PackSource, remoteAddress: number, rkey: UctRemoteKey): number {
    this.require("put_bcopy");
    const max = this.iface.attributes.put.maxBcopy;
    if (source instanceof Uint8Array && source.length > max) throw invalidArgument(`put_bcopy of ${source.length} bytes exceeds max_bcopy ${max}`);
    const key = liveKey(rkey);
    return this.withPackSource(source, Number.isFinite(max) ? max : (source as Uint8Array).length ?? 0, (cb, token) =>
      bcopyResult(this.iface.ops.ep_put_bcopy(this.ep, cb, token, remoteAddress, key), "uct_ep_put_bcopy"),
    );
  }

  /** `uct_ep_put_zcopy`. */
  putZcopy(local: readonly UctIovEntry[], remoteAddress: number, rkey: UctRemoteKey, completion?: UctCompletion): UctSendStatus {
    this.require("put_zcopy");
    const iov = this.iov(local, this.iface.attributes.put.maxIov);
    const status = sendStatus(
      this.iface.ops.ep_put_zcopy(this.ep, ucx().addressOf(iov), local.length, remoteAddress, liveKey(rkey), completion?.address ?? 0),
      "uct_ep_put_zcopy",
    );
    return this.hold(status, completion, [local, iov]);
  }

  /** `uct_ep_get_short`. */
  getShort(target: Uint8Array, remoteAddress: number, rkey: UctRemoteKey): UctSendStatus {
    this.require("get_short");
    return sendStatus(this.iface.ops.ep_get_short(this.ep, addressOfView(target), target.length, remoteAddress, liveKey(rkey)), "uct_ep_get_short");
  }

  /** `uct_ep_get_bcopy`: `target.length` bytes are copied into `target` when they arrive. */
  getBcopy(target: Uint8Array, remoteAddress: number, rkey: UctRemoteKey, completion?: UctCompletion): UctSendStatus {
    this.require("get_bcopy");
    if (target.length > this.iface.attributes.get.maxBcopy) throw invalidArgument(`get_bcopy of ${target.length} bytes exceeds max_bcopy`);
    const callbacks = nativeCallbacks();
    const token = callbacks.nextToken();
    callbacks.unpackTargets.set(token, target);
    const status = sendStatus(
      this.iface.ops.ep_get_bcopy(this.ep, callbacks.unpack, token, target.length, remoteAddress, liveKey(rkey), completion?.address ?? 0),
      "uct_ep_get_bcopy",
    );
    if (status === UCS_OK || status < 0) callbacks.unpackTargets.delete(token);
    return this.hold(status, completion, target);
  }

  /** `uct_ep_get_zcopy`. */
  getZcopy(local: readonly UctIovEntry[], remoteAddress: number, rkey: UctRemoteKey, completion?: UctCompletion): UctSendStatus {
    this.require("get_zcopy");
    const iov = this.iov(local, this.iface.attributes.get.maxIov);
    const status = sendStatus(
      this.iface.ops.ep_get_zcopy(this.ep, ucx().addressOf(iov), local.length, remoteAddress, liveKey(rkey), completion?.address ?? 0),
      "uct_ep_get_zcopy",
    );
    return this.hold(status, completion, [local, iov]);
  }

  // --- atomics --------------------------------------------------------------------------

  private checkAtomic(bits: 32 | 64, op: UctAtomicOpName, fetch: boolean, remoteAddress: number): void {
    const caps = bits === 32 ? this.iface.attributes.atomic32 : this.iface.attributes.atomic64;
    if (!(fetch ? caps.fetch : caps.post).includes(op)) {
      throw new UcxError("UCS_ERR_UNSUPPORTED", `${this.iface.transport} has no ${bits}-bit ${fetch ? "fetching " : ""}atomic ${op}`, { status: -22 });
    }
    if (remoteAddress % (bits / 8) !== 0) throw invalidArgument(`${bits}-bit atomic at ${remoteAddress}: address must be ${bits / 8}-byte aligned`);
  }

  /** `uct_ep_atomic{32,64}_post`: add, and, or, xor on the peer's word, no result. */
  atomicPost(bits: 32 | 64, op: UctAtomicOpName, value: number | bigint, remoteAddress: number, rkey: UctRemoteKey): UctSendStatus {
    this.checkAtomic(bits, op, false, remoteAddress);
    const fn = bits === 32 ? this.iface.ops.ep_atomic32_post : this.iface.ops.ep_atomic64_post;
    return sendStatus(fn(this.ep, ATOMIC_OPCODE[op], operand(bits, value), remoteAddress, liveKey(rkey)), `uct_ep_atomic${bits}_post`);
  }

  /**
   * Where a fetching atomic's old value goes: `into` when given (one 8-byte slot per operation
   * in flight, held until it completes; a 32-bit result fills its low 4 bytes), else the
   * endpoint's own slot that `fetched()` reads, which the next fetching atomic overwrites.
   */
  private resultSlot(into: BigUint64Array | undefined, status: () => UctSendStatus, completion: UctCompletion | undefined): UctSendStatus {
    if (!into) {
      this.result[0] = 0n;
      return status();
    }
    if (into.length < 1) throw invalidArgument("an atomic's result needs a BigUint64Array of at least one element");
    into[0] = 0n;
    return this.hold(status(), completion, into);
  }

  /**
   * `uct_ep_atomic{32,64}_fetch` (add, and, or, xor, swap): the old value is in `into[0]` (or
   * `fetched()`) once the operation is complete (UCS_OK at once, or when the completion fires).
   */
  atomicFetch(
    bits: 32 | 64,
    op: UctAtomicOpName,
    value: number | bigint,
    remoteAddress: number,
    rkey: UctRemoteKey,
    completion?: UctCompletion,
    into?: BigUint64Array,
  ): UctSendStatus {
    this.checkAtomic(bits, op, true, remoteAddress);
    const fn = bits === 32 ? this.iface.ops.ep_atomic32_fetch : this.iface.ops.ep_atomic64_fetch;
    const key = liveKey(rkey);
    return this.resultSlot(into, () => {
      const result = into ? addressOfView(into) : this.resultAddress;
      return sendStatus(fn(this.ep, ATOMIC_OPCODE[op], operand(bits, value), result, remoteAddress, key, completion?.address ?? 0), `uct_ep_atomic${bits}_fetch`);
    }, completion);
  }

  /** `uct_ep_atomic_cswap{32,64}`: the old value is in `into[0]` (or `fetched()`). */
  atomicCompareSwap(
    bits: 32 | 64,
    compare: number | bigint,
    swap: number | bigint,
    remoteAddress: number,
    rkey: UctRemoteKey,
    completion?: UctCompletion,
    into?: BigUint64Array,
  ): UctSendStatus {
    this.checkAtomic(bits, "cswap", true, remoteAddress);
    const fn = bits === 32 ? this.iface.ops.ep_atomic_cswap32 : this.iface.ops.ep_atomic_cswap64;
    const key = liveKey(rkey);
    return this.resultSlot(into, () => {
      const result = into ? addressOfView(into) : this.resultAddress;
      return sendStatus(fn(this.ep, operand(bits, compare), operand(bits, swap), remoteAddress, key, result, completion?.address ?? 0), `uct_ep_atomic_cswap${bits}`);
    }, completion);
  }

  /** The value the last fetching atomic without `into` read (a 32-bit result in the low word). */
  fetched(bits: 32 | 64): bigint {
    return bits === 32 ? this.result[0]! & 0xffffffffn : this.result[0]!;
  }

  // --- pending queue, flush, fence ------------------------------------------------------

  /**
   * `uct_ep_pending_add`: after an operation returned UCS_ERR_NO_RESOURCE, ask to be called back
   * (during progress) when the endpoint has resources. `run` retries and returns UCS_OK when
   * done (the request leaves the queue) or UCS_ERR_NO_RESOURCE / UCS_INPROGRESS to stay queued.
   * Returns UCS_OK when queued, or UCS_ERR_BUSY when the endpoint has resources right now
   * (nothing queued: retry at once). `onPurge` is called if the endpoint is destroyed first.
   */
  pendingAdd(run: () => number, onPurge?: () => void): number {
    this.require("pending");
    const u = ucx();
    const bytes = new Uint8Array(new ArrayBuffer(PENDING_REQ_SIZE));
    const address = u.addressOf(bytes);
    const callbacks = nativeCallbacks();
    new DataView(bytes.buffer).setBigUint64(0, BigInt(callbacks.pending), true);
    callbacks.pendingRequests.set(address, { bytes, run, onPurge });
    const status = this.iface.ops.ep_pending_add(this.ep, address, 0);
    if (status !== UCS_OK) callbacks.pendingRequests.delete(address);
    if (status === UCS_OK || status === -15 /* UCS_ERR_BUSY */) return status;
    throw UcxError.fromStatus(status, "uct_ep_pending_add");
  }

  /** `uct_ep_flush`: UCS_OK when everything issued on this endpoint is complete. */
  flush(completion?: UctCompletion, flags: number = C.UCT_FLUSH_FLAG_LOCAL): UctSendStatus {
    const status = sendStatus(this.iface.ops.ep_flush(this.ep, flags, completion?.address ?? 0), "uct_ep_flush");
    if (status === UCS_OK) this.held = [];
    else if (status === UCS_INPROGRESS && completion) {
      const held = this.held;
      this.held = [];
      completion.holdUntilFired(held);
    }
    return status;
  }

  /** `uct_ep_fence`: operations issued after it are ordered after those before it. */
  fence(): void {
    check(this.iface.ops.ep_fence(this.ep, 0), "uct_ep_fence");
  }

  /** Purges the pending queue (calling each request's onPurge), then `uct_ep_destroy`. */
  destroy(): void {
    if (this.destroyed) return;
    if (this.iface.attributes.capabilities.includes("pending")) {
      this.iface.ops.ep_pending_purge(this.handle, nativeCallbacks().pendingPurge, 0);
    }
    this.destroyed = true;
    ucx().uct_ep_destroy(this.handle);
    this.iface.endpoints.delete(this);
    this.held = [];
  }
}

function liveKey(rkey: UctRemoteKey): number | bigint {
  if (rkey.isReleased) throw new UcxError("UCX_TS_CLOSED", "the remote key was released");
  return rkey.rkey;
}

function operand(bits: 32 | 64, v: number | bigint): number | bigint {
  if (bits === 32) return Number(BigInt.asUintN(32, BigInt(v)));
  const b = BigInt.asUintN(64, BigInt(v));
  return b <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(b) : b;
}
