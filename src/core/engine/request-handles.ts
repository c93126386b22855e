/**
 * Memory handles mapped for one request each, where UCX needs them to survive a peer's death.
 *
 * UCX 1.16 and later (unchanged up to master of 2026-11) invalidate the registration of a
 * rendezvous request whose rkey the peer holds when that request fails on a peer-error-handling
 * endpoint (`ucp_request_memh_invalidate`, called from `ucp_ep_req_purge` and from
 * `ucp_proto_rndv_rts_abort` / the RTR's abort), and the invalidation goes through the
 * context's registration cache without checking that there is one. Without UCX's memory events
 * (ucx-ts's default: library.ts says why) there is none, and a rendezvous to a peer that dies
 * crashed the process: SIGSEGV at 0xb8 (docs/upstream-reports.md 4b). Both protocol versions
 * skip the invalidation for a request that carries the application's own handle
 * (`ucp_memh_is_user_memh`: a handle from ucp_mem_map), so on such a UCX each send and receive
 * of `from` bytes or more (ucx-version-gaps.ts chooses it) is given a handle mapped for it here
 * and unmapped when the request ends. That is what UCX does itself without a cache (it
 * registers each rendezvous buffer per request); measured 0.3-1.2 us per map and unmap through
 * the FFI for 1 KiB-16 MiB on tcp and shared memory.
 *
 * A handle outlives its request: one released by a request UCX finished is unmapped at once;
 * one whose request was abandoned at shutdown (freed before UCX finished it) waits in
 * `abandoned` until the worker is destroyed, since UCX may touch it until then.
 */
import { UCX_CONSTANTS as C, type Pointer, type Ucx } from "../../ffi/index.ts";
import type { OutSlots } from "../out-slots.ts";

const UCS_OK = 0;

export class RequestHandles {
  /** Handles mapped and not yet unmapped (the tests see them return to 0). */
  live = 0;
  /** Requests given a handle so far. */
  mapped = 0;
  private readonly params: ReturnType<Ucx["struct"]>;
  private readonly paramsAddress: Pointer;
  private readonly abandoned: Pointer[] = [];

  constructor(
    private readonly u: Ucx,
    private readonly context: Pointer,
    private readonly out: OutSlots,
    /** The smallest request that gets a handle; Infinity: none does (this UCX needs none). */
    readonly from: number,
  ) {
    this.params = u.struct("ucp_mem_map_params_t");
    this.params.set("field_mask", C.UCP_MEM_MAP_PARAM_FIELD_ADDRESS | C.UCP_MEM_MAP_PARAM_FIELD_LENGTH);
    this.paramsAddress = u.addressOf(this.params.bytes);
  }

  /**
   * A handle for `length` bytes at `address`, or 0: the request is too small to go by
   * rendezvous, or UCX could not map it (it then goes without, as before: that is only the
   * crash's risk again, not a failure of the request).
   */
  map(address: number, length: number): Pointer {
    if (length < this.from || address === 0) return 0;
    this.params.set("address", address);
    this.params.set("length", length);
    if (this.u.ucp_mem_map(this.context, this.paramsAddress, this.out.address()) !== UCS_OK) return 0;
    this.live++;
    this.mapped++;
    return this.out.pointer();
  }

  /** The request using `memh` ended (UCX let go of it): unmap it. 0 and undefined are ignored. */
  release(memh: Pointer | undefined): void {
    if (!memh) return;
    this.u.ucp_mem_unmap(this.context, memh);
    this.live--;
  }

  /** The request using `memh` was freed unfinished at shutdown: unmapped by `releaseAbandoned`. */
  abandon(memh: Pointer | undefined): void {
    if (memh) this.abandoned.push(memh);
  }

  /** After ucp_worker_destroy, before the context is cleaned up. */
  releaseAbandoned(): void {
    for (const memh of this.abandoned.splice(0)) this.release(memh);
  }
}

/**
 * Request parameters `param` get op_attr_mask `mask`, plus UCP_OP_ATTR_FIELD_MEMH and memory
 * handle `memh` when it is one (0: without; what a struct kept for one kind of request is put
 * back to after the call that carried a handle).
 */
export function setParamsMemh(param: ReturnType<Ucx["struct"]>, mask: number, memh: Pointer): void {
  if (memh) param.set("memh", memh as number | bigint);
  param.view.setUint32(0, memh ? mask | C.UCP_OP_ATTR_FIELD_MEMH : mask, true); // op_attr_mask
}
