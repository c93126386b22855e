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
} as const satisfies Record<string, LayoutDef>;

export type LayoutName = keyof typeof layouts;
