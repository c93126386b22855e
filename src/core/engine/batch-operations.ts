/**
 * Multi-buffer batches on the executor's thread (multi-transfer.ts holds their logic): each
 * batch by its request id until its one completion, the receives waiting for their first
 * header, and the part poster a batch sends and receives its messages with. Parts are plain
 * tag messages, checked oldest first per batch (request-tracker.ts).
 */
import { ptrIsError, UCX_CONSTANTS as C, type Pointer } from "../../ffi/index.ts";
import { ManyReceive } from "./many-receive.ts";
import { MultiReceive, MultiReceiveQueues, MultiSend } from "./multi-transfer.ts";
import type { PartDone, PartPoster } from "./part-batch.ts";
import type { OpHost, OwnedRequest } from "./op-host.ts";
import type { Payload } from "./payload.ts";
import { tagArgument } from "./records.ts";
import type { RequestTracker } from "./request-tracker.ts";
import type { TagOperations } from "./tag-operations.ts";
import { amSendFlags } from "../am/send-protocol.ts";

const UCS_OK = 0;
const UCS_INPROGRESS = 1;
const UCS_ERR_NO_MESSAGE = -1;
const UCS_ERR_NOT_CONNECTED = -24;

export class BatchOperations {
  /** Multi-buffer batches by request id, until their one completion. */
  private readonly batches = new Map<number, MultiSend | MultiReceive | ManyReceive>();
  private readonly queues = new MultiReceiveQueues();
  readonly parts: PartPoster;

  constructor(
    private readonly h: OpHost,
    private readonly tracker: RequestTracker,
    private readonly tags: TagOperations,
  ) {
    this.parts = {
      sendPart: (owner, ep, address, length, tagLo, tagHi, onDone) => this.sendPart(owner, ep, address, length, tagLo, tagHi, onDone),
      recvPart: (owner, address, length, tagLo, tagHi, maskLo, maskHi, onDone, ifQueued) =>
        this.recvPart(owner, address, length, tagLo, tagHi, maskLo, maskHi, onDone, ifQueued),
      cancelParts: (owner) => tracker.cancelParts(h.worker, owner),
      addressOf: (bytes) => h.u.addressOf(bytes),
      copyIn: (into, address) => {
        if (into.byteLength > 0) h.u.memcpy(h.u.addressOf(into), address, into.byteLength);
      },
      copyOut: (address, from) => {
        if (from.byteLength > 0) h.u.memcpy(address, h.u.addressOf(from), from.byteLength);
      },
    };
  }

  /** No batch waits for its completion (takeover: see Executor.canLend). */
  get idle(): boolean {
    return this.batches.size === 0;
  }

  multiSend(id: number, ep: number, descriptor: number, count: number, tagLo: number, tagHi: number): void {
    const e = this.h.endpoint(ep);
    if (!e) return this.h.done(id, UCS_ERR_NOT_CONNECTED);
    if (e.failed) return this.h.done(id, e.failed);
    const batch = new MultiSend(this.parts, id, (bid, status, value) => this.batchDone(bid, status, value));
    this.batches.set(id, batch);
    batch.start(descriptor, count, (owner, address, length, onDone) => this.sendPart(owner, ep, address, length, tagLo, tagHi, onDone));
  }

  /**
   * `amSendMany`: one ucp_am_send_nbx per descriptor entry, all with the same header, AM id and
   * flags, one completion for the window (its first failure's status). The header and every
   * message's memory stay the application's until that completion: parts that UCX still holds
   * (its FIFO full, rendezvous) end before it.
   */
  amMultiSend(id: number, ep: number, descriptor: number, count: number, header: number, headerLength: number, amId: number, amFlags: number): void {
    const e = this.h.endpoint(ep);
    if (!e) return this.h.done(id, UCS_ERR_NOT_CONNECTED);
    if (e.failed) return this.h.done(id, e.failed);
    const batch = new MultiSend(this.parts, id, (bid, status, value) => this.batchDone(bid, status, value));
    this.batches.set(id, batch);
    batch.start(descriptor, count, (owner, address, length, onDone) => {
      // Only a peer-error-handling endpoint invalidates a failed rendezvous (request-handles.ts).
      const memh = e.peer ? this.h.handles.map(address, length) : 0;
      // No callback: parts are checked, oldest first (request-tracker.ts).
      const r: Pointer = this.h.u.ucp_am_send_nbx(e.handle, amId, header, headerLength, address, length, this.h.params(C.UCP_OP_ATTR_FIELD_FLAGS, amSendFlags(amFlags, length), memh));
      this.settleSendPart(owner, r, length, memh, onDone);
    });
  }

  multiRecv(id: number, tag: [number, number, number, number], limits: { maxBytes: number; maxHeaders: number }, ifQueued: boolean): void {
    const batch = new MultiReceive(
      this.parts,
      id,
      tag,
      limits,
      (bid, status, value, payload) => this.batchDone(bid, status, value, payload),
      (r) => this.queues.release(r),
      ifQueued,
    );
    this.batches.set(id, batch);
    this.queues.add(batch, tag);
  }

  /** `recvMany`: one receive per descriptor entry, one completion (many-receive.ts). */
  manyRecv(id: number, descriptor: number, count: number, tag: readonly [number, number, number, number], ifQueued: boolean): void {
    const batch = new ManyReceive(this.parts, id, (bid, status, value) => this.batchDone(bid, status, value));
    this.batches.set(id, batch);
    batch.start(descriptor, count, tag, ifQueued);
  }

  /** Cancel batch `id`, if it is one (a receive waiting for its first header ends at once). */
  cancel(id: number): void {
    const batch = this.batches.get(id);
    if (batch instanceof MultiReceive && this.queues.isWaiting(batch)) {
      this.queues.release(batch);
      batch.cancelQueued();
    } else batch?.cancel();
  }

  private batchDone(id: number, status: number, value: number, payload?: Payload): void {
    this.batches.delete(id);
    if (payload) this.h.deliver(payload); // first: the application takes it when the completion arrives
    this.h.done(id, status, value);
  }

  private sendPart(owner: object, ep: number, address: number, length: number, tagLo: number, tagHi: number, onDone: PartDone): void {
    const e = this.h.endpoint(ep);
    if (!e) return onDone(UCS_ERR_NOT_CONNECTED, 0, 0, 0);
    if (e.failed) return onDone(e.failed, 0, 0, 0);
    const memh = e.peer ? this.h.handles.map(address, length) : 0; // as amMultiSend's
    const r: Pointer = this.h.u.ucp_tag_send_nbx(e.handle, address, length, tagArgument(tagLo, tagHi), this.h.params(0, 0, memh));
    this.settleSendPart(owner, r, length, memh, onDone);
  }

  /** A send part's result: done in place, failed, or queued for checking; its own handle goes with it. */
  private settleSendPart(owner: object, r: Pointer, length: number, memh: Pointer, onDone: PartDone): void {
    if (r === 0 || ptrIsError(r)) {
      this.h.handles.release(memh);
      return r === 0 ? onDone(UCS_OK, length, 0, 0) : onDone(r, 0, 0, 0);
    }
    this.tracker.queuePart(owner, { request: r, kind: "send", memh, onDone });
  }

  private recvPart(
    owner: object,
    address: number,
    length: number,
    tagLo: number,
    tagHi: number,
    maskLo: number,
    maskHi: number,
    onDone: PartDone,
    ifQueued: boolean,
  ): void {
    if (ifQueued && !this.tags.queued(tagLo, tagHi, maskLo, maskHi)) return onDone(UCS_ERR_NO_MESSAGE, 0, 0, 0);
    // A receive's rendezvous may hand its buffer's rkey to the sender (request-handles.ts).
    const memh = this.h.handles.map(address, length);
    const r = this.tags.postTagRecv(address, length, tagLo, tagHi, maskLo, maskHi, memh);
    if (ptrIsError(r)) {
      this.h.handles.release(memh);
      return onDone(r, 0, 0, 0);
    }
    const part: OwnedRequest = { request: r, kind: "tagRecv", memh, onDone };
    // Already matched (an unexpected message was waiting) and the queue is empty: finish now
    // (one status check, not two: each is an FFI call).
    if (this.tracker.partsIdle(owner)) {
      const status = this.tracker.partStatus(part);
      if (status !== UCS_INPROGRESS) return this.tracker.finishPart(part, status, true);
    }
    this.tracker.queuePart(owner, part);
  }
}
