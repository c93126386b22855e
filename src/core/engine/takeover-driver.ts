/**
 * Thread mode with takeover, the application thread's side: while it holds the token
 * (takeover-state.ts) it drives UCX itself, as polling mode would, so that a round trip costs
 * no thread wake-up. One `round()`:
 *
 *   execute the submission ring's fast records (tag and stream sends and receives, probes,
 *   cancels of fast requests) -> ucp_worker_progress -> check the fast requests -> write the
 *   completions into a private ring, which the engine delivers like the progress thread's.
 *
 * It stops at the first record it cannot execute here (an endpoint it has no handle for, a
 * send that would stay in flight with bytes only the record holds, anything but the fast
 * operations): that record and those behind it stay in the ring, in order, for the progress
 * thread, and `needThread` tells the engine to hand the token back.
 */
import { ptrIsError, UCX_CONSTANTS as C, type Ucx } from "../../ffi/index.ts";
import { CompletionWriter } from "./completion-writer.ts";
import { COMPLETION_BYTES, INLINE_OFFSET, Op, SEND_FLAG_INLINE, SEND_FLAG_MEMH, SUB, tagArgument } from "./records.ts";
import { Ring } from "./ring.ts";
import { FastKind, type TakeoverState } from "./takeover-state.ts";
import { FastRequests, u64At, type FastReport } from "./fast-requests.ts";
import { mark, Mark, TURNAROUND } from "../turnaround.ts";

const UCS_OK = 0;
const UCS_ERR_NO_MESSAGE = -1;
/** Requests an idle round checks (as Executor.progress). */
const IDLE_SCAN = 8;

export class TakeoverDriver {
  /** Completions of this thread's rounds, delivered by the engine after the progress thread's. */
  readonly completions: Ring;
  private readonly writer: CompletionWriter;
  private readonly fast: FastRequests;
  private readonly param: ReturnType<Ucx["struct"]>;
  private readonly paramAddress: number;
  private readonly info: Uint32Array;
  private readonly infoAddress: number;
  private readonly streamLength = new Uint32Array(2);
  private readonly streamLengthAddress: number;
  /** Address of the submission ring's first slot (a SharedArrayBuffer never moves). */
  private readonly slotsAddress: number;
  /** Set when a round stopped at a record only the progress thread can execute. */
  needThread = false;
  /** A record was executed since the last full check (a post may complete an earlier request). */
  touched = false;
  private readonly report: FastReport = (id, status, value, tagLo, tagHi) => {
    if (id === this.inPlaceId && status === UCS_OK) {
      this.inPlaceDone = true;
      this.inPlaceValue = value;
      return;
    }
    this.writer.writeRequest(id, status, value, tagLo, tagHi);
  };
  /** The request executeNow() may complete in place (0: none), and whether it did, with its value. */
  private inPlaceId = 0;
  private inPlaceDone = false;
  inPlaceValue = 0;
  private readonly executeRecord = (w: number) => this.execute(w);

  constructor(
    private readonly u: Ucx,
    private readonly state: TakeoverState,
    private readonly worker: number,
    private readonly submissions: Ring,
    completionSlots: number,
    /**
     * Sends and receives from this size need a memory handle of their own (request-handles.ts),
     * which only the progress thread maps and unmaps: they are left to it.
     */
    private readonly requestHandlesFrom = Infinity,
  ) {
    this.completions = Ring.create(completionSlots, COMPLETION_BYTES, false);
    this.writer = new CompletionWriter(this.completions);
    this.fast = new FastRequests(u, state);
    this.param = u.struct("ucp_request_param_t");
    this.paramAddress = u.addressOf(this.param.bytes);
    const info = u.struct("ucp_tag_recv_info_t");
    this.info = new Uint32Array(info.bytes.buffer, info.bytes.byteOffset, 4);
    this.infoAddress = u.addressOf(info.bytes);
    this.streamLengthAddress = u.addressOf(this.streamLength);
    this.slotsAddress = u.addressOf(submissions.u8);
  }

  /**
   * One round; the caller holds the token (APP). Returns completions written. `progressUcx`
   * false: execute and check without calling ucp_worker_progress (the settle turns after a
   * delivery, event-loop.ts SETTLE_TURNS).
   */
  round(progressUcx = true): number {
    this.writer.flush();
    this.needThread = false;
    this.submissions.consumeWhile(this.executeRecord);
    const events = progressUcx ? this.u.ucp_worker_progress(this.worker) : 0;
    const fast = this.fast;
    if (fast.count > 0) {
      if (events > 0 || this.touched) {
        this.touched = false;
        fast.checkAll(this.report);
      } else if (progressUcx) fast.checkSome(IDLE_SCAN, this.report);
      // A round without UCX's progress that posted nothing changed no request: nothing to check
      // (the settle turns after a delivery checked the awaited receive 6 times a round trip).
    }
    this.writer.flush();
    return this.writer.takeWritten() + events;
  }

  /**
   * Execute the submission ring's records now, in order, from inside the call that posted the
   * last of them (the caller holds the token, APP): no ucp_worker_progress, no check of earlier
   * requests, no user code. Request `inPlace` (0: none), when UCX finishes it inside its posting
   * call (an eager send over shared memory), is not written as a completion: returns true and
   * leaves its value in `inPlaceValue` (Engine.submit's in-place contract: the caller passes an
   * id only while nothing else waits to be delivered). As `round()`, it stops at the first record
   * only the progress thread executes and sets `needThread`.
   */
  executeNow(inPlace: number): boolean {
    this.needThread = false;
    this.inPlaceId = inPlace;
    this.inPlaceDone = false;
    try {
      this.submissions.consumeWhile(this.executeRecord);
    } finally {
      this.inPlaceId = 0;
    }
    return this.inPlaceDone;
  }

  /** Completions that did not fit the private ring yet. */
  get backlog(): number {
    return this.writer.backlog;
  }

  /** Execute the record at word `w` of the submission ring, or refuse it (false) and stop. */
  private execute(w: number): boolean {
    const ring = this.submissions;
    const u32 = ring.u32;
    const op = u32[w + SUB.op]!;
    const ok = this.tryExecute(op, w, u32[w + SUB.request]!, u32[w + SUB.target]!, ring.f64[(w >> 1) + SUB.address]!, ring.f64[(w >> 1) + SUB.length]!);
    if (ok) this.touched = true;
    else this.needThread = true;
    return ok;
  }

  private tryExecute(op: number, w: number, id: number, target: number, address: number, length: number): boolean {
    const u32 = this.submissions.u32;
    switch (op) {
      case Op.TagSend:
      case Op.StreamSend:
        return this.send(op, w, id, target, address, length);
      case Op.TagRecv: {
        if (this.state.count >= this.state.capacity || length >= this.requestHandlesFrom) return false;
        const r = this.u.ucp_tag_recv_nbx(
          this.worker,
          address,
          length,
          tagArgument(u32[w + SUB.tagLo]!, u32[w + SUB.tagHi]!),
          tagArgument(u32[w + SUB.maskLo]!, u32[w + SUB.maskHi]!),
          this.params(C.UCP_OP_ATTR_FLAG_NO_IMM_CMPL), // always a request: see Executor.tagRecv
        );
        if (ptrIsError(r)) this.report(id, r, 0, 0, 0);
        else this.fast.add(r, id, FastKind.TagRecv, 0);
        return true;
      }
      case Op.StreamRecv: {
        const ep = this.state.endpoint(target);
        if (ep === 0 || this.state.count >= this.state.capacity) return false;
        if (length === 0) {
          this.report(id, UCS_OK, 0, 0, 0); // as Executor.streamRecv
          return true;
        }
        const r = this.u.ucp_stream_recv_nbx(ep, address, length, this.streamLengthAddress, this.params(C.UCP_OP_ATTR_FIELD_FLAGS, C.UCP_STREAM_RECV_FLAG_WAITALL));
        if (r === 0) this.report(id, UCS_OK, u64At(this.streamLength, 0), 0, 0);
        else if (ptrIsError(r)) this.report(id, r, 0, 0, 0);
        else this.fast.add(r, id, FastKind.StreamRecv, target);
        return true;
      }
      case Op.TagProbe: {
        const m = this.u.ucp_tag_probe_nb(
          this.worker,
          tagArgument(u32[w + SUB.tagLo]!, u32[w + SUB.tagHi]!),
          tagArgument(u32[w + SUB.maskLo]!, u32[w + SUB.maskHi]!),
          0,
          this.infoAddress,
        );
        if (m === 0) this.report(id, UCS_ERR_NO_MESSAGE, 0, 0, 0);
        else this.report(id, UCS_OK, u64At(this.info, 2), this.info[0]!, this.info[1]!);
        return true;
      }
      case Op.Cancel:
        // Not a fast request here: the thread's (or already done, which the thread knows too).
        return this.fast.cancel(this.worker, target);
      default:
        return false;
    }
  }

  private send(op: number, w: number, id: number, target: number, address: number, length: number): boolean {
    const ep = this.state.endpoint(target);
    if (ep === 0 || this.state.count >= this.state.capacity) return false;
    const flags = this.submissions.u32[w + SUB.flags]!;
    let param: number;
    let source = address;
    if (flags & SEND_FLAG_INLINE) {
      // The bytes are in the record, whose slot is reused once consumed: only a send UCX
      // completes in this call may use them; any other is left to the thread, which stages them.
      source = this.slotsAddress + w * 4 + INLINE_OFFSET;
      param = this.params(C.UCP_OP_ATTR_FLAG_FORCE_IMM_CMPL);
    } else if (flags & SEND_FLAG_MEMH) {
      const memh = this.state.memory(this.submissions.f64[(w >> 1) + SUB.handle]!);
      if (memh === 0) return false;
      this.param.set("memh", memh);
      param = this.params(C.UCP_OP_ATTR_FIELD_MEMH);
    } else if (op === Op.TagSend && length >= this.requestHandlesFrom) return false;
    else param = this.params(0);
    if (TURNAROUND && op === Op.TagSend) mark(Mark.Posted);
    const r =
      op === Op.TagSend
        ? this.u.ucp_tag_send_nbx(ep, source, length, tagArgument(this.submissions.u32[w + SUB.tagLo]!, this.submissions.u32[w + SUB.tagHi]!), param)
        : this.u.ucp_stream_send_nbx(ep, source, length, param);
    if (r === 0) this.report(id, UCS_OK, length, 0, 0);
    else if (ptrIsError(r)) {
      // An inline send UCX could not complete at once (UCS_ERR_NO_RESOURCE, or any refusal of
      // the forced immediate completion: nothing was sent) is the thread's, which stages its
      // bytes; a real failure of the endpoint is reported by the thread then.
      if (flags & SEND_FLAG_INLINE) return false;
      this.report(id, r, 0, 0, 0);
    } else this.fast.add(r, id, FastKind.Send, target);
    return true;
  }

  private params(mask: number, flags = 0): number {
    const v = this.param.view;
    v.setUint32(0, mask, true); // op_attr_mask
    v.setUint32(4, flags, true);
    return this.paramAddress;
  }
}
