/**
 * The transports and devices UCX can use on this host, found the way `ucx_info -d` finds them:
 * every UCT component, its memory domains, and each memory domain's transport resources.
 */
import { DEVICE_TYPE_NAMES, Struct, UCX_CONSTANTS as C, type Pointer } from "../ffi/index.ts";
import { check, ucx } from "./library.ts";
import { OutSlots } from "./out-slots.ts";

export interface TransportResource {
  /** UCT component, e.g. `tcp`, `sysv`, `ib`. */
  readonly component: string;
  /** Memory domain the transport belongs to. */
  readonly memoryDomain: string;
  /** Transport name, e.g. `tcp`, `rc_mlx5`, `cuda_copy`. */
  readonly transport: string;
  /** Device name, e.g. `lo`, `eth0`, `mlx5_0:1`, `memory`. */
  readonly device: string;
  /** `network`, `intra-node`, `accelerator` or `loopback`, as `ucx_info -d` says. */
  readonly deviceType: string;
}

export function listTransportResources(): TransportResource[] {
  const u = ucx();
  const out = new OutSlots(2);
  check(u.uct_query_components(out.address(0), out.address(1)), "uct_query_components");
  const components = out.pointer(0);
  const componentCount = out.u32(1);
  const found: TransportResource[] = [];
  try {
    const handles = new BigUint64Array(u.view(components, componentCount * 8).slice(0));
    for (const h of handles) found.push(...componentResources(Number(h)));
  } finally {
    u.uct_release_component_list(components);
  }
  return found;
}

function componentResources(component: Pointer): TransportResource[] {
  const u = ucx();
  const attr = u.struct("uct_component_attr_t");
  attr.set("field_mask", C.UCT_COMPONENT_ATTR_FIELD_NAME | C.UCT_COMPONENT_ATTR_FIELD_MD_RESOURCE_COUNT);
  check(u.uct_component_query(component, u.addressOf(attr.bytes)), "uct_component_query");
  const componentName = attr.getString("name");
  const mdCount = attr.getNumber("md_resource_count");
  if (mdCount === 0) return [];

  const mdLayout = u.layouts.uct_md_resource_desc_t;
  const mdSize = mdLayout.size;
  const mdResources = new Uint8Array(mdCount * mdSize);
  attr.set("field_mask", C.UCT_COMPONENT_ATTR_FIELD_MD_RESOURCES);
  attr.set("md_resources", u.addressOf(mdResources));
  check(u.uct_component_query(component, u.addressOf(attr.bytes)), "uct_component_query");

  const found: TransportResource[] = [];
  for (let i = 0; i < mdCount; i++) {
    const md = new Struct("uct_md_resource_desc_t", mdResources.buffer, i * mdSize, mdLayout).getString("md_name");
    found.push(...memoryDomainResources(component, componentName, md));
  }
  return found;
}

function memoryDomainResources(component: Pointer, componentName: string, mdName: string): TransportResource[] {
  const u = ucx();
  const out = new OutSlots(2);
  check(u.uct_md_config_read(component, null, null, out.address()), `uct_md_config_read(${mdName})`);
  const config = out.pointer();
  let md: Pointer;
  try {
    // A memory domain that cannot open here (no device, no driver) has no usable transports.
    if (u.uct_md_open(component, mdName, config, out.address()) !== 0) return [];
    md = out.pointer();
  } finally {
    u.uct_config_release(config);
  }
  try {
    check(u.uct_md_query_tl_resources(md, out.address(0), out.address(1)), `uct_md_query_tl_resources(${mdName})`);
    const list = out.pointer(0);
    const count = out.u32(1);
    try {
      const found: TransportResource[] = [];
      for (let i = 0; i < count; i++) {
        const r = u.structAt("uct_tl_resource_desc_t", list, i);
        found.push({
          component: componentName,
          memoryDomain: mdName,
          transport: r.getString("tl_name"),
          device: r.getString("dev_name"),
          deviceType: DEVICE_TYPE_NAMES[r.getNumber("dev_type")] ?? `type ${r.getNumber("dev_type")}`,
        });
      }
      return found;
    } finally {
      if (list !== 0) u.uct_release_tl_resource_list(list);
    }
  } finally {
    u.uct_md_close(md);
  }
}
