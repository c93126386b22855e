/**
 * The fast requests of thread mode with takeover (takeover-state.ts), seen from one thread: it
 * checks them with `ucp_request_check_status` while it holds the token, finishes those done
 * (reads a receive's tag and length, frees the request) and reports each with `report`.
 * Each thread has its own instance (its own UCX binding and scratch memory) over the same table.
 */
import type { Ucx } from "../../ffi/index.ts";
import { FastKind, type TakeoverState } from "./takeover-state.ts";
import { mark, Mark, TURNAROUND } from "../turnaround.ts";

const UCS_OK = 0;
const UCS_INPROGRESS = 1;

/** The size_t (or u64) C wrote at u32 words `at`, `at + 1` (little-endian; sizes stay below 2^53). */
export function u64At(words: Uint32Array, at: number): number {
  return words[at]! + words[at + 1]! * 0x100000000;
}

/** id, status, value (bytes), tag lo, tag hi. */
export type FastReport = (id: number, status: number, value: number, tagLo: number, tagHi: number) => void;

export class FastRequests {
  private readonly info: Uint32Array;
  private readonly infoAddress: number;
  /** A size_t written by ucp_stream_recv_request_test, as two u32 words. */
  private readonly length = new Uint32Array(2);
  private readonly lengthAddress: number;
  /** Where an idle round's partial check goes on. */
  private scan = 0;

  constructor(
    private readonly u: Ucx,
    readonly state: TakeoverState,
  ) {
    const info = u.struct("ucp_tag_recv_info_t");
    this.info = new Uint32Array(info.bytes.buffer, info.bytes.byteOffset, 4);
    this.infoAddress = u.addressOf(info.bytes);
    this.lengthAddress = u.addressOf(this.length);
  }

  get count(): number {
    return this.state.count;
  }

  /** Keep request `request` (a `ucs_status_ptr_t` that is a request) as request `id`; false when the table is full. */
  add(request: number, id: number, kind: FastKind, endpoint: number): boolean {
    return this.state.add(request, id, kind, endpoint);
  }

  /** Check every request; report and forget those done. Returns how many. */
  checkAll(report: FastReport): number {
    let n = 0;
    const s = this.state;
    for (let i = 0; i < s.count; ) {
      if (this.check(i, report)) n++;
      else i++;
    }
    return n;
  }

  /**
   * Check the next `budget` requests, round robin (an idle round: see Executor.progress), each at
   * most once: with fewer requests than the budget, the scan went round again and checked the
   * same ones (one receive awaited: 8 ucp_request_check_status an idle round; with the settle
   * turns' rounds, 74-139 per 8 B round trip between two processes, Node, 2026-11-27).
   */
  checkSome(budget: number, report: FastReport): number {
    let n = 0;
    const s = this.state;
    for (let k = Math.min(budget, s.count); k > 0 && s.count > 0; k--) {
      if (this.scan >= s.count) this.scan = 0;
      if (this.check(this.scan, report)) n++;
      else this.scan++;
    }
    return n;
  }

  /** Cancel request `id` if it is here (its completion comes as UCS_ERR_CANCELED); false if it is not. */
  cancel(worker: number, id: number): boolean {
    const i = this.state.indexOf(id);
    if (i < 0) return false;
    this.u.ucp_request_cancel(worker, this.state.requestAt(i));
    return true;
  }

  cancelAll(worker: number): void {
    for (let i = 0; i < this.state.count; i++) this.u.ucp_request_cancel(worker, this.state.requestAt(i));
  }

  /** Free every request (shutdown, after what could complete did); returns their ids. */
  releaseAll(): number[] {
    const ids: number[] = [];
    const s = this.state;
    while (s.count > 0) {
      ids.push(s.idAt(0));
      this.u.ucp_request_free(s.requestAt(0));
      s.removeAt(0);
    }
    return ids;
  }

  /** Check record `i`; if done, report it, free it and remove it (record `i` is then another one). */
  private check(i: number, report: FastReport): boolean {
    const s = this.state;
    const u = this.u;
    const request = s.requestAt(i);
    const status = u.ucp_request_check_status(request);
    if (status === UCS_INPROGRESS) return false;
    const id = s.idAt(i);
    const kind = s.kindAt(i);
    s.removeAt(i);
    let value = 0;
    let lo = 0;
    let hi = 0;
    if (kind === FastKind.TagRecv) {
      if (TURNAROUND) mark(Mark.Arrived);
      // Valid for a truncated message too: the length is then the incoming size.
      u.ucp_tag_recv_request_test(request, this.infoAddress);
      lo = this.info[0]!;
      hi = this.info[1]!;
      value = u64At(this.info, 2);
    } else if (kind === FastKind.StreamRecv) {
      u.ucp_stream_recv_request_test(request, this.lengthAddress);
      value = status === UCS_OK ? u64At(this.length, 0) : 0;
    }
    u.ucp_request_free(request);
    report(id, status, value, lo, hi);
    return true;
  }
}
