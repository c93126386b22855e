/**
 * Registered memory, remote keys, put/get and atomics, run by the executor's thread: the
 * ucp_mem_h of each MemoryHandle and the ucp_rkey_h of each RemoteKey, by the application's ids.
 * Remote keys are unpacked for one endpoint and destroyed before it closes. Atomics on endpoints
 * with peer error handling go over active messages where UCX has no protocol for them
 * (am-atomics.ts); the memory a peer's such atomics may reach is what was exported here.
 */
import { UCX_CONSTANTS as C, type Pointer } from "../../ffi/index.ts";
import { Op } from "./records.ts";
import type { EndpointState, OpHost } from "./op-host.ts";
import type { AmAtomics, AtomicWord } from "./am-atomics.ts";

const UCS_OK = 0;
const UCS_ERR_INVALID_PARAM = -5;
const UCS_ERR_NO_ELEM = -12;
const UCS_ERR_NOT_CONNECTED = -24;
const UCS_ERR_OUT_OF_RANGE = -19;

/** One registration: its handle, where it is, and what a peer's atomic over AM may do with it. */
interface Region {
  readonly memh: Pointer;
  address: number;
  readonly length: number;
  /** A key was packed for it: peers may know it. Only such memory serves atomics over AM. */
  exported: boolean;
  /** Views of the region from an 8-byte-aligned start, made at its first atomic over AM. */
  words?: { readonly base: number; readonly u32: Uint32Array; readonly u64: BigUint64Array };
}

export class RemoteMemory {
  /** Registered memory by the application's memory id. */
  private readonly memories = new Map<number, Region>();
  /** Unpacked remote keys (ucp_rkey_h) by the application's key id, with their endpoint. */
  private readonly rkeys = new Map<number, { handle: Pointer; endpoint: number }>();
  constructor(
    private readonly h: OpHost,
    /** Atomics over active messages (am-atomics.ts), with the "am" feature. */
    private readonly amAtomics?: AmAtomics,
    /** This UCX needs them on peer-error-handling endpoints (ucx-version-gaps.ts, atomicsOverActiveMessages). */
    private readonly overAm = false,
  ) {}

  /**
   * The word at (address, size) for a peer's atomic over AM: inside memory registered and
   * exported here, else the status that refuses it (an address this process never offered).
   */
  atomicWord(address: number, size: 4 | 8): AtomicWord | number {
    for (const r of this.memories.values()) {
      if (!r.exported || address < r.address || address + size > r.address + r.length) continue;
      if (!r.words) {
        // From an aligned start (bytes before the region, in the same page, are viewed, never touched).
        const base = r.address - (r.address % 8);
        const end = Math.ceil((r.address + r.length) / 8) * 8;
        const buffer = this.h.u.view(base, end - base);
        r.words = { base, u32: new Uint32Array(buffer), u64: new BigUint64Array(buffer) };
      }
      const w = r.words;
      return { words: size === 8 ? w.u64 : w.u32, index: (address - w.base) / size };
    }
    return UCS_ERR_OUT_OF_RANGE;
  }


  /**
   * Register `length` bytes at `address`, or, with address 0, let UCX allocate them
   * (UCP_MEM_MAP_ALLOCATE: shared-memory transports can then reach the memory directly).
   * value = the address of the memory.
   */
  memMap(id: number, memory: number, address: number, length: number): void {
    const u = this.h.u;
    const status = this.register(memory, address, length);
    if (status !== UCS_OK) return this.h.done(id, status);
    const region = this.memories.get(memory)!;
    if (address !== 0) return this.h.done(id, UCS_OK, address);
    const attr = u.struct("ucp_mem_attr_t");
    attr.set("field_mask", C.UCP_MEM_ATTR_FIELD_ADDRESS | C.UCP_MEM_ATTR_FIELD_LENGTH);
    const q = u.ucp_mem_query(region.memh, u.addressOf(attr.bytes));
    if (q === UCS_OK) region.address = attr.getNumber("address");
    this.h.done(id, q, q === UCS_OK ? region.address : 0);
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
    if (status === UCS_OK) this.memories.set(memory, { memh: this.h.out.pointer(), address, length, exported: false });
    return status;
  }

  /** The memory handle of registration `memory`, or 0 (unknown, or its registration failed). */
  memh(memory: number): Pointer {
    return this.memories.get(memory)?.memh ?? 0;
  }

  memUnmap(id: number, memory: number): void {
    const region = this.memories.get(memory);
    if (region === undefined) return this.h.done(id, UCS_ERR_NO_ELEM);
    this.memories.delete(memory); // with its views: no atomic reaches it after this
    this.h.done(id, this.h.u.ucp_mem_unmap(this.h.contextHandle, region.memh));
  }

  rkeyPack(id: number, memory: number, address: number, capacity: number): void {
    const u = this.h.u;
    const region = this.memories.get(memory);
    if (region === undefined) return this.h.done(id, UCS_ERR_NO_ELEM);
    const status = u.ucp_rkey_pack(this.h.contextHandle, region.memh, this.h.out.address(0), this.h.out.address(1));
    if (status !== UCS_OK) return this.h.done(id, status);
    region.exported = true;
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
    if (this.overAm && t.e.peer && this.amAtomics) return this.amAtomics.post(id, ep, t.e, scratch, size, remote, opcode, fetch);
    const p = this.h.param;
    // ucp_dt_make_contig(size): the operand's width; the reply buffer receives the old value.
    p.set("datatype", size << C.UCP_DATATYPE_SHIFT);
    p.set("reply_buffer", scratch + 8);
    const mask = C.UCP_OP_ATTR_FIELD_DATATYPE | (fetch ? C.UCP_OP_ATTR_FIELD_REPLY_BUFFER : 0);
    const r = this.h.u.ucp_atomic_op_nbx(t.e.handle, opcode, scratch, 1, remote, t.rkey, this.h.params(mask));
    if (!this.h.track(id, r, ep)) this.h.done(id, UCS_OK);
  }

  /**
   * Endpoint `ep` is closing or failed: its remote keys are destroyed before it goes, and its
   * atomics over AM still waiting for a reply end with its status.
   */
  endpointGone(ep: number): void {
    this.amAtomics?.endpointGone(ep, this.h.endpoint(ep)?.failed ?? 0);
    this.destroyRkeysOf(ep);
  }

  /** Remote keys are unpacked per endpoint: destroy them before their endpoint goes. */
  private destroyRkeysOf(ep: number): void {
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
    for (const r of this.memories.values()) this.h.u.ucp_mem_unmap(this.h.contextHandle, r.memh);
    this.memories.clear();
  }
}
