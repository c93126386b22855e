/**
 * The UCX requests the executor has in flight, and how each one's end is found: tag receives
 * and sends report themselves through a callback (their id and status queued in `completed`),
 * the rest (closes, flushes, stream receives, RMA, batch parts) are checked with
 * `ucp_request_check_status` after `ucp_worker_progress`; with takeover, fast requests live in
 * the shared table instead (fast-requests.ts). A batch's parts are checked oldest first, per
 * owner. One thread, one tracker: nothing here is shared.
 */
import { ptrIsError, type Pointer, type Ucx } from "../../ffi/index.ts";
import type { OutSlots } from "../out-slots.ts";
import { FastKind } from "./takeover-state.ts";
import { u64At, type FastRequests } from "./fast-requests.ts";
import type { InlineStaging } from "./inline-staging.ts";
import type { OwnedRequest } from "./op-host.ts";
import { IdMap } from "./id-map.ts";
import type { RequestHandles } from "./request-handles.ts";

const UCS_OK = 0;
const UCS_INPROGRESS = 1;

export type InflightKind = "send" | "tagRecv" | "streamRecv" | "close" | "flush";

export interface Inflight {
  readonly request: Pointer;
  readonly kind: InflightKind;
  /** Endpoint id the request belongs to (0 for worker-level receives). */
  readonly endpoint: number;
  /** For closes: the endpoint id to forget once the close completes. */
  readonly closes?: number;
  /** For inline sends: the staging chunk to free once UCX is done. */
  readonly staging?: number;
  /** The memory handle mapped for this request (request-handles.ts): unmapped once UCX is done. */
  readonly memh?: Pointer;
}

/**
 * A batch's messages in flight, in posting order. Only the oldest is checked each round: the
 * batch needs all of them anyway, and checking all of a 1,000-frame batch on every round of
 * progress made a batch cost O(frames x rounds) FFI calls (measured: 100 x 64 KiB frames 4-7x
 * slower than one 6.4 MiB send before, see bench/run-multi.mjs).
 */
interface PartQueue {
  readonly parts: OwnedRequest[];
  next: number;
}

/** How the tracker reports a request's end (the executor's completion records). */
export interface RequestReporter {
  done(id: number, status: number, value?: number): void;
  emitRequest(id: number, status: number, value: number, tagLo: number, tagHi: number): void;
}

export class RequestTracker {
  /** Every request in flight (cancel and shutdown find them here). */
  readonly inflight = new IdMap<Inflight>();
  /** The ones whose completion is found by `ucp_request_check_status` (no callback of their own). */
  readonly polled = new Map<number, Inflight>();
  /**
   * Requests whose completion callback fired: pairs of id and status in the first
   * `completedWords` slots, finished in progress(). The array is reused, never emptied: setting
   * its length to 0 dropped its backing store, and the next callback's push made a new one
   * (~170 B per receive, Node 20).
   */
  private readonly completed: number[] = [];
  completedWords = 0;
  readonly partQueues = new Map<object, PartQueue>();
  /** Set when the executor called UCX outside `ucp_worker_progress` since the last full check. */
  touched = false;
  /** Where the idle rounds' partial check goes on (a Map iterator survives deletions). */
  private idleScan: Iterator<[number, Inflight]> | undefined;
  /** Filled by ucp_tag_recv_request_test and ucp_tag_probe_nb. */
  private readonly recvInfo: ReturnType<Ucx["struct"]>;
  readonly recvInfoAddress: Pointer;
  /**
   * The same 16 bytes as u32 words (sender_tag lo, hi; length lo, hi), read directly on the
   * data path: the struct accessor's BigInt round trip cost more than the UCX call it follows.
   */
  readonly recvInfoWords: Uint32Array;

  constructor(
    private readonly u: Ucx,
    private readonly out: OutSlots,
    private readonly staging: InlineStaging,
    private readonly fast: FastRequests | undefined,
    private readonly report: RequestReporter,
    /** A close ended (or failed to start): the endpoint it closed is gone. */
    private readonly forgetEndpoint: (endpoint: number) => void,
    private readonly handles: RequestHandles,
  ) {
    this.recvInfo = u.struct("ucp_tag_recv_info_t");
    this.recvInfoAddress = u.addressOf(this.recvInfo.bytes);
    this.recvInfoWords = new Uint32Array(this.recvInfo.bytes.buffer, this.recvInfo.bytes.byteOffset, 4);
  }

  /** The length in `recvInfo` (its second u64), as ucp_tag_recv_request_test or probe left it. */
  recvLength(): number {
    return u64At(this.recvInfoWords, 2);
  }

  /** Handle the `ucs_status_ptr_t` of a non-blocking call: done now, failed now, or in flight. */
  /** `memh`: the request's own memory handle (request-handles.ts), unmapped when it ends. */
  track(id: number, result: Pointer, kind: InflightKind, endpoint: number, closes?: number, memh?: Pointer): boolean {
    if (result === 0 || ptrIsError(result)) this.handles.release(memh); // UCX is done with it already
    if (result === 0) return false; // completed in place
    if (ptrIsError(result)) {
      if (closes !== undefined) this.forgetEndpoint(closes);
      this.report.done(id, result);
      return true;
    }
    // A request with a handle stays here (this thread unmaps it), never in takeover's shared table.
    if (this.fast && !memh && (kind === "tagRecv" || kind === "streamRecv")) {
      if (this.fast.add(result, id, kind === "tagRecv" ? FastKind.TagRecv : FastKind.StreamRecv, endpoint)) return true;
      this.addInflight(id, { request: result, kind, endpoint }, true); // the table is full: polled here
      return true;
    }
    // A tag receive reports itself through its callback, except with takeover (none then).
    this.addInflight(id, { request: result, kind, endpoint, closes, memh }, kind !== "tagRecv" || this.fast !== undefined);
    return true;
  }

  /** Remember a request in flight; `polled`: its completion is found by checking, not by a callback. */
  addInflight(id: number, entry: Inflight, polled: boolean): void {
    this.inflight.set(id, entry);
    if (polled) this.polled.set(id, entry);
  }

  checkAll(): number {
    this.touched = false;
    let n = 0;
    for (const [id, r] of this.polled) n += this.check(id, r);
    return n;
  }

  /** A completion callback fired for request `id` (finished by finishCompleted). */
  queueCompleted(id: number, status: number): void {
    const q = this.completed;
    q[this.completedWords++] = id;
    q[this.completedWords++] = status;
  }

  /** Finish the requests whose callbacks fired (pairs of id, status in `completed`). */
  finishCompleted(): number {
    const q = this.completed;
    let n = 0;
    // Finishing fires no callback (it only reads and frees requests), so `q` does not grow here.
    for (let i = 0; i < this.completedWords; i += 2) {
      const id = q[i]!;
      const r = this.inflight.get(id);
      if (!r) continue; // not ours to finish (already finished at shutdown)
      this.complete(id, r, q[i + 1]!);
      n++;
    }
    this.completedWords = 0;
    return n;
  }

  checkSome(count: number): number {
    let n = 0;
    for (let i = 0; i < count; i++) {
      const next = (this.idleScan ??= this.polled.entries()).next();
      if (next.done) {
        this.idleScan = undefined; // a lap ends; the next idle round starts another
        break;
      }
      n += this.check(next.value[0], next.value[1]);
    }
    return n;
  }

  private check(id: number, r: Inflight): number {
    const status = this.u.ucp_request_check_status(r.request);
    if (status === UCS_INPROGRESS) return 0;
    this.complete(id, r, status);
    return 1;
  }

  /** Request `id` ended with `status` (seen by a check or reported by its callback): forget and finish it. */
  private complete(id: number, r: Inflight, status: number): void {
    this.inflight.delete(id);
    if (this.polled.size > 0) this.polled.delete(id);
    if (r.staging !== undefined) this.staging.release(r.staging);
    this.finish(id, r, status);
    if (r.memh) this.handles.release(r.memh);
  }

  private finish(id: number, r: Inflight, status: number): void {
    const u = this.u;
    if (r.kind === "tagRecv") {
      // The info is valid for truncated messages too: length is then the incoming size.
      u.ucp_tag_recv_request_test(r.request, this.recvInfoAddress);
      this.report.emitRequest(id, status, this.recvLength(), this.recvInfoWords[0]!, this.recvInfoWords[1]!);
    } else if (r.kind === "streamRecv") {
      u.ucp_stream_recv_request_test(r.request, this.out.address());
      this.report.emitRequest(id, status, status === UCS_OK ? this.out.pointer() : 0, 0, 0);
    } else {
      if (r.closes !== undefined) this.forgetEndpoint(r.closes);
      this.report.done(id, status);
    }
    u.ucp_request_free(r.request);
  }

  // --- batch parts (multi-transfer.ts, active messages' fetches) -------------------------------

  /** Check each batch's oldest messages; a batch's callbacks may post more parts meanwhile. */
  progressParts(): number {
    let n = 0;
    for (const [owner, q] of this.partQueues) {
      while (q.next < q.parts.length) {
        const part = q.parts[q.next]!;
        const status = this.partStatus(part);
        if (status === UCS_INPROGRESS) break;
        q.next++;
        n++;
        this.finishPart(part, status, true);
      }
      if (q.next >= q.parts.length && this.partQueues.get(owner) === q) this.partQueues.delete(owner);
    }
    return n;
  }

  /**
   * A part's status. For a tag receive this is ucp_tag_recv_request_test, which returns the same
   * status as ucp_request_check_status and, once the receive is done, also writes its info
   * (length, sender tag) into the scratch info that finishPart reads: one FFI call per finished
   * receive instead of two (a window of 256 8 B receives made 256 fewer calls).
   */
  partStatus(part: OwnedRequest): number {
    if (part.kind === "tagRecv") return this.u.ucp_tag_recv_request_test(part.request, this.recvInfoAddress);
    return this.u.ucp_request_check_status(part.request);
  }

  /** `infoRead`: partStatus() returned this status just now, so a receive's info is in place. */
  finishPart(part: OwnedRequest, status: number, infoRead = false): void {
    const u = this.u;
    let length = 0;
    let lo = 0;
    let hi = 0;
    if (part.kind === "tagRecv") {
      // As for single receives: the info is valid for truncated messages too (incoming size).
      if (!infoRead) u.ucp_tag_recv_request_test(part.request, this.recvInfoAddress);
      length = this.recvLength();
      lo = this.recvInfoWords[0]!;
      hi = this.recvInfoWords[1]!;
    }
    u.ucp_request_free(part.request);
    if (part.memh) this.handles.release(part.memh);
    part.onDone(status, length, lo, hi);
  }

  queuePart(owner: object, part: OwnedRequest): void {
    let q = this.partQueues.get(owner);
    if (!q) this.partQueues.set(owner, (q = { parts: [], next: 0 }));
    else if (q.next > 1024 && q.next * 2 > q.parts.length) {
      q.parts.splice(0, q.next); // drop the finished head now and then
      q.next = 0;
    }
    q.parts.push(part);
  }

  /** Is `owner`'s queue of parts empty (nothing of its own waiting ahead of a new part)? */
  partsIdle(owner: object): boolean {
    const q = this.partQueues.get(owner);
    return !q || q.next >= q.parts.length;
  }

  /** Cancel the parts of `owner` not finished yet. */
  cancelParts(worker: Pointer, owner: object): void {
    const q = this.partQueues.get(owner);
    if (q) for (let i = q.next; i < q.parts.length; i++) this.u.ucp_request_cancel(worker, q.parts[i]!.request);
  }

  /**
   * Release (ucp_request_free) every request and batch part still in flight, and forget them;
   * their memory handles wait for the worker's end (RequestHandles.abandon).
   */
  releaseAll(): void {
    for (const r of this.inflight.values()) {
      this.u.ucp_request_free(r.request);
      this.handles.abandon(r.memh);
    }
    this.inflight.clear();
    this.polled.clear();
    this.completedWords = 0;
    for (const q of this.partQueues.values()) {
      for (let i = q.next; i < q.parts.length; i++) {
        this.u.ucp_request_free(q.parts[i]!.request);
        this.handles.abandon(q.parts[i]!.memh);
      }
    }
    this.partQueues.clear();
  }
}
