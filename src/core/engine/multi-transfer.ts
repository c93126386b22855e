/**
 * Multi-buffer transfers on the executor's side: one submission becomes every tag message of a
 * batch, and the batch reports ONE completion when its last message is done (UCXX's
 * `tagMultiSend`/`tagMultiRecv`, wire format in ../multi/header.ts).
 *
 * Sending: the application thread has already encoded the headers; the submission points at a
 * descriptor of (address, length) pairs, headers first, then frames. All are posted at once on
 * one endpoint with one tag, so UCX keeps them in order and back to back.
 *
 * Receiving: post a 1,209-byte receive for the header, check it (format, frame count, total
 * size, header count against the limits) before anything is allocated, follow `next`, then
 * allocate every frame as an ArrayBuffer on this thread and post one receive per frame. The
 * buffers go back to the application thread with the completion (in thread mode, transferred,
 * not copied).
 *
 * Batches with the same tag must not interleave their header receives: a second batch's header
 * receive posted before the first batch's frame receives would match the first batch's first
 * frame. So receives are queued per (tag, mask) and only the head of a queue is in its header
 * phase; once its frame receives are posted (UCX matches in posting order) the next one starts.
 */
import { decodeHeader, HEADER_BYTES, HeaderFormatError, messagesOf, type FrameDescription } from "../multi/header.ts";
import { PartBatch, type PartDone, type PartPoster } from "./part-batch.ts";
import type { Payload } from "./payload.ts";

const UCS_OK = 0;
const UCS_ERR_MESSAGE_TRUNCATED = -9;
const UCS_ERR_CANCELED = -16;
/** Status of a batch that failed for a reason of ucx-ts's own; the payload says which. */
export const MULTI_LIBRARY_ERROR = -5;

/** Reports a batch's one completion: status, value (frames or bytes), and for receives the payload. */
export type BatchDone = (id: number, status: number, value: number, payload?: Payload) => void;

/** Limits a receiver applies to what a header may ask it to allocate. */
export interface MultiLimits {
  /** Total bytes of all frames of one batch. */
  readonly maxBytes: number;
  /** Headers in one `next` chain (100 frames each). */
  readonly maxHeaders: number;
}

/** Posts one message of a send batch (a tag send, or an active message); `onDone` may run before it returns. */
export type SendOne = (owner: object, address: number, length: number, onDone: PartDone) => void;

/** One sendMulti (or sendMany / amSendMany window): every message of the batch, posted at once. */
export class MultiSend extends PartBatch {
  private bytes = 0;

  constructor(
    poster: PartPoster,
    id: number,
    private readonly done: BatchDone,
  ) {
    super(poster, id);
  }

  /** Post the `count` messages described at `descriptor` (f64 address, f64 length pairs) with `send`. */
  start(descriptor: number, count: number, send: SendOne): void {
    const d = new Float64Array(2 * count);
    this.poster.copyIn(d, descriptor);
    const ended = (status: number) => this.partEnded(status);
    for (let i = 0; i < count && this.status === UCS_OK; i++) {
      this.partPosting();
      this.bytes += d[2 * i + 1]!;
      // A failed message stops the batch: sending frames after it would shift the receiver's
      // idea of which message is which.
      send(this, d[2 * i]!, d[2 * i + 1]!, ended);
    }
    this.allPosted();
  }

  protected finish(status: number): void {
    this.done(this.id, status, status === UCS_OK ? this.bytes : 0);
  }
}

/** One recvMulti: header chain, checks, allocation, frame receives, one completion. */
export class MultiReceive {
  private readonly header = new Uint8Array(HEADER_BYTES);
  private readonly frames: FrameDescription[] = [];
  private buffers: ArrayBuffer[] = [];
  private headers = 0;
  private totalBytes = 0;
  private remaining = 0;
  private posted = false;
  private status = UCS_OK;
  private error: { code: string; message: string } | undefined;
  /** The first header's sender tag: the rest of the batch is received with exactly it. */
  private senderTag: [number, number] | undefined;
  private released = false;
  private finished = false;

  constructor(
    private readonly poster: PartPoster,
    readonly id: number,
    private readonly tag: readonly [lo: number, hi: number, maskLo: number, maskHi: number],
    private readonly limits: MultiLimits,
    private readonly done: BatchDone,
    /** Called once this receive no longer needs its tag to itself (frames posted, or failed). */
    private readonly onRelease: (r: MultiReceive) => void,
    /**
     * The sender's endpoint failed: take only messages UCX holds already. A batch completes when
     * all its headers and frames are there; the first one missing fails it (nothing more comes).
     */
    private readonly ifQueued = false,
  ) {}

  /** Begin with the first header receive (when this receive is at the head of its tag queue). */
  start(): void {
    const [lo, hi, maskLo, maskHi] = this.tag;
    this.postHeader(lo, hi, maskLo, maskHi);
  }

  /** Cancel: in the header phase the header receive, in the frame phase every frame receive. */
  cancel(): void {
    if (this.status === UCS_OK && !this.error) this.status = UCS_ERR_CANCELED;
    this.poster.cancelParts(this);
  }

  /** Finish at once as cancelled: it never started (still queued behind another batch). */
  cancelQueued(): void {
    this.status = UCS_ERR_CANCELED;
    this.posted = true;
    this.check();
  }

  private postHeader(lo: number, hi: number, maskLo: number, maskHi: number): void {
    this.remaining++;
    this.poster.recvPart(this, this.poster.addressOf(this.header), HEADER_BYTES, lo, hi, maskLo, maskHi, (status, length, tLo, tHi) =>
      this.onHeader(status, length, tLo, tHi),
    this.ifQueued);
  }

  private onHeader(status: number, length: number, tagLo: number, tagHi: number): void {
    this.remaining--;
    if (status !== UCS_OK || this.status !== UCS_OK) {
      if (status === UCS_ERR_MESSAGE_TRUNCATED) {
        return this.fail("UCX_TS_PROTOCOL_ERROR", `a multi-buffer header is ${HEADER_BYTES} bytes; the message received was ${length}`);
      }
      return this.fail(null, this.status !== UCS_OK ? this.status : status);
    }
    let decoded;
    try {
      decoded = decodeHeader(this.header, length);
    } catch (e) {
      if (e instanceof HeaderFormatError) return this.fail("UCX_TS_PROTOCOL_ERROR", `header ${this.headers + 1}: ${e.message}`);
      throw e;
    }
    this.headers++;
    this.senderTag ??= [tagLo, tagHi];
    // Device frames are received into host memory like the others (the wire is the same); the
    // application thread moves them to the GPU when asked to (cuda/multi-frames.ts).
    for (const f of decoded.frames) this.totalBytes += f.size;
    if (this.totalBytes > this.limits.maxBytes) {
      return this.fail("UCX_TS_LIMIT_EXCEEDED", `the batch announces at least ${this.totalBytes} bytes; maxBytes is ${this.limits.maxBytes}`);
    }
    this.frames.push(...decoded.frames);
    if (decoded.next) {
      if (this.headers >= this.limits.maxHeaders) {
        return this.fail("UCX_TS_LIMIT_EXCEEDED", `the batch has more than ${this.limits.maxHeaders} headers (maxHeaders)`);
      }
      return this.postHeader(this.senderTag[0], this.senderTag[1], 0xffffffff, 0xffffffff);
    }
    this.receiveFrames();
  }

  private receiveFrames(): void {
    try {
      this.buffers = this.frames.map((f) => new ArrayBuffer(f.size));
    } catch (e) {
      this.buffers = [];
      return this.fail("UCX_TS_LIMIT_EXCEEDED", `cannot allocate the batch's ${this.totalBytes} bytes: ${(e as Error).message}`);
    }
    const [lo, hi] = this.senderTag!;
    for (const [i, buffer] of this.buffers.entries()) {
      // A staged device frame (multi/header.ts) comes in chunks: one receive per chunk, in order.
      const frame = this.frames[i]!;
      const base = this.poster.addressOf(new Uint8Array(buffer));
      const step = frame.chunkBytes ?? buffer.byteLength;
      for (let c = 0, at = 0; c < messagesOf(frame); c++, at += step) {
        const expected = Math.min(step, buffer.byteLength - at);
        this.remaining++;
        this.poster.recvPart(this, base + at, expected, lo, hi, 0xffffffff, 0xffffffff, (status, length) => this.onFrame(i, expected, status, length), this.ifQueued);
      }
    }
    this.release();
    this.posted = true;
    this.check();
  }

  private onFrame(index: number, expected: number, status: number, length: number): void {
    this.remaining--;
    if (this.status === UCS_OK && !this.error) {
      if (status === UCS_ERR_MESSAGE_TRUNCATED || (status === UCS_OK && length !== expected)) {
        this.error = { code: "UCX_TS_PROTOCOL_ERROR", message: `frame ${index} is ${length} bytes; its header said ${expected}` };
      } else if (status !== UCS_OK) this.status = status;
    }
    this.check();
  }

  private fail(code: string | null, statusOrMessage: number | string): void {
    if (code === null) this.status = statusOrMessage as number;
    else this.error = { code, message: statusOrMessage as string };
    this.buffers = [];
    this.release();
    this.posted = true;
    this.check();
  }

  private release(): void {
    if (this.released) return;
    this.released = true;
    this.onRelease(this);
  }

  private check(): void {
    if (!this.posted || this.remaining > 0 || this.finished) return;
    this.finished = true;
    if (this.error) {
      this.done(this.id, MULTI_LIBRARY_ERROR, 0, { id: this.id, ...this.error });
    } else if (this.status !== UCS_OK) {
      this.done(this.id, this.status, 0, { id: this.id });
    } else {
      const device = this.frames.some((f) => f.device) ? this.frames.map((f) => f.device) : undefined;
      this.done(this.id, UCS_OK, this.buffers.length, { id: this.id, buffers: this.buffers, ...(device ? { device } : {}) });
    }
    this.buffers = [];
  }
}

/**
 * Receives waiting for their turn, one queue per (tag, mask): only the head of each queue has a
 * header receive posted.
 */
export class MultiReceiveQueues {
  private readonly queues = new Map<string, MultiReceive[]>();
  private readonly keyOf = new Map<MultiReceive, string>();

  add(r: MultiReceive, tag: readonly number[]): void {
    const key = tag.join(":");
    let q = this.queues.get(key);
    if (!q) this.queues.set(key, (q = []));
    q.push(r);
    this.keyOf.set(r, key);
    if (q.length === 1) r.start();
  }

  /** `r` has its frames posted (or failed): the next receive on its tag may start. */
  release(r: MultiReceive): void {
    const key = this.keyOf.get(r);
    if (key === undefined) return;
    this.keyOf.delete(r);
    const q = this.queues.get(key)!;
    const wasHead = q[0] === r;
    q.splice(q.indexOf(r), 1);
    if (q.length === 0) this.queues.delete(key);
    else if (wasHead) q[0]!.start();
  }

  /** Is `r` still waiting behind another receive (no UCX request posted yet)? */
  isWaiting(r: MultiReceive): boolean {
    const key = this.keyOf.get(r);
    return key !== undefined && this.queues.get(key)![0] !== r;
  }
}
