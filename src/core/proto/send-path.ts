/**
 * How a tag or stream send leaves the application thread: the selector picks its protocol by
 * size (selector.ts), and this carries it out.
 *
 * - inline: the bytes ride in the submission record; the send resolves at once.
 * - bounce: the bytes are copied into a bounce chunk; resolves at once; the chunk returns when
 *   UCX is done. No free chunk: the send goes zcopy instead (counted as zcopy).
 * - zcopy: the caller's buffer by address, held until UCX is done; resolves then.
 * - zcopy-reg: as zcopy, with the buffer's registration from the registration cache (made on
 *   first use, in ring order before the send) passed as its memory handle. A buffer the cache
 *   will not register goes plain zcopy (counted as zcopy).
 *
 * A send that resolved early still has its completion: it frees what the send used, and an
 * error there fails the endpoint (the caller's next operation, flush or close sees it).
 * `unfinished` counts those sends so that closing waits for them.
 */
import type { DirectTags } from "../engine/direct-tags.ts";
import { UcxError } from "../errors.ts";
import { describeStatus } from "../library.ts";
import { draftSubmission, type Submission } from "../engine/engine.ts";
import { BOUNCE_POOL_MEMORY, INLINE_CAPACITY, Op, SEND_FLAG_INLINE, SEND_FLAG_MEMH } from "../engine/records.ts";
import type { BouncePool } from "./bounce-pool.ts";
import type { RegistrationCache } from "./registration-cache.ts";
import type { Operation, SendProtocol } from "./protocols.ts";
import type { ProtocolSelector } from "./selector.ts";
import { sendManyDirect } from "./send-many-direct.ts";

const UCS_OK = 0;

/** A tag send's failure, as a request of the ring's path rejects with it. */
const sendError = (status: number): UcxError => UcxError.fromStatus(status, "ucp_tag_send_nbx", describeStatus);

/** What the send path needs of the worker (its request table). */
export interface SendHost {
  request(
    s: Omit<Submission, "request">,
    keep: unknown,
    operation: string,
    onArrive?: (id: number, status: number) => void,
    /** Hand it to UCX now (Engine.submit): a send UCX finishes in place then resolves at once. */
    now?: boolean,
  ): { id: number; promise: Promise<void> };
  /**
   * Submit `s` as a request that has already succeeded (its bytes are copied) and hand it to
   * UCX now: no Promise of its own; `onArrive` runs when its completion arrives. Returns its id.
   */
  requestDone(s: Omit<Submission, "request">, onArrive: (id: number, status: number) => void): number;
  /** A Promise already resolved, which the worker's settled() hands back as it is. */
  resolved(): Promise<void>;
  /**
   * Is the worker closing? Its close cancels a send straight to UCX still in flight, and the send
   * nobody awaits must not end the process as an unhandled rejection (requests.ts `closing`).
   */
  closing(): boolean;
  /** Await `p`, progressing the worker meanwhile in polling and blocking modes (Worker.settled). */
  settled<T>(p: Promise<T>): Promise<T>;
  /** Count `promise` against the user's own registration of `bytes`, if it has one (memMap). */
  holdMemory(bytes: Uint8Array, promise: Promise<void>): Promise<void>;
}

/** Something a failed early send can be reported to (the endpoint). */
export interface SendFailureSink {
  failAfterSend(status: number): void;
}

/** A send's submission: the shared draft (engine.ts draftSubmission), submitted at once. */
function sendSubmission(op: number, endpoint: number, address: number, length: number, tagLo: number, tagHi: number, flags: number, handle: number): Submission {
  const s = draftSubmission(op);
  s.target = endpoint;
  s.address = address;
  s.length = length;
  s.tagLo = tagLo;
  s.tagHi = tagHi;
  s.flags = flags;
  s.handle = handle;
  return s;
}

/** Where `sendDirectInto` tells a send's outcome (a UcxRequest). */
export interface SendTarget {
  succeed(value: undefined): void;
  fail(error: unknown): void;
}

export class SendPath {
  /** Sends per protocol since the worker started (what `worker.protocolCounts` shows). */
  readonly counts: Record<SendProtocol, number> = { inline: 0, bounce: 0, zcopy: 0, "zcopy-reg": 0 };
  /** Sends that resolved early and whose completion has not arrived yet. */
  private unfinishedCount = 0;
  private drained: (() => void)[] = [];

  constructor(
    private readonly host: SendHost,
    readonly selector: ProtocolSelector,
    private readonly pool: BouncePool,
    readonly registrations: RegistrationCache,
    private readonly addressOf: (bytes: Uint8Array) => number,
  ) {}

  get unfinished(): number {
    return this.unfinishedCount;
  }

  /** Resolves when every early-resolved send has completed (at once if none). */
  whenDrained(): Promise<void> {
    if (this.unfinishedCount === 0) return Promise.resolve();
    return new Promise((resolve) => this.drained.push(resolve));
  }

  /**
   * Does a tag send of `length` bytes go inline when its caller prefers an early send (`send`'s
   * `preferEarly`)? Such a send may also go straight to UCX (Endpoint.postSend, polling and
   * blocking modes): UCX copies bytes that few, as the record would. A forced protocol holds.
   */
  sendsEarly(length: number): boolean {
    return length <= this.selector.limits.inlineCapacity && this.selector.configuration.force["tag-send"] === undefined;
  }

  /**
   * Does a tag send of `length` bytes that does not go early take the zcopy protocol (the
   * selector's choice, or forced)? Then a caller that drives progress itself may hand the
   * caller's buffer to UCX straight from its call (Endpoint.postSend, polling and blocking
   * modes); it is counted here as a zcopy send.
   */
  takesZcopyDirect(length: number): boolean {
    if (this.selector.select("tag-send", length) !== "zcopy") return false;
    this.counts.zcopy++;
    return true;
  }

  /**
   * Polling and blocking modes (hybrid while its driver runs): a tag send whose protocol is
   * inline (up to the inline capacity) or zcopy (any size) goes to UCX from this call
   * (engine/direct-tags.ts) instead of through a submission record: no record written and read
   * back, no request entry, no completion record (issue 21). Its protocol is still the selector's:
   * - inline: its bytes staged as the record's would be (`sendCopy`); resolves now. One UCX could
   *   not finish in place reports its end as an early send's completion does (a failure to
   *   `sink`; closing waits for it: `unfinished`), one that failed at once fails `sink` now.
   * - zcopy: the caller's buffer by address; resolves now if UCX finished it in place (an eager
   *   send copies its bytes), else when UCX is done with the buffer (awaited through the
   *   worker's settled(), which drives it), and rejects if it fails. Held in a direct slot,
   *   it counts in its endpoint's sends in flight (a forced close's quiesce waits for it).
   * Undefined where it does not apply (bounce, zcopy-reg, another mode, records still in
   * the ring, UCX_TS_DIRECT_TAGS=0): the caller takes `send`. `direct` is asked only then.
   */
  sendDirect(direct: () => DirectTags | undefined, endpoint: number, bytes: Uint8Array, tagLo: number, tagHi: number, sink: SendFailureSink): Promise<void> | undefined {
    const protocol = this.directProtocol(bytes.length);
    const d = protocol === undefined ? undefined : direct();
    if (d === undefined) return undefined;
    const r = this.postDirect(d, protocol!, endpoint, bytes, tagLo, tagHi, sink);
    if (r === UCS_OK) return this.host.resolved();
    if (r < 0) return Promise.reject(sendError(r));
    const promise: Promise<void> = new Promise<void>((resolve, reject) =>
      d.settleWith(r, (status) => {
        if (status === UCS_OK) return resolve();
        // Cancelled by the worker's close: a send nobody awaits must not end the process (the
        // ring's requests do the same, requests.ts). Awaited, it still rejects.
        if (this.host.closing()) promise.catch(() => {});
        reject(sendError(status));
      }),
    );
    return this.host.settled(promise);
  }

  /**
   * `ep.sendMany`'s window straight to UCX (send-many-direct.ts), every message by address and
   * counted as zcopy; undefined where no direct call may go now (another mode, records still in
   * the ring, UCX_TS_DIRECT_TAGS=0): the caller takes the ring.
   */
  sendManyDirect(direct: () => DirectTags | undefined, endpoint: number, frames: readonly Uint8Array[], tagLo: number, tagHi: number): Promise<void> | undefined {
    const d = direct();
    if (d === undefined) return undefined;
    this.counts.zcopy += frames.length;
    return this.host.settled(sendManyDirect(d, this.windowHost, endpoint, frames, tagLo, tagHi));
  }

  /** What sendManyDirect needs of this path (made once). */
  private readonly windowHost = { addressOf: (bytes: Uint8Array) => this.addressOf(bytes), closing: () => this.host.closing() };

  /**
   * `sendDirect` for a caller without a Promise (Endpoint.sendRequest): the same choices, the
   * outcome told to `target` (done now for an inline send or one UCX finished in place, else
   * from inside the progress round that finishes it). Returns false where `sendDirect` would
   * return undefined (nothing was done: take `send`).
   */
  sendDirectInto(direct: () => DirectTags | undefined, endpoint: number, bytes: Uint8Array, tagLo: number, tagHi: number, sink: SendFailureSink, target: SendTarget): boolean {
    const protocol = this.directProtocol(bytes.length);
    const d = protocol === undefined ? undefined : direct();
    if (d === undefined) return false;
    const r = this.postDirect(d, protocol!, endpoint, bytes, tagLo, tagHi, sink);
    if (r === UCS_OK) target.succeed(undefined);
    else if (r < 0) target.fail(sendError(r));
    else d.settleWith(r, (status) => (status === UCS_OK ? target.succeed(undefined) : target.fail(sendError(status))));
    return true;
  }

  /**
   * The protocol a tag send of `length` bytes takes straight to UCX (sendDirect), or undefined
   * where it does not: inline up to the record's room, zcopy at any size (its buffer held in
   * the direct slot until UCX is done; the ring's record, request entry and completion record
   * cost 2.4-4.5 us of a 64 KiB round trip's 33-38, Node hybrid, 2026-12-07). Bounce and zcopy-reg
   * keep the ring's path (a chunk or a registration to give back on completion).
   */
  private directProtocol(length: number): "inline" | "zcopy" | undefined {
    const protocol = this.selector.select("tag-send", length);
    if (protocol === "zcopy") return protocol;
    return protocol === "inline" && length <= this.selector.limits.inlineCapacity ? protocol : undefined;
  }

  /**
   * Post a tag send through `d` (counted under `protocol`). Returns UCS_OK when the caller
   * may reuse its buffer now (inline: its bytes staged; an inline send UCX keeps reports its end
   * as an early send's completion does, to `sink`), a negative status when UCX failed a zcopy send
   * now, else the direct request id of a zcopy send UCX keeps (`settleWith` takes it).
   */
  private postDirect(d: DirectTags, protocol: "inline" | "zcopy", endpoint: number, bytes: Uint8Array, tagLo: number, tagHi: number, sink: SendFailureSink): number {
    this.counts[protocol]++;
    if (protocol === "zcopy") return d.send(endpoint, this.addressOf(bytes), bytes.length, tagLo, tagHi, bytes);
    const r = d.sendCopy(endpoint, bytes, tagLo, tagHi);
    if (r > 0) {
      this.unfinishedCount++;
      d.settleWith(r, (status) => this.arrived(sink, status));
    } else if (r < 0) sink.failAfterSend(r);
    return UCS_OK;
  }

  send(
    op: number,
    operation: Operation,
    endpoint: number,
    bytes: Uint8Array,
    tagLo: number,
    tagHi: number,
    what: string,
    sink: SendFailureSink,
    /**
     * Inline whenever the bytes fit a record (unless a protocol is forced for `operation`): for
     * a caller that waits for the send's completion before it goes on (a collective's step), a
     * send that resolves at once spares it the completion's round through progress, whatever
     * the cost tables say of one message alone.
     */
    preferEarly = false,
    /**
     * Called from inside the progress call that delivers a successful completion of a send that
     * did not resolve early (zcopy, zcopy-reg), before its Promise settles: a caller polling
     * synchronously for its step (a collective's large send) sees the send done in that poll,
     * where the Promise would only settle a microtask after the poll loop gives up. Failures
     * still reject the Promise only.
     */
    onDone?: () => void,
  ): { id: number; promise: Promise<void>; early?: boolean } {
    const length = bytes.length;
    const protocol = preferEarly && length <= this.selector.limits.inlineCapacity && this.selector.configuration.force[operation] === undefined ? "inline" : this.selector.select(operation, length);
    if (protocol === "inline") {
      const s = sendSubmission(op, endpoint, 0, length, tagLo, tagHi, SEND_FLAG_INLINE, 0);
      s.inline = bytes;
      return this.early(s, sink, "inline", -1);
    }
    if (protocol === "bounce") {
      const chunk = this.pool.copyIn(bytes);
      if (chunk >= 0) {
        const address = this.pool.address(chunk);
        return this.early(sendSubmission(op, endpoint, address, length, tagLo, tagHi, SEND_FLAG_MEMH, BOUNCE_POOL_MEMORY), sink, "bounce", chunk);
      }
    }
    const address = this.addressOf(bytes);
    if (protocol === "zcopy-reg") {
      const memory = this.registrations.acquire(bytes);
      if (memory !== 0) {
        this.counts["zcopy-reg"]++;
        const s = sendSubmission(op, endpoint, address, length, tagLo, tagHi, SEND_FLAG_MEMH, memory);
        // The completion gives the registration back (a refused submission completes at once).
        const r = this.host.request(s, bytes, what, (_id, status) => {
          this.registrations.release(memory);
          if (status === UCS_OK) onDone?.();
        });
        return { id: r.id, promise: this.host.holdMemory(bytes, r.promise) };
      }
    }
    this.counts.zcopy++;
    // Handed to UCX now, not at the next round of progress: an eager send over shared memory
    // completes inside ucp_tag_send_nbx, and its Promise then resolves at once (Engine.submit);
    // `onDone` runs then too, or inside the progress call that completes it later.
    return this.host.request(sendSubmission(op, endpoint, address, length, tagLo, tagHi, 0, 0), bytes, what, onDone && ((_id, status) => status === UCS_OK && onDone()), true);
  }

  /**
   * A small active message: its data and header ride in the record together (data, then
   * header) and it resolves at once, as an inline tag send does (`send`). Undefined when they
   * do not fit a record together: the caller sends it by address.
   */
  amSendInline(endpoint: number, bytes: Uint8Array, header: Uint8Array, amId: number, amFlags: number, sink: SendFailureSink): { id: number; promise: Promise<void> } | undefined {
    const length = bytes.length;
    const total = length + header.length;
    if (total > INLINE_CAPACITY) return undefined;
    const s = sendSubmission(Op.AmSendInline, endpoint, 0, length, amId, amFlags, header.length, 0);
    // One scratch array serves every such send: the engine copies a record's inline bytes
    // before submit returns (into the ring, or into the copy it queues or posts).
    const scratch = this.amScratch;
    scratch.set(bytes, 0);
    scratch.set(header, length);
    s.inline = scratch.subarray(0, total);
    return this.early(s, sink, undefined, -1);
  }

  private readonly amScratch = new Uint8Array(INLINE_CAPACITY);

  /**
   * Submit a send whose bytes are already copied, and resolve it now. Its completion frees the
   * bounce chunk, reports a failure to the endpoint, and counts it done; a submission refused
   * (it throws) frees the chunk here.
   */
  private early(s: Submission, sink: SendFailureSink, protocol: SendProtocol | undefined, chunk: number): { id: number; promise: Promise<void>; early: true } {
    // Its completion may arrive inside requestDone (UCX finished the send in place). Without a
    // bounce chunk, one function per sink serves every send: a closure per send cost ~0.5 us
    // under keepNames (its __name wrapper, tsup.config.ts), as much as the UCX call.
    const onArrive =
      chunk >= 0
        ? (_id: number, status: number) => {
            this.pool.release(chunk);
            this.arrived(sink, status);
          }
        : this.arrivalFor(sink);
    this.unfinishedCount++;
    let id: number;
    try {
      id = this.host.requestDone(s, onArrive);
    } catch (e) {
      // Refused (the worker is closing): no completion will come.
      if (chunk >= 0) this.pool.release(chunk);
      this.finished();
      throw e;
    }
    if (protocol) this.counts[protocol]++; // tag and stream sends (active messages are not counted)
    // `early`: resolved already, which a caller that counts completions itself can use at once.
    return { id, promise: this.host.resolved(), early: true };
  }

  /** The completion of an early send to `sink` arrived with `status`. */
  private arrived(sink: SendFailureSink, status: number): void {
    if (status !== UCS_OK) sink.failAfterSend(status); // the sink tells a lost send from one given up
    this.finished();
  }

  /** Each sink's arrival function for early sends without a chunk, made once. */
  private readonly arrivals = new WeakMap<SendFailureSink, (id: number, status: number) => void>();
  private arrivalFor(sink: SendFailureSink): (id: number, status: number) => void {
    let f = this.arrivals.get(sink);
    if (f === undefined) {
      f = (_id, status) => this.arrived(sink, status);
      this.arrivals.set(sink, f);
    }
    return f;
  }

  /** One early send is over: wake whenDrained() when it was the last. */
  private finished(): void {
    if (--this.unfinishedCount === 0) {
      const waiting = this.drained;
      this.drained = [];
      for (const resolve of waiting) resolve();
    }
  }
}
