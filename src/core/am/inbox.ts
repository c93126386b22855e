/**
 * Active messages waiting for `amRecv()`, per endpoint, in arrival order, within a bound.
 *
 * The receiver of an active message posts no buffer: messages arrive whether anyone awaits them
 * or not, so unread ones queue here. The queue is bounded in messages and bytes; a message that
 * does not fit is refused (its memory is let go), and the reader learns it at that point of the
 * order: the `amRecv()` that reaches it rejects with UCX_TS_LIMIT_EXCEEDED, saying how many were
 * refused. A message whose header did not parse waits in line as an error the same way, so one
 * bad message fails one `amRecv()` and the endpoint goes on.
 *
 * When the endpoint fails, what is queued is still delivered, in order, and only then does
 * `amRecv()` reject with the endpoint's error (`fail`); closing it (`close`) drops the queue.
 */
import { UcxError } from "../errors.ts";
import { abortError } from "../abort.ts";
import type { AmCallbackAddress } from "./header.ts";
import type { DeviceBuffer } from "../cuda/device-buffer.ts";

/** One active message as the application receives it. */
export interface AmMessage {
  /**
   * The data (host memory), in an ArrayBuffer of its own. Where the worker reused memory of a
   * released message, that ArrayBuffer may be larger than `data`: its bytes past `data.length`
   * are not part of this message.
   */
  readonly data: Uint8Array;
  /** The sender's user header (UCXX's userHeader; for raw AM ids, UCX's header as sent). */
  readonly header: Uint8Array;
  /** UCS memory type the sender declared (0 host, 1 CUDA). */
  readonly memoryType: number;
  /**
   * Device memory (memoryType 1) received where CUDA is available: the data, on the GPU; `data`
   * is then empty. Where CUDA is not available the data stays in host memory, in `data` (UCXX's
   * fallback policy), unless the sender asked for an error instead.
   */
  readonly device?: DeviceBuffer;
  /** The receiver callback the sender addressed, when no handler was registered for it here. */
  readonly callback?: AmCallbackAddress;
  /**
   * Give `data`'s memory back to the worker, to receive later active messages into without
   * allocating (and zero-filling) new memory: large messages (from 8 KiB) at a high rate cost
   * several times less then. Optional; call it only when done with `data`: its ArrayBuffer is
   * detached at once (every view of it reads as empty), so the reused memory is never seen
   * through this message. A second call, or one on a small message, does nothing.
   */
  release(): void;
}

export interface AmQueueLimits {
  /** Unread messages an endpoint may hold (default 10,000). */
  readonly maxQueuedMessages?: number;
  /** Unread bytes an endpoint may hold (default 1 GiB). */
  readonly maxQueuedBytes?: number;
}

export const DEFAULT_AM_LIMITS: Required<AmQueueLimits> = { maxQueuedMessages: 10_000, maxQueuedBytes: 2 ** 30 };

type Entry = ({ message: AmMessage } | { error: UcxError } | { refused: number }) & { seq: number };

interface Waiter {
  resolve(m: AmMessage): void;
  reject(e: unknown): void;
}

export class AmInbox {
  private readonly entries: Entry[] = [];
  private readonly waiters: Waiter[] = [];
  private messages = 0;
  private bytes = 0;
  /** The endpoint's error, once it failed: what a receive gets when the queue is empty. */
  private failed: UcxError | undefined;

  constructor(private readonly limits: Required<AmQueueLimits>) {}

  get waiting(): number {
    return this.waiters.length;
  }

  /** Arrival number of the oldest entry (for receives from any endpoint), if any. */
  get oldest(): number | undefined {
    return this.entries[0]?.seq;
  }

  /** A message arrived: hand it to the oldest waiter, or queue it if it fits, or refuse it. */
  put(message: AmMessage, seq: number): void {
    const w = this.waiters.shift();
    if (w) return w.resolve(message);
    const size = message.data.length + message.header.length;
    if (this.messages >= this.limits.maxQueuedMessages || this.bytes + size > this.limits.maxQueuedBytes) {
      const last = this.entries[this.entries.length - 1];
      if (last && "refused" in last) last.refused++;
      else this.entries.push({ refused: 1, seq });
      dropDevice(message);
      return;
    }
    this.messages++;
    this.bytes += size;
    this.entries.push({ message, seq });
  }

  /** A message that cannot be delivered (bad header): the `amRecv()` that reaches it rejects. */
  putError(error: UcxError, seq: number): void {
    const w = this.waiters.shift();
    if (w) return w.reject(error);
    this.entries.push({ error, seq });
  }

  /** The next entry if it is a message, taken now; undefined if there is none or it is an error. */
  takeReady(): AmMessage | undefined {
    const e = this.entries[0];
    if (e === undefined || !("message" in e)) return undefined;
    this.entries.shift();
    this.messages--;
    this.bytes -= e.message.data.length + e.message.header.length;
    return e.message;
  }

  /** The next message (or the error in its place); waits when there is none, until `signal` aborts. */
  take(signal?: AbortSignal): Promise<AmMessage> {
    const e = this.entries.shift();
    if (!e) {
      if (signal?.aborted) return Promise.reject(abortError(signal, "amRecv"));
      if (this.failed) return Promise.reject(this.failed);
      return new Promise((resolve, reject) => {
        const w: Waiter = { resolve, reject };
        this.waiters.push(w);
        if (!signal) return;
        const onAbort = () => {
          const i = this.waiters.indexOf(w);
          if (i < 0) return; // already answered
          this.waiters.splice(i, 1);
          reject(abortError(signal, "amRecv"));
        };
        signal.addEventListener("abort", onAbort, { once: true });
        // Let go of the listener once answered: one signal may serve many receives.
        w.resolve = (m) => {
          signal.removeEventListener("abort", onAbort);
          resolve(m);
        };
        w.reject = (e) => {
          signal.removeEventListener("abort", onAbort);
          reject(e);
        };
      });
    }
    if ("message" in e) {
      this.messages--;
      this.bytes -= e.message.data.length + e.message.header.length;
      return Promise.resolve(e.message);
    }
    if ("error" in e) return Promise.reject(e.error);
    const { maxQueuedMessages, maxQueuedBytes } = this.limits;
    return Promise.reject(
      new UcxError(
        "UCX_TS_LIMIT_EXCEEDED",
        `amRecv: ${e.refused} active message(s) were refused here: the queue of unread messages was full ` +
          `(maxQueuedMessages ${maxQueuedMessages}, maxQueuedBytes ${maxQueuedBytes})`,
      ),
    );
  }

  /**
   * The endpoint failed: every waiter rejects with `error` (nothing more will come to it), and so
   * does every later receive once the messages already queued have been taken.
   */
  fail(error: UcxError): void {
    this.failed ??= error;
    for (const w of this.waiters.splice(0)) w.reject(error);
  }

  /** Reject every waiter with `error` and forget what is queued (its GPU memory freed: nobody can take it now). */
  close(error: UcxError): void {
    for (const w of this.waiters.splice(0)) w.reject(error);
    for (const e of this.entries) if ("message" in e) dropDevice(e.message);
    this.entries.length = 0;
    this.messages = 0;
    this.bytes = 0;
  }
}

/**
 * A message nobody will receive: the DeviceBuffer the router allocated for its data is freed here
 * (only this inbox ever held it). Without it, each device message queued for an endpoint that
 * failed or closed kept its GPU memory until the process ended.
 */
function dropDevice(message: AmMessage): void {
  try {
    message.device?.free();
  } catch {
    // cudaFree failed (the context is gone): nothing more to do for it here
  }
}
