/**
 * UCT components (`uct_query_components`): the transport families built into libuct (self, tcp,
 * sysv, posix, cma, ib...), each with the memory domains it can open. A component handle is
 * static in libuct and stays valid for the life of the process.
 */
import { Struct, UCX_CONSTANTS as C, type Pointer } from "../../ffi/index.ts";
import { invalidArgument } from "../errors.ts";
import { check, ucx } from "../library.ts";
import { OutSlots } from "../out-slots.ts";
import { UctMemoryDomain } from "./memory-domain.ts";

export class UctComponent {
  private constructor(
    /** The `uct_component_h`. */
    readonly handle: Pointer,
    readonly name: string,
    /** Names of the memory domains this component offers (`uct_component_attr_t.md_resources`). */
    readonly memoryDomainNames: readonly string[],
  ) {}

  /** Every component libuct has, in its order. */
  static list(): UctComponent[] {
    const u = ucx();
    const out = new OutSlots(2);
    check(u.uct_query_components(out.address(0), out.address(1)), "uct_query_components");
    const list = out.pointer(0);
    const count = out.u32(1);
    try {
      const handles = new BigUint64Array(u.view(list, count * 8).slice(0));
      return [...handles].map((h) => UctComponent.query(Number(h)));
    } finally {
      u.uct_release_component_list(list);
    }
  }

  /** The component named `name` (`tcp`, `posix`...); throws UCX_TS_INVALID_ARGUMENT when none is. */
  static find(name: string): UctComponent {
    const all = UctComponent.list();
    const c = all.find((x) => x.name === name);
    if (!c) throw invalidArgument(`no UCT component '${name}' (have: ${all.map((x) => x.name).join(", ")})`);
    return c;
  }

  private static query(handle: Pointer): UctComponent {
    const u = ucx();
    const attr = u.struct("uct_component_attr_t");
    attr.set("field_mask", C.UCT_COMPONENT_ATTR_FIELD_NAME | C.UCT_COMPONENT_ATTR_FIELD_MD_RESOURCE_COUNT);
    check(u.uct_component_query(handle, u.addressOf(attr.bytes)), "uct_component_query");
    const name = attr.getString("name");
    const mdCount = attr.getNumber("md_resource_count");
    const mdLayout = u.layouts.uct_md_resource_desc_t;
    const mdSize = mdLayout.size;
    const resources = new Uint8Array(Math.max(1, mdCount) * mdSize);
    attr.set("field_mask", C.UCT_COMPONENT_ATTR_FIELD_MD_RESOURCES);
    attr.set("md_resources", u.addressOf(resources));
    if (mdCount > 0) check(u.uct_component_query(handle, u.addressOf(attr.bytes)), "uct_component_query");
    const names: string[] = [];
    for (let i = 0; i < mdCount; i++) names.push(new Struct("uct_md_resource_desc_t", resources.buffer, i * mdSize, mdLayout).getString("md_name"));
    return new UctComponent(handle, name, names);
  }

  /** Open one of this component's memory domains (`uct_md_config_read` + `uct_md_open`). */
  openMemoryDomain(name: string = this.memoryDomainNames[0] ?? this.name): UctMemoryDomain {
    if (!this.memoryDomainNames.includes(name)) {
      throw invalidArgument(`component '${this.name}' has no memory domain '${name}' (have: ${this.memoryDomainNames.join(", ")})`);
    }
    return UctMemoryDomain.open(this, name);
  }
}
