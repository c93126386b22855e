/**
 * THE table of C struct layouts ucx-ts reads or writes, field by field (offset and type on
 * LP64 Linux), written against UCX 1.13 and checked against the installed headers by
 * `scripts/check-layout.ts`. UCX structs only grow at their end and every one carries a
 * `field_mask`, so these layouts stay valid on newer UCX as long as later fields are unset.
 *
 * A field name with a dot (`sockaddr.addr`) is a member of an embedded struct; the C check
 * uses the same designator with `offsetof`. `count` marks a fixed-size array of `type`.
 */
import type { CType } from "./types.ts";

export interface FieldDef {
  readonly offset: number;
  readonly type: Exclude<CType, "void" | "cstr" | "status"> | "status";
  /** Elements of a fixed array (`char name[32]` is `{ type: "u8", count: 32 }`). */
  readonly count?: number;
}

export interface LayoutDef {
  readonly size: number;
  readonly fields: Readonly<Record<string, FieldDef>>;
}

export const layouts = {
  ucp_params_t: {
    size: 80,
    fields: {
      field_mask: { offset: 0, type: "u64" },
      features: { offset: 8, type: "u64" },
      request_size: { offset: 16, type: "usize" },
      request_init: { offset: 24, type: "ptr" },
      request_cleanup: { offset: 32, type: "ptr" },
      tag_sender_mask: { offset: 40, type: "u64" },
      mt_workers_shared: { offset: 48, type: "i32" },
      estimated_num_eps: { offset: 56, type: "usize" },
      estimated_num_ppn: { offset: 64, type: "usize" },
      name: { offset: 72, type: "ptr" },
    },
  },
  ucp_lib_attr_t: {
    size: 16,
    fields: {
      field_mask: { offset: 0, type: "u64" },
      max_thread_level: { offset: 8, type: "i32" },
    },
  },
  ucp_context_attr_t: {
    size: 64,
    fields: {
      field_mask: { offset: 0, type: "u64" },
      request_size: { offset: 8, type: "usize" },
      thread_mode: { offset: 16, type: "i32" },
      memory_types: { offset: 24, type: "u64" },
      name: { offset: 32, type: "u8", count: 32 },
    },
  },
  ucp_worker_params_t: {
    size: 200,
    fields: {
      field_mask: { offset: 0, type: "u64" },
      thread_mode: { offset: 8, type: "i32" },
      events: { offset: 144, type: "u32" },
      user_data: { offset: 152, type: "ptr" },
      event_fd: { offset: 160, type: "i32" },
      flags: { offset: 168, type: "u64" },
      name: { offset: 176, type: "ptr" },
      am_alignment: { offset: 184, type: "usize" },
      client_id: { offset: 192, type: "u64" },
    },
  },
  ucp_worker_attr_t: {
    size: 80,
    fields: {
      field_mask: { offset: 0, type: "u64" },
      thread_mode: { offset: 8, type: "i32" },
      address_flags: { offset: 12, type: "u32" },
      address: { offset: 16, type: "ptr" },
      address_length: { offset: 24, type: "usize" },
      max_am_header: { offset: 32, type: "usize" },
      name: { offset: 40, type: "u8", count: 32 },
      max_debug_string: { offset: 72, type: "usize" },
    },
  },
  ucp_ep_params_t: {
    size: 104,
    fields: {
      field_mask: { offset: 0, type: "u64" },
      address: { offset: 8, type: "ptr" },
      err_mode: { offset: 16, type: "i32" },
      "err_handler.cb": { offset: 24, type: "ptr" },
      "err_handler.arg": { offset: 32, type: "ptr" },
      user_data: { offset: 40, type: "ptr" },
      flags: { offset: 48, type: "u32" },
      "sockaddr.addr": { offset: 56, type: "ptr" },
      "sockaddr.addrlen": { offset: 64, type: "u32" },
      conn_request: { offset: 72, type: "ptr" },
      name: { offset: 80, type: "ptr" },
      "local_sockaddr.addr": { offset: 88, type: "ptr" },
      "local_sockaddr.addrlen": { offset: 96, type: "u32" },
    },
  },
  ucp_listener_params_t: {
    size: 56,
    fields: {
      field_mask: { offset: 0, type: "u64" },
      "sockaddr.addr": { offset: 8, type: "ptr" },
      "sockaddr.addrlen": { offset: 16, type: "u32" },
      "accept_handler.cb": { offset: 24, type: "ptr" },
      "accept_handler.arg": { offset: 32, type: "ptr" },
      "conn_handler.cb": { offset: 40, type: "ptr" },
      "conn_handler.arg": { offset: 48, type: "ptr" },
    },
  },
  ucp_listener_attr_t: {
    size: 136,
    fields: {
      field_mask: { offset: 0, type: "u64" },
      sockaddr: { offset: 8, type: "u8", count: 128 },
    },
  },
  ucp_conn_request_attr_t: {
    size: 144,
    fields: {
      field_mask: { offset: 0, type: "u64" },
      client_address: { offset: 8, type: "u8", count: 128 },
      client_id: { offset: 136, type: "u64" },
    },
  },
  ucp_ep_attr_t: {
    size: 296,
    fields: {
      field_mask: { offset: 0, type: "u64" },
      name: { offset: 8, type: "u8", count: 32 },
      local_sockaddr: { offset: 40, type: "u8", count: 128 },
      remote_sockaddr: { offset: 168, type: "u8", count: 128 },
    },
  },
  ucp_tag_recv_info_t: {
    size: 16,
    fields: {
      sender_tag: { offset: 0, type: "u64" },
      length: { offset: 8, type: "usize" },
    },
  },
  ucp_request_param_t: {
    size: 72,
    fields: {
      op_attr_mask: { offset: 0, type: "u32" },
      flags: { offset: 4, type: "u32" },
      request: { offset: 8, type: "ptr" },
      cb: { offset: 16, type: "ptr" },
      datatype: { offset: 24, type: "u64" },
      user_data: { offset: 32, type: "ptr" },
      reply_buffer: { offset: 40, type: "ptr" },
      memory_type: { offset: 48, type: "i32" },
      recv_info: { offset: 56, type: "ptr" },
      memh: { offset: 64, type: "ptr" },
    },
  },
  ucp_mem_map_params_t: {
    size: 40,
    fields: {
      field_mask: { offset: 0, type: "u64" },
      address: { offset: 8, type: "ptr" },
      length: { offset: 16, type: "usize" },
      flags: { offset: 24, type: "u32" },
      prot: { offset: 28, type: "u32" },
      memory_type: { offset: 32, type: "i32" },
    },
  },
  ucp_mem_attr_t: {
    size: 32,
    fields: {
      field_mask: { offset: 0, type: "u64" },
      address: { offset: 8, type: "ptr" },
      length: { offset: 16, type: "usize" },
      mem_type: { offset: 24, type: "i32" },
    },
  },
  ucp_am_handler_param_t: {
    size: 32,
    fields: {
      field_mask: { offset: 0, type: "u64" },
      id: { offset: 8, type: "u32" },
      flags: { offset: 12, type: "u32" },
      cb: { offset: 16, type: "ptr" },
      arg: { offset: 24, type: "ptr" },
    },
  },
  ucp_am_recv_param_t: {
    size: 16,
    fields: {
      recv_attr: { offset: 0, type: "u64" },
      reply_ep: { offset: 8, type: "ptr" },
    },
  },
  uct_component_attr_t: {
    size: 48,
    fields: {
      field_mask: { offset: 0, type: "u64" },
      name: { offset: 8, type: "u8", count: 16 },
      md_resource_count: { offset: 24, type: "u32" },
      md_resources: { offset: 32, type: "ptr" },
      flags: { offset: 40, type: "u64" },
    },
  },
  uct_md_resource_desc_t: {
    size: 16,
    fields: {
      md_name: { offset: 0, type: "u8", count: 16 },
    },
  },
  uct_tl_resource_desc_t: {
    size: 52,
    fields: {
      tl_name: { offset: 0, type: "u8", count: 10 },
      dev_name: { offset: 10, type: "u8", count: 32 },
      dev_type: { offset: 44, type: "i32" },
      sys_device: { offset: 48, type: "u8" },
    },
  },
  // --- libuct (src/core/uct) -------------------------------------------------------------
  uct_md_attr_t: {
    size: 224,
    fields: {
      "cap.max_alloc": { offset: 0, type: "u64" },
      "cap.max_reg": { offset: 8, type: "usize" },
      "cap.flags": { offset: 16, type: "u64" },
      "cap.reg_mem_types": { offset: 24, type: "u64" },
      "cap.access_mem_types": { offset: 48, type: "u64" },
      component_name: { offset: 72, type: "u8", count: 16 },
      rkey_packed_size: { offset: 88, type: "usize" },
    },
  },
  uct_iface_params_t: {
    size: 304,
    fields: {
      field_mask: { offset: 0, type: "u64" },
      open_mode: { offset: 136, type: "u64" },
      "mode.device.tl_name": { offset: 144, type: "ptr" },
      "mode.device.dev_name": { offset: 152, type: "ptr" },
      stats_root: { offset: 184, type: "ptr" },
      rx_headroom: { offset: 192, type: "usize" },
      err_handler_arg: { offset: 200, type: "ptr" },
      err_handler: { offset: 208, type: "ptr" },
      err_handler_flags: { offset: 216, type: "u32" },
    },
  },
  uct_iface_attr_t: {
    size: 536,
    fields: {
      "cap.put.max_short": { offset: 0, type: "usize" },
      "cap.put.max_bcopy": { offset: 8, type: "usize" },
      "cap.put.min_zcopy": { offset: 16, type: "usize" },
      "cap.put.max_zcopy": { offset: 24, type: "usize" },
      "cap.put.max_iov": { offset: 48, type: "usize" },
      "cap.get.max_short": { offset: 56, type: "usize" },
      "cap.get.max_bcopy": { offset: 64, type: "usize" },
      "cap.get.min_zcopy": { offset: 72, type: "usize" },
      "cap.get.max_zcopy": { offset: 80, type: "usize" },
      "cap.get.max_iov": { offset: 104, type: "usize" },
      "cap.am.max_short": { offset: 112, type: "usize" },
      "cap.am.max_bcopy": { offset: 120, type: "usize" },
      "cap.am.min_zcopy": { offset: 128, type: "usize" },
      "cap.am.max_zcopy": { offset: 136, type: "usize" },
      "cap.am.max_hdr": { offset: 160, type: "usize" },
      "cap.am.max_iov": { offset: 168, type: "usize" },
      "cap.atomic32.op_flags": { offset: 264, type: "u64" },
      "cap.atomic32.fop_flags": { offset: 272, type: "u64" },
      "cap.atomic64.op_flags": { offset: 280, type: "u64" },
      "cap.atomic64.fop_flags": { offset: 288, type: "u64" },
      "cap.flags": { offset: 296, type: "u64" },
      "cap.event_flags": { offset: 304, type: "u64" },
      device_addr_len: { offset: 312, type: "usize" },
      iface_addr_len: { offset: 320, type: "usize" },
      ep_addr_len: { offset: 328, type: "usize" },
      max_conn_priv: { offset: 336, type: "usize" },
      overhead: { offset: 472, type: "f64" },
      "bandwidth.dedicated": { offset: 480, type: "f64" },
      "bandwidth.shared": { offset: 488, type: "f64" },
      "latency.c": { offset: 496, type: "f64" },
      "latency.m": { offset: 504, type: "f64" },
      priority: { offset: 512, type: "u8" },
      max_num_eps: { offset: 520, type: "usize" },
      dev_num_paths: { offset: 528, type: "u32" },
    },
  },
  uct_ep_params_t: {
    size: 144,
    fields: {
      field_mask: { offset: 0, type: "u64" },
      iface: { offset: 8, type: "ptr" },
      user_data: { offset: 16, type: "ptr" },
      dev_addr: { offset: 24, type: "ptr" },
      iface_addr: { offset: 32, type: "ptr" },
      path_index: { offset: 104, type: "u32" },
    },
  },
  uct_iov_t: {
    size: 40,
    fields: {
      buffer: { offset: 0, type: "ptr" },
      length: { offset: 8, type: "usize" },
      memh: { offset: 16, type: "ptr" },
      stride: { offset: 24, type: "usize" },
      count: { offset: 32, type: "u32" },
    },
  },
  uct_completion_t: {
    size: 16,
    fields: {
      func: { offset: 0, type: "ptr" },
      count: { offset: 8, type: "i32" },
      status: { offset: 12, type: "status" },
    },
  },
  uct_pending_req_t: {
    size: 48,
    fields: {
      func: { offset: 0, type: "ptr" },
      priv: { offset: 8, type: "u8", count: 40 },
    },
  },
  uct_rkey_bundle_t: {
    size: 24,
    fields: {
      rkey: { offset: 0, type: "i64" },
      handle: { offset: 8, type: "ptr" },
      type: { offset: 16, type: "ptr" },
    },
  },
  uct_allocated_memory_t: {
    size: 40,
    fields: {
      address: { offset: 0, type: "ptr" },
      length: { offset: 8, type: "usize" },
      method: { offset: 16, type: "i32" },
      mem_type: { offset: 20, type: "i32" },
      md: { offset: 24, type: "ptr" },
      memh: { offset: 32, type: "ptr" },
    },
  },
  /** Only its ops table: the inline data-path calls of uct.h jump through it (uct-ops.ts). */
  uct_iface_t: {
    size: 400,
    fields: {
      "ops.ep_put_short": { offset: 0, type: "ptr" },
      "ops.ep_put_bcopy": { offset: 8, type: "ptr" },
      "ops.ep_put_zcopy": { offset: 16, type: "ptr" },
      "ops.ep_get_short": { offset: 24, type: "ptr" },
      "ops.ep_get_bcopy": { offset: 32, type: "ptr" },
      "ops.ep_get_zcopy": { offset: 40, type: "ptr" },
      "ops.ep_am_short": { offset: 48, type: "ptr" },
      "ops.ep_am_bcopy": { offset: 64, type: "ptr" },
      "ops.ep_am_zcopy": { offset: 72, type: "ptr" },
      "ops.ep_atomic_cswap64": { offset: 80, type: "ptr" },
      "ops.ep_atomic_cswap32": { offset: 88, type: "ptr" },
      "ops.ep_atomic32_post": { offset: 96, type: "ptr" },
      "ops.ep_atomic64_post": { offset: 104, type: "ptr" },
      "ops.ep_atomic32_fetch": { offset: 112, type: "ptr" },
      "ops.ep_atomic64_fetch": { offset: 120, type: "ptr" },
      "ops.ep_pending_add": { offset: 192, type: "ptr" },
      "ops.ep_pending_purge": { offset: 200, type: "ptr" },
      "ops.ep_flush": { offset: 208, type: "ptr" },
      "ops.ep_fence": { offset: 216, type: "ptr" },
      "ops.iface_flush": { offset: 304, type: "ptr" },
      "ops.iface_fence": { offset: 312, type: "ptr" },
      "ops.iface_progress_enable": { offset: 320, type: "ptr" },
      "ops.iface_progress_disable": { offset: 328, type: "ptr" },
      "ops.iface_progress": { offset: 336, type: "ptr" },
    },
  },
  uct_ep_t: {
    size: 8,
    fields: {
      iface: { offset: 0, type: "ptr" },
    },
  },
  /** `uct_worker_progress` is `ucs_callbackq_dispatch(&worker->progress_q)`, an inline. */
  uct_worker_t: {
    size: 264,
    fields: {
      "progress_q.fast_elems": { offset: 0, type: "u8", count: 192 },
    },
  },
  ucs_callbackq_elem_t: {
    size: 24,
    fields: {
      cb: { offset: 0, type: "ptr" },
      arg: { offset: 8, type: "ptr" },
    },
  },
} as const satisfies Record<string, LayoutDef>;

export type LayoutName = keyof typeof layouts;

/**
 * Layouts a later UCX changed in place. The API structs above only grow at their end behind a
 * `field_mask`, but `uct_worker_t`'s callback queue is an internal of uct.h's inline data path
 * (ucx-ts runs `ucs_callbackq_dispatch` itself, src/core/uct/worker.ts) with no such promise:
 * UCX 1.16 dropped `flags` and `id` from `ucs_callbackq_elem_t` (24 -> 16 bytes). Reading 1.16's
 * queue with 1.13's stride took an `arg` for a callback and crashed. Each entry replaces whole
 * layouts from its version on; `layoutsFor` picks by the version of the library loaded.
 * Checked against each version's headers by `scripts/check-layout.ts` (UCX_TS_INCLUDEDIR).
 */
export const layoutChanges: readonly { readonly since: readonly [major: number, minor: number]; readonly layouts: Partial<Record<LayoutName, LayoutDef>> }[] = [
  {
    since: [1, 16],
    layouts: {
      uct_worker_t: {
        size: 136,
        fields: {
          "progress_q.fast_elems": { offset: 0, type: "u8", count: 128 },
        },
      },
      ucs_callbackq_elem_t: {
        size: 16,
        fields: {
          cb: { offset: 0, type: "ptr" },
          arg: { offset: 8, type: "ptr" },
        },
      },
    },
  },
];

/** The layout table for UCX `major.minor`: the one above with every change up to that version applied. */
export function layoutsFor(major: number, minor: number): Readonly<Record<LayoutName, LayoutDef>> {
  const table: Record<string, LayoutDef> = { ...layouts };
  for (const change of layoutChanges) {
    const [m, n] = change.since;
    if (major > m || (major === m && minor >= n)) Object.assign(table, change.layouts);
  }
  return table as Record<LayoutName, LayoutDef>;
}
