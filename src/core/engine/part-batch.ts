/**
 * The bookkeeping every batch of tag messages shares on the executor's side (`sendMulti`'s and
 * `sendMany`'s MultiSend, `recvMany`'s ManyReceive): one submission posts several UCX requests
 * (parts), and the batch reports ONE completion, with the first failure's status, once it has
 * posted all of them and the last has ended. A part may end before its post returns (UCX
 * completed it at once), so the batch only finishes after `allPosted()`.
 */
const UCS_OK = 0;

/** How one message of a batch ended: UCX status, and for receives the length and sender tag. */
export type PartDone = (status: number, length: number, tagLo: number, tagHi: number) => void;

/** What a batch needs from the executor: post parts, cancel them, see memory. */
export interface PartPoster {
  /** Post a tag send on endpoint `ep`; `onDone` may run before this returns. */
  sendPart(owner: object, ep: number, address: number, length: number, tagLo: number, tagHi: number, onDone: PartDone): void;
  /**
   * Post a tag receive; `onDone` may run before this returns. `ifQueued`: only if UCX holds a
   * matching message already, else `onDone(UCS_ERR_NO_MESSAGE)` (a failed endpoint's batch).
   */
  recvPart(
    owner: object,
    address: number,
    length: number,
    tagLo: number,
    tagHi: number,
    maskLo: number,
    maskHi: number,
    onDone: PartDone,
    ifQueued: boolean,
  ): void;
  /** Ask UCX to cancel every part of `owner` still in flight. */
  cancelParts(owner: object): void;
  addressOf(bytes: Uint8Array): number;
  /**
   * Copy `into.byteLength` bytes from `address` (a descriptor in the caller's memory) into
   * `into`; `copyOut` the other way. Copies, not views of that memory: a view (koffi.view,
   * Deno's getArrayBuffer, Bun's toArrayBuffer) is an external ArrayBuffer whose ~200 B of
   * malloc (node::Buffer's CallbackInfo, its backing store) are freed only by a full collection
   * of the isolate that made it, which V8 does not schedule for memory it cannot see: on a
   * progress thread, which allocates little JavaScript, one view per batch grew malloc by
   * 3.5 MiB per 100k soak operations until its next full collection (docs/testing.md).
   */
  copyIn(into: Float64Array, address: number): void;
  copyOut(address: number, from: Float64Array): void;
}

export abstract class PartBatch {
  /** Parts posted and not yet ended. */
  private remaining = 0;
  private posted = false;
  /** UCS_OK, or the first failed part's status. */
  protected status = UCS_OK;

  constructor(
    protected readonly poster: PartPoster,
    readonly id: number,
  ) {}

  /** Ask UCX to cancel every part still in flight: each ends with UCS_ERR_CANCELED. */
  cancel(): void {
    this.poster.cancelParts(this);
  }

  /** Count one part in before posting it (its end may come before the post returns). */
  protected partPosting(): void {
    this.remaining++;
  }

  /** One part ended with `status`; the first failure is the batch's status. */
  protected partEnded(status: number): void {
    this.remaining--;
    if (status !== UCS_OK && this.status === UCS_OK) {
      this.status = status;
      this.firstFailure();
    }
    this.check();
  }

  /** Every part is posted: the batch may finish now if they all ended already. */
  protected allPosted(): void {
    this.posted = true;
    this.check();
  }

  /** What a failed part means for the others (default: nothing; they end on their own). */
  protected firstFailure(): void {}

  /** The batch's one completion. */
  protected abstract finish(status: number): void;

  private check(): void {
    if (this.posted && this.remaining === 0) this.finish(this.status);
  }
}
