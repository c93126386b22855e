/**
 * The receiving half of the staged pipeline: `recvMulti(tag, { deviceFrames: "device" })` where
 * UCX cannot move GPU memory itself (devicePath() "staged") and a GPU is here.
 *
 * The executor's multi-receive (engine/multi-transfer.ts) posts every frame receive at once into
 * host memory and reports the batch once, so frames could reach the GPU only after the last byte
 * arrived. Here the batch is received on the application thread instead, one tag receive per
 * message, in the wire's order (multi/header.ts): the headers, then each frame. A staged device
 * frame (isCUDA = log2(chunk), sent by ucx-ts in chunk-sized messages) is received chunk by chunk
 * into the slots of a StagingRing (pinned host memory, RECEIVE_DEPTH slots); as each chunk lands
 * its host-to-device copy is queued on a CUDA stream, and its slot is taken for a later chunk
 * once that copy's event has completed. So chunk k+1 arrives while chunk k is copied to the GPU.
 * Nothing new travels: the sender already cuts frames into chunks and says so in the header, so
 * the two sides agree with no configuration, and a UCXX sender's frames (isCUDA 0 or 1, one
 * message each) are received as before (a device one into one pinned buffer, then one copy).
 *
 * UCX matches receives with the same tag in posting order, and receives are posted here only as
 * slots free up; so a later batch on the same tag (and endpoint scope) waits until this one has
 * posted its last receive before posting its first header receive (`takeTurn`). The executor's
 * own multi-receives do not take part in that queue: a host-frames recvMulti on the same tag at
 * the same time is the caller's to avoid (docs/gpu.md).
 *
 * On failure (a short or long message, an abort, the endpoint failing, a CUDA error) every
 * receive still posted is cancelled, the copies in flight are waited for, the batch's device
 * memory is freed, and the Promise rejects. A slot goes back to the pinned pool only once UCX has
 * reported its receive (completed or cancelled): UCX may write into it until then.
 */
import { CUDA_MEMCPY } from "../../ffi/index.ts";
import { abortError } from "../abort.ts";
import { UcxError } from "../errors.ts";
import { decodeHeader, HEADER_BYTES, HeaderFormatError, messagesOf, type FrameDescription } from "../multi/header.ts";
import type { RecvResult } from "../receive-options.ts";
import { FULL_MASK, type Tag } from "../tag.ts";
import { withStream, type CopyStream } from "./copy-engine.ts";
import { DeviceBuffer } from "./device-buffer.ts";
import { acquirePinned, releasePinned, type PinnedBuffer } from "./pinned-pool.ts";
import { StagingRing } from "./staging-ring.ts";

/** Pinned slots per batch: one chunk arriving, one being copied to the GPU, one receive posted ahead. */
export const RECEIVE_DEPTH = 3;

/** One tag receive of the batch, as the worker or endpoint posted it. */
export interface PartReceive {
  readonly promise: Promise<RecvResult>;
  /** Ask UCX to cancel it (nothing when it has completed). */
  cancel(): void;
}

/** Where the batch's tag receives go: a worker (worker-wide tags) or an endpoint (its scope). */
export interface TagPort {
  /** Batches of one `owner` and `key` (tag, mask and scope) take turns (see above). */
  readonly owner: object;
  readonly key: string;
  /**
   * Post a tag receive into `bytes`. `released` runs once UCX no longer holds `bytes`: when its
   * completion arrives, also for a receive whose Promise was settled early (endpoint failure).
   */
  recv(bytes: Uint8Array, tag: Tag, mask: Tag, released: () => void): PartReceive;
}

export interface StagedMultiOptions {
  readonly maxBytes: number;
  readonly maxHeaders: number;
  readonly signal?: AbortSignal;
}

const turns = new WeakMap<object, Map<string, Promise<void>>>();

/** Wait for the batches before this one on `port`'s tag to have posted everything; `done` lets the next go. */
function takeTurn(port: TagPort): { ready: Promise<void>; done: () => void } {
  let queue = turns.get(port.owner);
  if (!queue) turns.set(port.owner, (queue = new Map()));
  const before = queue.get(port.key) ?? Promise.resolve();
  let open!: () => void;
  const mine = new Promise<void>((resolve) => (open = resolve));
  queue.set(port.key, mine);
  let done = false;
  return {
    ready: before,
    done: () => {
      if (done) return;
      done = true;
      open();
      if (queue.get(port.key) === mine) queue.delete(port.key);
    },
  };
}

const protocolError = (message: string) => new UcxError("UCX_TS_PROTOCOL_ERROR", `recvMulti: ${message}`);

/** Receive one batch, device frames straight onto the GPU through the pipeline. */
export async function recvMultiStaged(port: TagPort, tag: Tag, mask: Tag, options: StagedMultiOptions): Promise<(Uint8Array | DeviceBuffer)[]> {
  const { signal } = options;
  if (signal?.aborted) throw abortError(signal, "recvMulti");
  const turn = takeTurn(port);
  const batch = new StagedBatch(port, options);
  const onAbort = () => batch.fail(abortError(signal!, "recvMulti"));
  signal?.addEventListener("abort", onAbort, { once: true });
  try {
    await turn.ready;
    return await batch.run(tag, mask, turn.done);
  } finally {
    turn.done();
    signal?.removeEventListener("abort", onAbort);
  }
}

class StagedBatch {
  private failure: unknown;
  private failed = false;
  /** Receives UCX holds now (posted, not yet reported): cancelled on failure. */
  private readonly posted = new Set<PartReceive>();
  private ring: StagingRing | undefined;
  /** The first header's sender tag: every later message of the batch has exactly it. */
  private senderTag: Tag | undefined;

  constructor(
    private readonly port: TagPort,
    private readonly options: StagedMultiOptions,
  ) {}

  /** The first failure wins; everything still posted is cancelled, and no slot is handed out any more. */
  fail(e: unknown): void {
    if (this.failed) return;
    this.failed = true;
    this.failure = e;
    for (const r of this.posted) r.cancel();
    this.ring?.close(e);
  }

  async run(tag: Tag, mask: Tag, allPosted: () => void): Promise<(Uint8Array | DeviceBuffer)[]> {
    let frames: FrameDescription[] = [];
    try {
      frames = await this.headers(tag, mask);
    } catch (e) {
      this.fail(e);
    }
    if (this.failed) throw this.failure;
    const targets: (Uint8Array | DeviceBuffer)[] = [];
    try {
      for (const f of frames) targets.push(f.device ? DeviceBuffer.allocate(f.size) : new Uint8Array(f.size));
    } catch (e) {
      this.fail(e instanceof RangeError ? new UcxError("UCX_TS_LIMIT_EXCEEDED", `recvMulti: cannot allocate the batch's frames: ${e.message}`) : e);
    }
    if (!this.failed) await withStream((stream) => this.frames(frames, targets, stream, allPosted));
    this.ring?.close();
    if (!this.failed) return targets;
    // Every copy into the targets has ended (frames() waited for each part): the memory is ours to free.
    for (const t of targets) if (t instanceof DeviceBuffer) t.free();
    throw this.failure;
  }

  /** The header chain, checked against the limits before anything is allocated. */
  private async headers(tag: Tag, mask: Tag): Promise<FrameDescription[]> {
    const frames: FrameDescription[] = [];
    let total = 0;
    for (let count = 1; ; count++) {
      const header = new Uint8Array(HEADER_BYTES);
      const first = this.senderTag === undefined;
      const r = await this.receive(header, first ? tag : this.senderTag!, first ? mask : FULL_MASK, () => {}, () =>
        protocolError(`a multi-buffer header is ${HEADER_BYTES} bytes; a longer message was received`),
      );
      let decoded;
      try {
        decoded = decodeHeader(header, r.length);
      } catch (e) {
        if (e instanceof HeaderFormatError) throw protocolError(`header ${count}: ${e.message}`);
        throw e;
      }
      this.senderTag ??= r.tag;
      for (const f of decoded.frames) total += f.size;
      if (total > this.options.maxBytes) {
        throw new UcxError("UCX_TS_LIMIT_EXCEEDED", `recvMulti: the batch announces at least ${total} bytes; maxBytes is ${this.options.maxBytes}`);
      }
      frames.push(...decoded.frames);
      if (!decoded.next) return frames;
      if (count >= this.options.maxHeaders) {
        throw new UcxError("UCX_TS_LIMIT_EXCEEDED", `recvMulti: the batch has more than ${this.options.maxHeaders} headers (maxHeaders)`);
      }
    }
  }

  /** Post every frame's receives in order (chunks as slots free up), then wait for all of them. */
  private async frames(frames: readonly FrameDescription[], targets: readonly (Uint8Array | DeviceBuffer)[], stream: CopyStream, allPosted: () => void): Promise<void> {
    // (a loop, not Math.max(...frames): a batch may hold 100,000 frames, too many arguments)
    let slotBytes = 0;
    for (const f of frames) if (f.device && f.chunkBytes) slotBytes = Math.max(slotBytes, Math.min(f.chunkBytes, f.size));
    const ring = (this.ring = new StagingRing(slotBytes, RECEIVE_DEPTH));
    const parts: Promise<void>[] = [];
    /** The last one-message device frame: the next waits for it, so one whole pinned frame at most. */
    let lastWhole: Promise<void> = Promise.resolve();
    try {
      for (const [i, f] of frames.entries()) {
        const target = targets[i]!;
        if (!(target instanceof DeviceBuffer)) {
          parts.push(this.hostPart(target, i));
        } else if (!f.chunkBytes) {
          // isCUDA 1: one message (a UCXX sender, or ucx-ts on a UCX with CUDA): one pinned buffer
          // of the frame's size, taken once the previous such frame is on the GPU, so that a batch
          // of large UCXX frames does not pin all of them at once.
          await lastWhole;
          if (this.failed) break;
          const whole = acquirePinned(f.size);
          parts.push((lastWhole = this.devicePart(stream, target, 0, f.size, i, whole, () => releasePinned(whole))));
        } else {
          for (let c = 0, at = 0; c < messagesOf(f); c++, at += f.chunkBytes) {
            const slot = await ring.acquire(); // waits for a chunk's copy to free one
            parts.push(this.devicePart(stream, target, at, Math.min(f.chunkBytes, f.size - at), i, slot, () => ring.release(slot)));
          }
        }
        if (this.failed) break;
      }
    } catch (e) {
      this.fail(e);
    } finally {
      allPosted();
    }
    await Promise.all(parts); // each part catches its own failure
  }

  private hostPart(bytes: Uint8Array, index: number): Promise<void> {
    return this.receive(bytes, this.senderTag!, FULL_MASK, () => {}, () => this.sizeError(index, bytes.length)).then(
      (r) => {
        if (r.length !== bytes.length) throw this.sizeError(index, bytes.length, r.length);
      },
    ).catch((e) => this.fail(e));
  }

  /**
   * One device message: received into `slot`, then copied to `target` at `at` on the stream. The
   * slot is given back (`giveBack`) when UCX has reported the receive AND no copy uses it.
   */
  private devicePart(stream: CopyStream, target: DeviceBuffer, at: number, length: number, index: number, slot: PinnedBuffer, giveBack: () => void): Promise<void> {
    let ucxDone = false;
    let copyDone = false;
    const maybeGiveBack = () => {
      if (ucxDone && copyDone) giveBack();
    };
    const released = () => {
      ucxDone = true;
      maybeGiveBack();
    };
    return this.receive(slot.bytes.subarray(0, length), this.senderTag!, FULL_MASK, released, () => this.sizeError(index, length))
      .then(async (r) => {
        if (r.length !== length) throw this.sizeError(index, length, r.length);
        if (!this.failed) await stream.copy(target.address + at, slot.address, length, CUDA_MEMCPY.hostToDevice);
      })
      .catch((e) => this.fail(e))
      .finally(() => {
        copyDone = true;
        maybeGiveBack();
      });
  }

  private sizeError(index: number, expected: number, length?: number): UcxError {
    return protocolError(`frame ${index} is ${length ?? "more than " + expected} bytes; its header said ${expected}`);
  }

  /**
   * Post one receive, tracked until UCX reports it. A truncated message (longer than announced)
   * becomes the protocol error `truncated` gives.
   */
  private receive(bytes: Uint8Array, tag: Tag, mask: Tag, released: () => void, truncated: () => UcxError): Promise<RecvResult> {
    if (this.failed) {
      // Never handed to UCX (a slot can reach here after the failure, when its waiter was
      // served just before): its memory is free at once.
      released();
      return Promise.reject(this.failure);
    }
    let once = false;
    let r: PartReceive | undefined;
    const done = () => {
      if (once) return;
      once = true;
      if (r) this.posted.delete(r);
      released();
    };
    try {
      r = this.port.recv(bytes, tag, mask, done);
    } catch (e) {
      done(); // never reached UCX
      return Promise.reject(e);
    }
    if (!once) this.posted.add(r);
    return r.promise.catch((e: unknown) => {
      throw (e as UcxError)?.code === "UCS_ERR_MESSAGE_TRUNCATED" ? truncated() : e;
    });
  }
}
