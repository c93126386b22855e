/**
 * `recvMany` on the executor's side: one submission posts a tag receive into each of the
 * caller's buffers, with one tag and mask, and reports ONE completion when the last is done.
 * UCX matches receives in the order they were posted, so buffer i takes the i-th matching
 * message. This is what makes a stream of small messages cheap: one record, one completion and
 * one Promise for the whole window, where single receives cost one of each per message.
 *
 * Each receive's length and sender tag are written into a copy of the descriptor, which goes
 * back into the caller's memory (pinned by its request until the completion arrives) just
 * before the batch's one completion (a copy, not a view: part-batch.ts says why). The first
 * receive that fails (truncation, cancel, endpoint error) cancels the ones still waiting, so the
 * batch ends with that status instead of waiting for messages that may never come.
 */
import { PartBatch, type PartPoster } from "./part-batch.ts";

const UCS_OK = 0;

/** Bytes per descriptor entry: f64 address, f64 capacity, f64 length received, u32 tag lo, u32 tag hi. */
export const MANY_ENTRY_BYTES = 32;

export class ManyReceive extends PartBatch {
  private received = 0;
  /** The descriptor's copy, and the caller's memory it goes back into. */
  private entries = new Float64Array(0);
  private descriptor = 0;

  constructor(
    poster: PartPoster,
    id: number,
    private readonly done: (id: number, status: number, value: number) => void,
  ) {
    super(poster, id);
  }

  /** Post `count` receives described at `descriptor` (see MANY_ENTRY_BYTES). */
  start(descriptor: number, count: number, tag: readonly [lo: number, hi: number, maskLo: number, maskHi: number], ifQueued: boolean): void {
    const f64 = (this.entries = new Float64Array((count * MANY_ENTRY_BYTES) / 8));
    const u32 = new Uint32Array(f64.buffer);
    this.descriptor = descriptor;
    this.poster.copyIn(f64, descriptor);
    for (let i = 0; i < count; i++) {
      this.partPosting();
      this.poster.recvPart(this, f64[4 * i]!, f64[4 * i + 1]!, tag[0], tag[1], tag[2], tag[3], (status, length, lo, hi) => {
        f64[4 * i + 2] = length;
        u32[8 * i + 6] = lo;
        u32[8 * i + 7] = hi;
        if (status === UCS_OK) this.received += length;
        this.partEnded(status);
      }, ifQueued);
    }
    this.allPosted();
  }

  /** The first failure ends the window: the receives still waiting may never be matched. */
  protected override firstFailure(): void {
    this.poster.cancelParts(this);
  }

  protected finish(status: number): void {
    this.poster.copyOut(this.descriptor, this.entries);
    this.done(this.id, status, this.received);
  }
}
