/**
 * UCT's data path as a table. In uct.h, `uct_ep_am_short`, `uct_ep_put_zcopy`,
 * `uct_iface_flush`, `uct_worker_progress` and the rest are static inline functions that jump
 * through the interface's ops table (`ep->iface->ops.ep_am_short(...)`): libuct exports no symbol
 * for them, so they cannot go in `symbols.ts`. This table gives, for each op, the field of
 * `uct_iface_t` holding its function pointer (checked by `scripts/check-layout.ts` through the
 * `uct_iface_t` layout) and its C signature; `src/core/uct` reads the pointer once per interface
 * and binds it with `Ucx.functionAt`.
 *
 * Conventions as in `symbols.ts`, plus:
 * - `uct_rkey_t` (uintptr_t) is declared i64: the posix/sysv rkeys are an address difference
 *   that may be "negative", and as a signed 64-bit value it stays a safe Number.
 * - `ssize_t` results (bcopy) are i64: a length, or a negative `ucs_status_t`.
 */
import type { CallbackDef } from "./backend.ts";
import type { layouts } from "./layouts.ts";

export interface UctOpDef extends CallbackDef {
  /** Field of the `uct_iface_t` layout holding the function pointer. */
  readonly field: keyof (typeof layouts)["uct_iface_t"]["fields"];
}

export const uctOps = {
  // (ep, buffer, unsigned length, uint64_t remote_addr, uct_rkey_t rkey)
  ep_put_short: { field: "ops.ep_put_short", args: ["ptr", "ptr", "u32", "u64", "i64"], result: "status" },
  // (ep, pack_cb, arg, remote_addr, rkey) -> ssize_t
  ep_put_bcopy: { field: "ops.ep_put_bcopy", args: ["ptr", "ptr", "ptr", "u64", "i64"], result: "i64" },
  // (ep, const uct_iov_t *iov, size_t iovcnt, remote_addr, rkey, uct_completion_t *comp)
  ep_put_zcopy: { field: "ops.ep_put_zcopy", args: ["ptr", "ptr", "usize", "u64", "i64", "ptr"], result: "status" },
  // (ep, void *buffer, unsigned length, remote_addr, rkey)
  ep_get_short: { field: "ops.ep_get_short", args: ["ptr", "ptr", "u32", "u64", "i64"], result: "status" },
  // (ep, unpack_cb, arg, size_t length, remote_addr, rkey, comp)
  ep_get_bcopy: { field: "ops.ep_get_bcopy", args: ["ptr", "ptr", "ptr", "usize", "u64", "i64", "ptr"], result: "status" },
  // (ep, iov, iovcnt, remote_addr, rkey, comp)
  ep_get_zcopy: { field: "ops.ep_get_zcopy", args: ["ptr", "ptr", "usize", "u64", "i64", "ptr"], result: "status" },
  // (ep, uint8_t id, uint64_t header, const void *payload, unsigned length)
  ep_am_short: { field: "ops.ep_am_short", args: ["ptr", "u8", "u64", "ptr", "u32"], result: "status" },
  // (ep, uint8_t id, pack_cb, arg, unsigned flags) -> ssize_t
  ep_am_bcopy: { field: "ops.ep_am_bcopy", args: ["ptr", "u8", "ptr", "ptr", "u32"], result: "i64" },
  // (ep, uint8_t id, const void *header, unsigned header_length, iov, iovcnt, unsigned flags, comp)
  ep_am_zcopy: { field: "ops.ep_am_zcopy", args: ["ptr", "u8", "ptr", "u32", "ptr", "usize", "u32", "ptr"], result: "status" },
  // (ep, uint64_t compare, uint64_t swap, remote_addr, rkey, uint64_t *result, comp)
  ep_atomic_cswap64: { field: "ops.ep_atomic_cswap64", args: ["ptr", "u64", "u64", "u64", "i64", "ptr", "ptr"], result: "status" },
  // (ep, uint32_t compare, uint32_t swap, remote_addr, rkey, uint32_t *result, comp)
  ep_atomic_cswap32: { field: "ops.ep_atomic_cswap32", args: ["ptr", "u32", "u32", "u64", "i64", "ptr", "ptr"], result: "status" },
  // (ep, uct_atomic_op_t opcode, uint32_t value, remote_addr, rkey)
  ep_atomic32_post: { field: "ops.ep_atomic32_post", args: ["ptr", "u32", "u32", "u64", "i64"], result: "status" },
  // (ep, opcode, uint64_t value, remote_addr, rkey)
  ep_atomic64_post: { field: "ops.ep_atomic64_post", args: ["ptr", "u32", "u64", "u64", "i64"], result: "status" },
  // (ep, opcode, uint32_t value, uint32_t *result, remote_addr, rkey, comp)
  ep_atomic32_fetch: { field: "ops.ep_atomic32_fetch", args: ["ptr", "u32", "u32", "ptr", "u64", "i64", "ptr"], result: "status" },
  // (ep, opcode, uint64_t value, uint64_t *result, remote_addr, rkey, comp)
  ep_atomic64_fetch: { field: "ops.ep_atomic64_fetch", args: ["ptr", "u32", "u64", "ptr", "u64", "i64", "ptr"], result: "status" },
  // (ep, uct_pending_req_t *req, unsigned flags)
  ep_pending_add: { field: "ops.ep_pending_add", args: ["ptr", "ptr", "u32"], result: "status" },
  // (ep, uct_pending_purge_callback_t cb, void *arg)
  ep_pending_purge: { field: "ops.ep_pending_purge", args: ["ptr", "ptr", "ptr"], result: "void" },
  // (ep, unsigned flags, comp)
  ep_flush: { field: "ops.ep_flush", args: ["ptr", "u32", "ptr"], result: "status" },
  // (ep, unsigned flags)
  ep_fence: { field: "ops.ep_fence", args: ["ptr", "u32"], result: "status" },
  // (iface, unsigned flags, comp)
  iface_flush: { field: "ops.iface_flush", args: ["ptr", "u32", "ptr"], result: "status" },
  // (iface, unsigned flags)
  iface_fence: { field: "ops.iface_fence", args: ["ptr", "u32"], result: "status" },
  // (iface, unsigned flags)
  iface_progress_enable: { field: "ops.iface_progress_enable", args: ["ptr", "u32"], result: "void" },
  iface_progress_disable: { field: "ops.iface_progress_disable", args: ["ptr", "u32"], result: "void" },
  // (iface) -> unsigned
  iface_progress: { field: "ops.iface_progress", args: ["ptr"], result: "u32" },
} as const satisfies Record<string, UctOpDef>;

export type UctOpName = keyof typeof uctOps;

/**
 * Function pointers UCT keeps outside the ops table, called the way uct.h's inlines call them.
 * - a worker's progress queue entry: `unsigned (*ucs_callback_t)(void *arg)`
 *   (`uct_worker_progress` = `ucs_callbackq_dispatch` over `progress_q.fast_elems`);
 * - a receive descriptor's release: `void (*uct_desc_release_callback_t)(uct_recv_desc_t *self,
 *   void *desc)` (`uct_iface_release_desc` reads `uct_recv_desc_t *` just before the data).
 */
export const uctInlineCalls = {
  ucs_callback_t: { args: ["ptr"], result: "u32" },
  uct_desc_release_callback_t: { args: ["ptr", "ptr"], result: "void" },
} as const satisfies Record<string, CallbackDef>;
