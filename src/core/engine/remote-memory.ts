/**
 * Registered memory, remote keys, put/get and atomics, run by the executor's thread: the
 * ucp_mem_h of each MemoryHandle and the ucp_rkey_h of each RemoteKey, by the application's ids.
 * Remote keys are unpacked for one endpoint and destroyed before it closes.
 */
import { UCX_CONSTANTS as C, type Pointer } from "../../ffi/index.ts";
import { Op } from "./records.ts";
import type { EndpointState, OpHost } from "./op-host.ts";

const UCS_OK = 0;
const UCS_ERR_INVALID_PARAM = -5;
const UCS_ERR_NO_ELEM = -12;
const UCS_ERR_NOT_CONNECTED = -24;

export class RemoteMemory {
  /** Registered memory (ucp_mem_h) by the application's memory id. */
  private readonly memories = new Map<number, Pointer>();
  /** Unpacked remote keys (ucp_rkey_h) by the application's key id, with their endpoint. */
  private readonly rkeys = new Map<number, { handle: Pointer; endpoint: number }>();

  constructor(private readonly h: OpHost) {}


  /**
   * Register `length` bytes at `address`, or, with address 0, let UCX allocate them
   * (UCP_MEM_MAP_ALLOCATE: shared-memory transports can then reach the memory directly).
   * value = the address of the memory.
   */
  memMap(id: number, memory: number, address: number, length: number): void {
    const u = this.h.u;
    const status = this.register(memory, address, length);
    if (status !== UCS_OK) return this.h.done(id, status);
    const memh = this.memories.get(memory)!;
    if (address !== 0) return this.h.done(id, UCS_OK, address);
    const attr = u.struct("ucp_mem_attr_t");
    attr.set("field_mask", C.UCP_MEM_ATTR_FIELD_ADDRESS | C.UCP_MEM_ATTR_FIELD_LENGTH);
    const q = u.ucp_mem_query(memh, u.addressOf(attr.bytes));
    this.h.done(id, q, q === UCS_OK ? attr.getNumber("address") : 0);
  }

  /**
   * ucp_mem_map `length` bytes at `address` (address 0: UCX allocates them) as memory id
   * `memory`, unmapped by `memUnmap` or `unmapAll`. Returns UCX's status.
   */
  register(memory: number, address: number, length: number): number {
    const u = this.h.u;
    const p = u.struct("ucp_mem_map_params_t");
    p.set("field_mask", C.UCP_MEM_MAP_PARAM_FIELD_ADDRESS | C.UCP_MEM_MAP_PARAM_FIELD_LENGTH | C.UCP_MEM_MAP_PARAM_FIELD_FLAGS);
    p.set("address", address);
    p.set("length", length);
    p.set("flags", address === 0 ? C.UCP_MEM_MAP_ALLOCATE : 0);
    const status = u.ucp_mem_map(this.h.contextHandle, u.addressOf(p.bytes), this.h.out.address());
    if (status === UCS_OK) this.memories.set(memory, this.h.out.pointer());
    return status;
  }

  /** The memory handle of registration `memory`, or 0 (unknown, or its registration failed). */
  memh(memory: number): Pointer {
    return this.memories.get(memory) ?? 0;
  }

  memUnmap(id: number, memory: number): void {
    const memh = this.memories.get(memory);
    if (memh === undefined) return this.h.done(id, UCS_ERR_NO_ELEM);
    this.memories.delete(memory);
    this.h.done(id, this.h.u.ucp_mem_unmap(this.h.contextHandle, memh));
  }

  rkeyPack(id: number, memory: number, address: number, capacity: number): void {
    const u = this.h.u;
    const memh = this.memories.get(memory);
    if (memh === undefined) return this.h.done(id, UCS_ERR_NO_ELEM);
    const status = u.ucp_rkey_pack(this.h.contextHandle, memh, this.h.out.address(0), this.h.out.address(1));
    if (status !== UCS_OK) return this.h.done(id, status);
    const packed = this.h.out.pointer(0);
    try {
      this.h.copyOutNative(id, packed, this.h.out.pointer(1), address, capacity);
    } finally {
      u.ucp_rkey_buffer_release(packed);
    }
  }

  rkeyUnpack(id: number, ep: number, address: number, length: number, key: number): void {
    const e = this.h.endpoint(ep);
    if (!e) return this.h.done(id, UCS_ERR_NOT_CONNECTED);
    if (e.failed) return this.h.done(id, e.failed);
    if (length === 0) return this.h.done(id, UCS_ERR_INVALID_PARAM);
    const status = this.h.u.ucp_ep_rkey_unpack(e.handle, address, this.h.out.address());
    if (status === UCS_OK) this.rkeys.set(key, { handle: this.h.out.pointer(), endpoint: ep });
    this.h.done(id, status);
  }

  rkeyDestroy(id: number, key: number): void {
    const r = this.rkeys.get(key);
    if (r) {
      this.rkeys.delete(key);
      this.h.u.ucp_rkey_destroy(r.handle);
    }
    this.h.done(id, UCS_OK);
  }

  /** The endpoint and remote key of an RMA operation, or the status that refuses it. */
  rmaTarget(ep: number, key: number): { e: EndpointState; rkey: Pointer } | number {
    const e = this.h.endpoint(ep);
    if (!e) return UCS_ERR_NOT_CONNECTED;
    if (e.failed) return e.failed;
    const r = this.rkeys.get(key);
    // A key unpacked for another endpoint describes another peer's memory: refuse it.
    if (!r || r.endpoint !== ep) return UCS_ERR_INVALID_PARAM;
    return { e, rkey: r.handle };
  }

  rma(op: Op, id: number, ep: number, address: number, length: number, remote: number, key: number): void {
    const t = this.rmaTarget(ep, key);
    if (typeof t === "number") return this.h.done(id, t);
    const call = op === Op.Put ? this.h.u.ucp_put_nbx : this.h.u.ucp_get_nbx;
    const r = call(t.e.handle, address, length, remote, t.rkey, this.h.params(0));
    if (!this.h.track(id, r, ep)) this.h.done(id, UCS_OK, length);
  }

  atomic(id: number, ep: number, scratch: number, size: number, remote: number, key: number, opcode: number, fetch: boolean): void {
    const t = this.rmaTarget(ep, key);
    if (typeof t === "number") return this.h.done(id, t);
    const p = this.h.param;
    // ucp_dt_make_contig(size): the operand's width; the reply buffer receives the old value.
    p.set("datatype", size << C.UCP_DATATYPE_SHIFT);
    p.set("reply_buffer", scratch + 8);
    const mask = C.UCP_OP_ATTR_FIELD_DATATYPE | (fetch ? C.UCP_OP_ATTR_FIELD_REPLY_BUFFER : 0);
    const r = this.h.u.ucp_atomic_op_nbx(t.e.handle, opcode, scratch, 1, remote, t.rkey, this.h.params(mask));
    if (!this.h.track(id, r, ep)) this.h.done(id, UCS_OK);
  }

  /** Remote keys are unpacked per endpoint: destroy them before their endpoint goes. */
  destroyRkeysOf(ep: number): void {
    for (const [key, r] of this.rkeys) {
      if (r.endpoint !== ep) continue;
      this.h.u.ucp_rkey_destroy(r.handle);
      this.rkeys.delete(key);
    }
  }

  /** Before the endpoints close: every remote key. */
  destroyRkeys(): void {
    for (const r of this.rkeys.values()) this.h.u.ucp_rkey_destroy(r.handle);
    this.rkeys.clear();
  }

  /** After the worker is gone, before the context is: every registration. */
  unmapAll(): void {
    for (const memh of this.memories.values()) this.h.u.ucp_mem_unmap(this.h.contextHandle, memh);
    this.memories.clear();
  }
}
