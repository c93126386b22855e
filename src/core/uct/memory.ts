/**
 * Memory for UCT's remote access, and remote keys.
 *
 * A memory domain either registers memory the caller has (`uct_md_mem_reg`: self, tcp, cma) or
 * allocates memory of its own (`uct_iface_mem_alloc` with the MD method: posix and sysv, whose
 * "registration" is a shared segment another process can attach). `UctMemory.forRemoteAccess`
 * picks the one the domain can do. The owner packs a key (`uct_md_mkey_pack`), sends it out of
 * band, and the peer unpacks it with the same component (`uct_rkey_unpack`) into a `uct_rkey_t`.
 *
 * Registered JavaScript memory is held by the `UctMemory` object until `release()`.
 */
import { UCX_CONSTANTS as C, type Pointer } from "../../ffi/index.ts";
import { invalidArgument, UcxError } from "../errors.ts";
import { check, ucx } from "../library.ts";
import { OutSlots } from "../out-slots.ts";
import type { UctComponent } from "./component.ts";
import type { UctMemoryDomain } from "./memory-domain.ts";

interface Owner {
  readonly handle: Pointer;
  readonly memoryDomain: UctMemoryDomain;
}

export class UctMemory {
  private released = false;
  /** Local address of the first byte (what the peer uses as `remoteAddress`). */
  readonly address: Pointer;

  private constructor(
    readonly memoryDomain: UctMemoryDomain,
    /** The bytes: the caller's buffer, or a view of memory the domain allocated. */
    readonly bytes: Uint8Array,
    /** The `uct_mem_h`. */
    readonly memh: Pointer,
    private readonly allocation: Uint8Array | undefined,
  ) {
    this.address = ucx().addressOf(bytes);
    memoryDomain.memories.add(this);
  }

  get length(): number {
    return this.bytes.length;
  }

  /** Register `buffer` (`uct_md_mem_reg`, all access rights). */
  static register(memoryDomain: UctMemoryDomain, buffer: Uint8Array): UctMemory {
    if (!memoryDomain.attributes.canRegister) {
      throw new UcxError("UCS_ERR_UNSUPPORTED", `memory domain '${memoryDomain.name}' cannot register memory (it allocates: use UctMemory.allocate)`, { status: -22 });
    }
    if (buffer.length === 0) throw invalidArgument("cannot register 0 bytes");
    const u = ucx();
    const out = new OutSlots(1);
    check(u.uct_md_mem_reg(memoryDomain.md, u.addressOf(buffer), buffer.length, C.UCT_MD_MEM_ACCESS_ALL, out.address()), "uct_md_mem_reg");
    return new UctMemory(memoryDomain, buffer, out.pointer(), undefined);
  }

  /** Memory allocated by the interface's memory domain (`uct_iface_mem_alloc`), zeroed. */
  static allocate(iface: Owner, length: number): UctMemory {
    if (!Number.isInteger(length) || length <= 0) throw invalidArgument(`allocation length must be a positive integer, got ${length}`);
    const u = ucx();
    const mem = u.struct("uct_allocated_memory_t");
    check(u.uct_iface_mem_alloc(iface.handle, length, C.UCT_MD_MEM_ACCESS_ALL, "ucx-ts uct memory", u.addressOf(mem.bytes)), "uct_iface_mem_alloc");
    if (mem.getNumber("method") !== C.UCT_ALLOC_METHOD_MD || mem.getNumber("memh") === 0) {
      u.uct_iface_mem_free(u.addressOf(mem.bytes));
      throw new UcxError("UCS_ERR_UNSUPPORTED", `memory domain '${iface.memoryDomain.name}' did not allocate the memory itself: it has no remote key for it`, {
        status: -22,
      });
    }
    const bytes = new Uint8Array(u.view(mem.getNumber("address"), length));
    bytes.fill(0);
    return new UctMemory(iface.memoryDomain, bytes, mem.getNumber("memh"), mem.bytes);
  }

  /** Memory a peer can put to, get from and do atomics on, `length` bytes, zeroed. */
  static forRemoteAccess(iface: Owner, length: number): UctMemory {
    const md = iface.memoryDomain;
    if (md.attributes.canRegister) return UctMemory.register(md, new Uint8Array(new ArrayBuffer(length)));
    return UctMemory.allocate(iface, length);
  }

  /** `uct_md_mkey_pack`: the bytes a peer unpacks with `UctRemoteKey.unpack`. */
  packRemoteKey(): Uint8Array {
    this.assertLive();
    const u = ucx();
    const packed = new Uint8Array(Math.max(8, this.memoryDomain.attributes.remoteKeySize));
    check(u.uct_md_mkey_pack(this.memoryDomain.md, this.memh, u.addressOf(packed)), "uct_md_mkey_pack");
    return packed.slice(0, this.memoryDomain.attributes.remoteKeySize);
  }

  private assertLive(): void {
    if (this.released) throw new UcxError("UCX_TS_CLOSED", "UCT memory was released");
  }

  /** Deregister or free. Peers must have stopped using their keys to it. */
  release(): void {
    if (this.released) return;
    this.released = true;
    this.memoryDomain.memories.delete(this);
    const u = ucx();
    if (this.allocation) {
      u.backend.detachView(this.bytes.buffer as ArrayBuffer);
      u.uct_iface_mem_free(u.addressOf(this.allocation));
    } else check(u.uct_md_mem_dereg(this.memoryDomain.md, this.memh), "uct_md_mem_dereg");
  }
}

/** A peer's memory key unpacked here (`uct_rkey_bundle_t`). */
export class UctRemoteKey {
  private released = false;

  private constructor(
    readonly component: UctComponent,
    private readonly bundle: Uint8Array,
    /** The `uct_rkey_t` to pass to put/get/atomics. */
    readonly rkey: number | bigint,
  ) {}

  /** `uct_rkey_unpack` with the component of the memory domain that packed it. */
  static unpack(component: UctComponent, packed: Uint8Array): UctRemoteKey {
    const u = ucx();
    const bundle = u.struct("uct_rkey_bundle_t");
    // Some keys are 0 bytes long (self, tcp, cma): UCT still reads from the pointer.
    const source = packed.length > 0 ? packed : new Uint8Array(8);
    check(u.uct_rkey_unpack(component.handle, u.addressOf(source), u.addressOf(bundle.bytes)), "uct_rkey_unpack");
    return new UctRemoteKey(component, bundle.bytes, bundle.get("rkey"));
  }

  get isReleased(): boolean {
    return this.released;
  }

  /** `uct_rkey_release`. */
  release(): void {
    if (this.released) return;
    this.released = true;
    const u = ucx();
    check(u.uct_rkey_release(this.component.handle, u.addressOf(this.bundle)), "uct_rkey_release");
  }
}
