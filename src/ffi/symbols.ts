/**
 * THE table of C functions ucx-ts calls. One line per function: which library exports it, its
 * argument types and its result type, in the vocabulary of `types.ts`. The three backends
 * (koffi, Deno, Bun) are generated from this table and nothing else, and the dev-time check
 * (`scripts/check-layout.ts`) links a C program against every symbol listed here.
 *
 * Conventions:
 * - `ucs_status_t` results are `status` (one signed byte on UCX's ABI, ffi-facts.md).
 * - `ucs_status_ptr_t` results are `ptr`: a request pointer, NULL, or a status in -1..-100
 *   (see `UCS_PTR_IS_ERR` in `constants.ts`).
 * - Out-parameters (`ucp_context_h *`, `size_t *`, ...) are `ptr` to scratch memory.
 * - `ucp_init` is a static inline in ucp.h; the exported symbol is `ucp_init_version`.
 */
import type { CType } from "./types.ts";

/** Which shared library a symbol lives in. */
export type LibraryName = "ucs" | "ucp" | "uct" | "c" | "cudart";

export interface SymbolDef {
  readonly lib: LibraryName;
  readonly args: readonly CType[];
  readonly result: CType;
}

export const symbols = {
  // --- libucs: status strings and memory-type names -------------------------------------
  ucs_status_string: { lib: "ucs", args: ["status"], result: "ptr" },

  // --- libucp: library and context ------------------------------------------------------
  ucp_get_version: { lib: "ucp", args: ["ptr", "ptr", "ptr"], result: "void" },
  ucp_get_version_string: { lib: "ucp", args: [], result: "ptr" },
  ucp_lib_query: { lib: "ucp", args: ["ptr"], result: "status" },
  ucp_config_read: { lib: "ucp", args: ["cstr", "cstr", "ptr"], result: "status" },
  ucp_config_modify: { lib: "ucp", args: ["ptr", "cstr", "cstr"], result: "status" },
  ucp_config_release: { lib: "ucp", args: ["ptr"], result: "void" },
  ucp_init_version: { lib: "ucp", args: ["u32", "u32", "ptr", "ptr", "ptr"], result: "status" },
  ucp_cleanup: { lib: "ucp", args: ["ptr"], result: "void" },
  ucp_context_query: { lib: "ucp", args: ["ptr", "ptr"], result: "status" },
  ucp_context_print_info: { lib: "ucp", args: ["ptr", "ptr"], result: "void" },

  // --- libucp: worker -------------------------------------------------------------------
  ucp_worker_create: { lib: "ucp", args: ["ptr", "ptr", "ptr"], result: "status" },
  ucp_worker_destroy: { lib: "ucp", args: ["ptr"], result: "void" },
  ucp_worker_query: { lib: "ucp", args: ["ptr", "ptr"], result: "status" },
  ucp_worker_print_info: { lib: "ucp", args: ["ptr", "ptr"], result: "void" },
  ucp_worker_progress: { lib: "ucp", args: ["ptr"], result: "u32" },
  ucp_worker_get_efd: { lib: "ucp", args: ["ptr", "ptr"], result: "status" },
  ucp_worker_arm: { lib: "ucp", args: ["ptr"], result: "status" },
  ucp_worker_wait: { lib: "ucp", args: ["ptr"], result: "status" },
  ucp_worker_signal: { lib: "ucp", args: ["ptr"], result: "status" },
  ucp_worker_get_address: { lib: "ucp", args: ["ptr", "ptr", "ptr"], result: "status" },
  ucp_worker_release_address: { lib: "ucp", args: ["ptr", "ptr"], result: "void" },
  ucp_worker_flush_nbx: { lib: "ucp", args: ["ptr", "ptr"], result: "ptr" },

  // --- libucp: endpoints and listeners --------------------------------------------------
  ucp_ep_create: { lib: "ucp", args: ["ptr", "ptr", "ptr"], result: "status" },
  ucp_ep_close_nbx: { lib: "ucp", args: ["ptr", "ptr"], result: "ptr" },
  ucp_ep_flush_nbx: { lib: "ucp", args: ["ptr", "ptr"], result: "ptr" },
  ucp_ep_print_info: { lib: "ucp", args: ["ptr", "ptr"], result: "void" },
  ucp_listener_create: { lib: "ucp", args: ["ptr", "ptr", "ptr"], result: "status" },
  ucp_listener_destroy: { lib: "ucp", args: ["ptr"], result: "void" },
  ucp_listener_query: { lib: "ucp", args: ["ptr", "ptr"], result: "status" },
  ucp_listener_reject: { lib: "ucp", args: ["ptr", "ptr"], result: "status" },
  ucp_conn_request_query: { lib: "ucp", args: ["ptr", "ptr"], result: "status" },

  // --- libucp: tag and stream transfers, requests ---------------------------------------
  // The tag and tag mask are declared i64 so that a full mask can be passed as -1 without a
  // BigInt (ffi-facts.md); the bits are the same as the u64 UCX expects.
  ucp_tag_send_nbx: { lib: "ucp", args: ["ptr", "ptr", "usize", "i64", "ptr"], result: "ptr" },
  ucp_tag_recv_nbx: { lib: "ucp", args: ["ptr", "ptr", "usize", "i64", "i64", "ptr"], result: "ptr" },
  ucp_tag_probe_nb: { lib: "ucp", args: ["ptr", "i64", "i64", "i32", "ptr"], result: "ptr" },
  ucp_tag_msg_recv_nbx: { lib: "ucp", args: ["ptr", "ptr", "usize", "ptr", "ptr"], result: "ptr" },
  ucp_tag_recv_request_test: { lib: "ucp", args: ["ptr", "ptr"], result: "status" },
  ucp_stream_send_nbx: { lib: "ucp", args: ["ptr", "ptr", "usize", "ptr"], result: "ptr" },
  ucp_stream_recv_nbx: { lib: "ucp", args: ["ptr", "ptr", "usize", "ptr", "ptr"], result: "ptr" },
  ucp_stream_recv_request_test: { lib: "ucp", args: ["ptr", "ptr"], result: "status" },
  ucp_request_check_status: { lib: "ucp", args: ["ptr"], result: "status" },
  ucp_request_cancel: { lib: "ucp", args: ["ptr", "ptr"], result: "void" },
  ucp_request_free: { lib: "ucp", args: ["ptr"], result: "void" },

  // --- libucp: memory registration, remote keys, RMA and atomics ------------------------
  // Remote addresses are u64 in C; they are passed as Numbers (user-space addresses < 2^48).
  ucp_mem_map: { lib: "ucp", args: ["ptr", "ptr", "ptr"], result: "status" },
  ucp_mem_unmap: { lib: "ucp", args: ["ptr", "ptr"], result: "status" },
  ucp_mem_query: { lib: "ucp", args: ["ptr", "ptr"], result: "status" },
  ucp_rkey_pack: { lib: "ucp", args: ["ptr", "ptr", "ptr", "ptr"], result: "status" },
  ucp_rkey_buffer_release: { lib: "ucp", args: ["ptr"], result: "void" },
  ucp_ep_rkey_unpack: { lib: "ucp", args: ["ptr", "ptr", "ptr"], result: "status" },
  ucp_rkey_destroy: { lib: "ucp", args: ["ptr"], result: "void" },
  ucp_put_nbx: { lib: "ucp", args: ["ptr", "ptr", "usize", "u64", "ptr", "ptr"], result: "ptr" },
  ucp_get_nbx: { lib: "ucp", args: ["ptr", "ptr", "usize", "u64", "ptr", "ptr"], result: "ptr" },
  ucp_atomic_op_nbx: { lib: "ucp", args: ["ptr", "i32", "ptr", "usize", "u64", "ptr", "ptr"], result: "ptr" },
  ucp_worker_fence: { lib: "ucp", args: ["ptr"], result: "status" },

  // --- libucp: active messages -----------------------------------------------------------
  ucp_worker_set_am_recv_handler: { lib: "ucp", args: ["ptr", "ptr"], result: "status" },
  ucp_am_send_nbx: { lib: "ucp", args: ["ptr", "u32", "ptr", "usize", "ptr", "usize", "ptr"], result: "ptr" },
  ucp_am_recv_data_nbx: { lib: "ucp", args: ["ptr", "ptr", "ptr", "usize", "ptr"], result: "ptr" },
  ucp_am_data_release: { lib: "ucp", args: ["ptr", "ptr"], result: "void" },

  // --- libuct: resource discovery (what `ucx_info -d` lists) ----------------------------
  uct_query_components: { lib: "uct", args: ["ptr", "ptr"], result: "status" },
  uct_release_component_list: { lib: "uct", args: ["ptr"], result: "void" },
  uct_component_query: { lib: "uct", args: ["ptr", "ptr"], result: "status" },
  uct_md_config_read: { lib: "uct", args: ["ptr", "cstr", "cstr", "ptr"], result: "status" },
  uct_config_release: { lib: "uct", args: ["ptr"], result: "void" },
  uct_md_open: { lib: "uct", args: ["ptr", "cstr", "ptr", "ptr"], result: "status" },
  uct_md_close: { lib: "uct", args: ["ptr"], result: "void" },
  uct_md_query_tl_resources: { lib: "uct", args: ["ptr", "ptr", "ptr"], result: "status" },
  uct_release_tl_resource_list: { lib: "uct", args: ["ptr"], result: "void" },

  // --- libucs: the async context a UCT worker needs (UCT's own timers and fd events) ------
  ucs_async_context_create: { lib: "ucs", args: ["i32", "ptr"], result: "status" },
  ucs_async_context_destroy: { lib: "ucs", args: ["ptr"], result: "void" },
  // What `ucs_async_check_miss` (an inline) calls: events UCX's async thread could not handle
  // while the context was locked by this thread are run here, on it.
  __ucs_async_poll_missed: { lib: "ucs", args: ["ptr"], result: "void" },

  // --- libuct: memory domains, workers, interfaces, endpoints (src/core/uct) ------------
  // The data-path calls (am_short, put, atomics, flush, progress...) are static inlines in
  // uct.h that jump through the interface's ops table: they are in `uct-ops.ts`, not here.
  uct_md_query: { lib: "uct", args: ["ptr", "ptr"], result: "status" },
  uct_md_iface_config_read: { lib: "uct", args: ["ptr", "cstr", "cstr", "cstr", "ptr"], result: "status" },
  uct_worker_create: { lib: "uct", args: ["ptr", "i32", "ptr"], result: "status" },
  uct_worker_destroy: { lib: "uct", args: ["ptr"], result: "void" },
  uct_iface_open: { lib: "uct", args: ["ptr", "ptr", "ptr", "ptr", "ptr"], result: "status" },
  uct_iface_close: { lib: "uct", args: ["ptr"], result: "void" },
  uct_iface_query: { lib: "uct", args: ["ptr", "ptr"], result: "status" },
  uct_iface_get_device_address: { lib: "uct", args: ["ptr", "ptr"], result: "status" },
  uct_iface_get_address: { lib: "uct", args: ["ptr", "ptr"], result: "status" },
  uct_iface_is_reachable: { lib: "uct", args: ["ptr", "ptr", "ptr"], result: "i32" },
  uct_iface_set_am_handler: { lib: "uct", args: ["ptr", "u8", "ptr", "ptr", "u32"], result: "status" },
  uct_iface_mem_alloc: { lib: "uct", args: ["ptr", "usize", "u32", "cstr", "ptr"], result: "status" },
  uct_iface_mem_free: { lib: "uct", args: ["ptr"], result: "void" },
  uct_ep_create: { lib: "uct", args: ["ptr", "ptr"], result: "status" },
  uct_ep_destroy: { lib: "uct", args: ["ptr"], result: "void" },
  uct_ep_get_address: { lib: "uct", args: ["ptr", "ptr"], result: "status" },
  uct_ep_connect_to_ep: { lib: "uct", args: ["ptr", "ptr", "ptr"], result: "status" },
  uct_md_mem_reg: { lib: "uct", args: ["ptr", "ptr", "usize", "u32", "ptr"], result: "status" },
  uct_md_mem_dereg: { lib: "uct", args: ["ptr", "ptr"], result: "status" },
  uct_md_mkey_pack: { lib: "uct", args: ["ptr", "ptr", "ptr"], result: "status" },
  uct_rkey_unpack: { lib: "uct", args: ["ptr", "ptr", "ptr"], result: "status" },
  uct_rkey_release: { lib: "uct", args: ["ptr", "ptr"], result: "status" },

  // --- libc: native scratch memory and in-memory FILE streams for UCX's print functions --
  malloc: { lib: "c", args: ["usize"], result: "ptr" },
  calloc: { lib: "c", args: ["usize", "usize"], result: "ptr" },
  free: { lib: "c", args: ["ptr"], result: "void" },
  strlen: { lib: "c", args: ["ptr"], result: "usize" },
  // memcpy(dst, src, n): copies C memory UCX lends for one callback (an active message's header
  // and eager data) into memory of ours, without making an ArrayBuffer over UCX's memory per
  // message (koffi.view's external buffers cost their weight in garbage collection).
  memcpy: { lib: "c", args: ["ptr", "ptr", "usize"], result: "ptr" },
  // poll(struct pollfd *fds, nfds_t nfds, int timeout): blocking mode waits on the worker's fd.
  poll: { lib: "c", args: ["ptr", "u64", "i32"], result: "i32" },
  // sched_yield(): the progress thread hands its core to the application thread it just woke.
  sched_yield: { lib: "c", args: [], result: "i32" },
  open_memstream: { lib: "c", args: ["ptr", "ptr"], result: "ptr" },
  fclose: { lib: "c", args: ["ptr"], result: "i32" },
  // What UCX logs while a context is made (log-capture.ts): its log lines go to stdout (fd 1),
  // lent to an in-memory file for that call, then copied back.
  memfd_create: { lib: "c", args: ["cstr", "u32"], result: "i32" },
  dup: { lib: "c", args: ["i32"], result: "i32" },
  dup2: { lib: "c", args: ["i32", "i32"], result: "i32" },
  close: { lib: "c", args: ["i32"], result: "i32" },
  fflush: { lib: "c", args: ["ptr"], result: "i32" },
  pread: { lib: "c", args: ["i32", "ptr", "usize", "i64"], result: "i64" },
  write: { lib: "c", args: ["i32", "ptr", "usize"], result: "i64" },
  // The C environment UCX reads its configuration from (setenv before libucs loads; see load.ts).
  getenv: { lib: "c", args: ["cstr"], result: "ptr" },
  setenv: { lib: "c", args: ["cstr", "cstr", "i32"], result: "i32" },
  // fcntl(fd, cmd, arg): UCX 1.13 opens its descriptors without FD_CLOEXEC; ucx-ts sets it
  // (core/close-on-exec.ts) with F_GETFD/F_SETFD. fcntl is variadic in C; declared with one int
  // argument it is called like any int function, which the x86-64 and AArch64 Linux ABIs allow
  // for integer arguments (they travel in the same registers either way).
  fcntl: { lib: "c", args: ["i32", "i32", "i32"], result: "i32" },
  // malloc_trim(pad): glibc returns the free memory it keeps to the system. The soak calls it
  // before a second RSS reading, so that what glibc retains is told apart from what is in use.
  malloc_trim: { lib: "c", args: ["usize"], result: "i32" },
  // mallopt(param, value): the soak fixes glibc's mmap and trim thresholds in its own process
  // (scripts/soak/allocator.ts), which otherwise rise with every large block freed and leave
  // freed payloads resident, a step in RSS a leak figure cannot tell from growth.
  mallopt: { lib: "c", args: ["i32", "i32"], result: "i32" },
  // malloc_info(options, FILE *): glibc's arena statistics as XML (memory taken from the system,
  // free chunks, mmapped blocks), written to a stream over an in-memory file (fdopen on a
  // memfd_create descriptor). The soak reads the bytes malloc has in use from it: a leak of
  // malloc'd memory grows them, free memory glibc keeps and memory mapped around malloc do not.
  // (mallinfo2 says the same but returns a struct by value, which the table cannot declare.)
  fdopen: { lib: "c", args: ["i32", "cstr"], result: "ptr" },
  malloc_info: { lib: "c", args: ["i32", "ptr"], result: "i32" },
} as const satisfies Record<string, SymbolDef>;

/**
 * Optional CUDA runtime symbols. libcudart is loaded lazily, only when something asks for
 * GPU memory, so that hosts without CUDA never touch it.
 */
export const cudaSymbols = {
  cudaRuntimeGetVersion: { lib: "cudart", args: ["ptr"], result: "i32" },
  cudaDriverGetVersion: { lib: "cudart", args: ["ptr"], result: "i32" },
  cudaGetDeviceCount: { lib: "cudart", args: ["ptr"], result: "i32" },
  cudaGetErrorString: { lib: "cudart", args: ["i32"], result: "ptr" },
  cudaSetDevice: { lib: "cudart", args: ["i32"], result: "i32" },
  cudaGetDevice: { lib: "cudart", args: ["ptr"], result: "i32" },
  // Device memory, and pinned host memory for staging (the copy engine needs pinned pages to
  // copy asynchronously).
  cudaMalloc: { lib: "cudart", args: ["ptr", "usize"], result: "i32" },
  cudaFree: { lib: "cudart", args: ["ptr"], result: "i32" },
  cudaMallocHost: { lib: "cudart", args: ["ptr", "usize"], result: "i32" },
  cudaFreeHost: { lib: "cudart", args: ["ptr"], result: "i32" },
  // cudaMemcpy(dst, src, count, enum cudaMemcpyKind) and its async twin with a cudaStream_t.
  cudaMemcpy: { lib: "cudart", args: ["ptr", "ptr", "usize", "i32"], result: "i32" },
  cudaMemcpyAsync: { lib: "cudart", args: ["ptr", "ptr", "usize", "i32", "ptr"], result: "i32" },
  cudaStreamCreate: { lib: "cudart", args: ["ptr"], result: "i32" },
  cudaStreamSynchronize: { lib: "cudart", args: ["ptr"], result: "i32" },
  cudaStreamDestroy: { lib: "cudart", args: ["ptr"], result: "i32" },
  // Events tell the application thread a copy finished without blocking it (cudaEventQuery).
  cudaEventCreate: { lib: "cudart", args: ["ptr"], result: "i32" },
  cudaEventRecord: { lib: "cudart", args: ["ptr", "ptr"], result: "i32" },
  cudaEventQuery: { lib: "cudart", args: ["ptr"], result: "i32" },
  cudaEventSynchronize: { lib: "cudart", args: ["ptr"], result: "i32" },
  cudaEventDestroy: { lib: "cudart", args: ["ptr"], result: "i32" },
  // cudaPointerGetAttributes(struct cudaPointerAttributes *, const void *): see cuda-constants.ts.
  cudaPointerGetAttributes: { lib: "cudart", args: ["ptr", "ptr"], result: "i32" },
} as const satisfies Record<string, SymbolDef>;

export type SymbolTable = Readonly<Record<string, SymbolDef>>;

/**
 * C callback types UCX calls back through. They fire inside `ucp_worker_progress` (UCT's inside
 * `uct_worker_progress` and the UCT operations), on the thread that owns the worker, which is
 * where they are created.
 */
export const callbackTypes = {
  /** `void (*)(ucp_conn_request_h conn_request, void *arg)` */
  ucp_listener_conn_callback_t: { args: ["ptr", "ptr"], result: "void" },
  /** `void (*)(void *arg, ucp_ep_h ep, ucs_status_t status)` */
  ucp_err_handler_cb_t: { args: ["ptr", "ptr", "status"], result: "void" },
  /** `void (*)(void *request, ucs_status_t status, void *user_data)` */
  ucp_send_nbx_callback_t: { args: ["ptr", "status", "ptr"], result: "void" },
  /** `void (*)(void *request, ucs_status_t status, const ucp_tag_recv_info_t *info, void *user_data)` */
  ucp_tag_recv_nbx_callback_t: { args: ["ptr", "status", "ptr", "ptr"], result: "void" },
  /** `void (*)(void *request, ucs_status_t status, size_t length, void *user_data)` (ucp_am_recv_data_nbx) */
  ucp_am_recv_data_nbx_callback_t: { args: ["ptr", "status", "usize", "ptr"], result: "void" },
  /** `ucs_status_t (*)(void *arg, const void *header, size_t header_length, void *data, size_t length, const ucp_am_recv_param_t *param)` */
  ucp_am_recv_callback_t: { args: ["ptr", "ptr", "usize", "ptr", "usize", "ptr"], result: "status" },
  /** `ucs_status_t (*)(void *arg, void *data, size_t length, unsigned flags)` (UCT AM handler) */
  uct_am_callback_t: { args: ["ptr", "ptr", "usize", "u32"], result: "status" },
  /** `void (*)(uct_completion_t *self)` */
  uct_completion_callback_t: { args: ["ptr"], result: "void" },
  /** `ucs_status_t (*)(uct_pending_req_t *self)` */
  uct_pending_callback_t: { args: ["ptr"], result: "status" },
  /** `size_t (*)(void *dest, void *arg)` */
  uct_pack_callback_t: { args: ["ptr", "ptr"], result: "usize" },
  /** `void (*)(uct_pending_req_t *self, void *arg)` */
  uct_pending_purge_callback_t: { args: ["ptr", "ptr"], result: "void" },
  /** `void (*)(void *arg, const void *data, size_t length)` */
  uct_unpack_callback_t: { args: ["ptr", "ptr", "usize"], result: "void" },
} as const;
