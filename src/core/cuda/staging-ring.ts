/**
 * The pinned slots of one pipelined staged transfer. A chunk takes a slot, and gives it back only
 * when both users of the slot are done with it: UCX (its receive completed, or was cancelled and
 * reported) and the copy engine (the host-to-device copy out of it finished, its event seen). A
 * chunk waiting for a slot is what bounds the pipeline: with `depth` 3, chunk k is received while
 * chunk k-1 is copied to the GPU and chunk k+1's receive is already posted.
 *
 * Slots come from the process's pinned pool (pinned-pool.ts) when first needed and go back to it
 * when the ring is closed and they are free, never while UCX or CUDA may still touch them.
 */
import { UcxError } from "../errors.ts";
import { acquirePinned, releasePinned, type PinnedBuffer } from "./pinned-pool.ts";

interface Waiter {
  resolve(slot: PinnedBuffer): void;
  reject(e: unknown): void;
}

export class StagingRing {
  private readonly idle: PinnedBuffer[] = [];
  private readonly waiting: Waiter[] = [];
  /** Slots taken from the pool so far (at most `depth`). */
  private made = 0;
  private closed = false;

  constructor(
    /** Bytes of each slot (the largest chunk it will hold). */
    readonly slotBytes: number,
    /** Slots at most: chunks in flight between the network and the GPU. */
    readonly depth: number,
  ) {}

  /** A free slot; waits while all `depth` are in use. Rejects once the ring is closed. */
  async acquire(): Promise<PinnedBuffer> {
    if (this.closed) throw new UcxError("UCX_TS_CLOSED", "staging: the transfer has ended");
    const kept = this.idle.pop();
    if (kept) return kept;
    if (this.made < this.depth) {
      const slot = acquirePinned(this.slotBytes); // throws UCX_TS_CUDA_ERROR when pinning fails
      this.made++;
      return slot;
    }
    return new Promise<PinnedBuffer>((resolve, reject) => this.waiting.push({ resolve, reject }));
  }

  /** `slot` is free again (neither UCX nor the copy engine uses it). */
  release(slot: PinnedBuffer): void {
    if (this.closed) return releasePinned(slot);
    const next = this.waiting.shift();
    if (next) next.resolve(slot);
    else this.idle.push(slot);
  }

  /**
   * No chunk takes a slot any more: idle slots go back to the pool now, busy ones when released;
   * a chunk still waiting for one is refused with `reason`.
   */
  close(reason: unknown = new UcxError("UCX_TS_CLOSED", "staging: the transfer has ended")): void {
    if (this.closed) return;
    this.closed = true;
    for (const slot of this.idle.splice(0)) releasePinned(slot);
    for (const w of this.waiting.splice(0)) w.reject(reason);
  }
}
