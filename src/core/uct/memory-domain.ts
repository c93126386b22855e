/**
 * A UCT memory domain (`uct_md_h`): opened from a component, it lists its transport resources
 * (`uct_md_query_tl_resources`), registers memory and packs remote keys. Interfaces are opened
 * on a memory domain, and the remote side unpacks keys with the same component.
 */
import { DEVICE_TYPE_NAMES, UCX_CONSTANTS as C, type Pointer } from "../../ffi/index.ts";
import { UcxError } from "../errors.ts";
import { check, ucx } from "../library.ts";
import { OutSlots } from "../out-slots.ts";

/** The component a memory domain belongs to (component.ts's UctComponent; declared here, below it). */
export interface UctComponentRef {
  /** The `uct_component_h`. */
  readonly handle: Pointer;
  readonly name: string;
}

/** One transport on one device, as `uct_md_query_tl_resources` lists it. */
export interface UctTransportResource {
  readonly transport: string;
  readonly device: string;
  /** `network`, `intra-node`, `accelerator` or `loopback` (as `ucx_info -d` says). */
  readonly deviceType: string;
}

export interface UctMemoryDomainAttributes {
  readonly componentName: string;
  /** `uct_md_attr_t.cap.flags`: `alloc`, `reg`, `need_memh`, `need_rkey`. */
  readonly capabilities: readonly string[];
  readonly canAllocate: boolean;
  readonly canRegister: boolean;
  readonly maxAlloc: number;
  readonly maxRegister: number;
  /** Bytes of a packed remote key (`uct_md_mkey_pack` output). */
  readonly remoteKeySize: number;
}

export class UctMemoryDomain {
  private closed = false;
  readonly attributes: UctMemoryDomainAttributes;
  /** Memory registered or allocated in this domain and not yet released: released by close(). */
  readonly memories: Set<{ release(): void }> = new Set();

  private constructor(
    readonly component: UctComponentRef,
    readonly name: string,
    /** The `uct_md_h`. */
    readonly handle: Pointer,
  ) {
    this.attributes = this.query();
  }

  static open(component: UctComponentRef, name: string): UctMemoryDomain {
    const u = ucx();
    const out = new OutSlots(1);
    check(u.uct_md_config_read(component.handle, null, null, out.address()), `uct_md_config_read(${name})`);
    const config = out.pointer();
    try {
      check(u.uct_md_open(component.handle, name, config, out.address()), `uct_md_open(${name})`);
    } finally {
      u.uct_config_release(config);
    }
    return new UctMemoryDomain(component, name, out.pointer());
  }

  /** The `uct_md_h`, or a UCX_TS_CLOSED error once closed. */
  get md(): Pointer {
    if (this.closed) throw new UcxError("UCX_TS_CLOSED", `memory domain '${this.name}' is closed`);
    return this.handle;
  }

  private query(): UctMemoryDomainAttributes {
    const u = ucx();
    const attr = u.struct("uct_md_attr_t");
    check(u.uct_md_query(this.handle, u.addressOf(attr.bytes)), `uct_md_query(${this.name})`);
    const flags = Number(attr.get("cap.flags"));
    const size = (f: string) => {
      const v = BigInt(attr.get(f));
      return v >= 2n ** 53n ? Infinity : Number(v);
    };
    const names: Array<[string, number]> = [
      ["alloc", C.UCT_MD_FLAG_ALLOC],
      ["reg", C.UCT_MD_FLAG_REG],
      ["need_memh", C.UCT_MD_FLAG_NEED_MEMH],
      ["need_rkey", C.UCT_MD_FLAG_NEED_RKEY],
    ];
    return {
      componentName: attr.getString("component_name"),
      capabilities: names.filter(([, b]) => (flags & b) !== 0).map(([n]) => n),
      canAllocate: (flags & C.UCT_MD_FLAG_ALLOC) !== 0,
      canRegister: (flags & C.UCT_MD_FLAG_REG) !== 0,
      maxAlloc: size("cap.max_alloc"),
      maxRegister: size("cap.max_reg"),
      remoteKeySize: attr.getNumber("rkey_packed_size"),
    };
  }

  /** The transports and devices of this memory domain. */
  transportResources(): UctTransportResource[] {
    const u = ucx();
    const out = new OutSlots(2);
    check(u.uct_md_query_tl_resources(this.md, out.address(0), out.address(1)), `uct_md_query_tl_resources(${this.name})`);
    const list = out.pointer(0);
    const count = out.u32(1);
    try {
      const found: UctTransportResource[] = [];
      for (let i = 0; i < count; i++) {
        const r = u.structAt("uct_tl_resource_desc_t", list, i);
        const type = r.getNumber("dev_type");
        found.push({ transport: r.getString("tl_name"), device: r.getString("dev_name"), deviceType: DEVICE_TYPE_NAMES[type] ?? `type ${type}` });
      }
      return found;
    } finally {
      if (list !== 0) u.uct_release_tl_resource_list(list);
    }
  }

  /** Releases the memory still registered here, then `uct_md_close`. Close the interfaces first. */
  close(): void {
    if (this.closed) return;
    for (const m of [...this.memories]) m.release();
    this.closed = true;
    ucx().uct_md_close(this.handle);
  }
}
