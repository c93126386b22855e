/**
 * Active messages waiting for `amRecv()`, per endpoint, in arrival order, within a bound.
 *
 * The receiver of an active message posts no buffer: messages arrive whether anyone awaits them
 * or not, so unread ones queue here. The queue is bounded in messages and bytes; a message that
 * does not fit is refused (its memory is let go), and the reader learns it at that point of the
 * order: the `amRecv()` that reaches it rejects with UCX_TS_LIMIT_EXCEEDED, saying how many were
 * refused. A message whose header did not parse waits in line as an error the same way, so one
 * bad message fails one `amRecv()` and the endpoint goes on. `amRecvMany(count)` takes a window
 * of messages with one Promise; a window that rejects gives back the messages it had collected.
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
   * The data (host memory). A large message's (from 8 KiB) is in an ArrayBuffer of its own;
   * where the worker reused memory of a released message, that ArrayBuffer may be larger than
   * `data`: its bytes past `data.length` are not part of this message. Small messages that
   * arrived together share one ArrayBuffer, each its own range of it (`data.byteOffset`): copy
   * (`data.slice()`) rather than transfer `data.buffer`, which would empty the others too.
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

/**
 * A receive waiting for messages: `amRecv` (need 1) or an `amRecvMany` window (need n). What a
 * window collected stays listed with the inbox each message would have queued in (`homes`), so
 * that a window which ends without resolving (abort, failure) gives its messages back there.
 */
interface Waiter {
  /** Messages the window waits for in all; 0 for an `amRecv`, which resolves with the message itself. */
  readonly need: number;
  readonly got: AmMessage[];
  readonly seqs: number[];
  readonly homes: AmInbox[];
  resolve(value: AmMessage | AmMessage[]): void;
  reject(e: unknown): void;
}

/** What an `amRecv` waiter holds: never anything (it resolves with its first message). */
const NONE: never[] = [];

export class AmInbox {
  private readonly entries: Entry[] = [];
  private readonly waiters: Waiter[] = [];
  private messages = 0;
  private bytes = 0;
  /** The endpoint's error, once it failed: what a receive gets when the queue is empty. */
  private failed: UcxError | undefined;
  /** `close` ran: messages given back by a window are dropped, not queued (`unshift`). */
  private closed = false;

  constructor(private readonly limits: Required<AmQueueLimits>) {}

  get waiting(): number {
    return this.waiters.length;
  }

  /** Arrival number of the oldest entry (for receives from any endpoint), if any. */
  get oldest(): number | undefined {
    return this.entries[0]?.seq;
  }

  /**
   * A message arrived: hand it to the oldest waiter, or queue it if it fits, or refuse it.
   * `home` is the inbox it belongs to when this one only lends its waiters (receives from any
   * endpoint): a window that gives its messages back gives them there.
   */
  put(message: AmMessage, seq: number, home: AmInbox = this): void {
    const w = this.waiters[0];
    if (w) return this.feed(w, message, seq, home);
    const size = queuedBytes(message);
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

  /** A message that cannot be delivered (bad header): the receive that reaches it rejects. */
  putError(error: UcxError, seq: number): void {
    if (this.waiters.length > 0) this.putErrorToWaiter(error);
    else this.entries.push({ error, seq });
  }

  /** The next entry if it is a message, taken now; undefined if there is none or it is an error. */
  takeReady(): AmMessage | undefined {
    const e = this.entries[0];
    if (e === undefined || !("message" in e)) return undefined;
    this.entries.shift();
    this.messages--;
    this.bytes -= queuedBytes(e.message);
    return e.message;
  }

  /** The next entry, if it is an error (a refused or undeliverable message): taken, as its error. */
  takeError(): UcxError | undefined {
    const e = this.entries[0];
    if (e === undefined || "message" in e) return undefined;
    this.entries.shift();
    return this.entryError(e);
  }

  /** The next message (or the error in its place); waits when there is none, until `signal` aborts. */
  take(signal?: AbortSignal): Promise<AmMessage> {
    const e = this.entries.shift();
    if (!e) {
      if (signal?.aborted) return Promise.reject(abortError(signal, "amRecv"));
      if (this.failed) return Promise.reject(this.failed);
      return new Promise((resolve, reject) => this.wait(0, NONE, NONE, NONE, resolve as (v: unknown) => void, reject, signal, "amRecv"));
    }
    if ("message" in e) {
      this.messages--;
      this.bytes -= queuedBytes(e.message);
      return Promise.resolve(e.message);
    }
    return Promise.reject(this.entryError(e));
  }

  /**
   * The next `count` messages, as one window (`amRecvMany`): resolves once all have arrived, in
   * order. The first error in their place (a refused or undeliverable message, the endpoint's
   * failure, an abort) rejects the window, and the messages it had collected go back to the front
   * of the queue, so a later receive gets them: a window that rejects consumes no message.
   * `got`/`seqs`/`homes`: what a receive from any endpoint collected from other inboxes first.
   * Returns the messages themselves when all are here now.
   */
  takeMany(count: number, signal?: AbortSignal, got: AmMessage[] = [], seqs: number[] = [], homes: AmInbox[] = []): AmMessage[] | Promise<AmMessage[]> {
    const fail = (error: unknown): Promise<AmMessage[]> => {
      AmInbox.giveBack({ got, seqs, homes });
      return Promise.reject(error);
    };
    if (signal?.aborted) return fail(abortError(signal, "amRecvMany"));
    while (got.length < count) {
      const e = this.entries[0];
      if (e === undefined) break;
      const message = this.takeReady();
      if (message === undefined) return fail(this.takeError());
      got.push(message);
      seqs.push(e.seq);
      homes.push(this);
    }
    if (got.length === count) return got; // all there now: the caller settles it at once
    if (this.failed) return fail(this.failed);
    return new Promise((resolve, reject) => this.wait(count, got, seqs, homes, resolve as (v: unknown) => void, reject, signal, "amRecvMany"));
  }

  /** Queue a waiter for `need` messages (`got` already collected) until answered or aborted. */
  private wait(
    need: number,
    got: AmMessage[],
    seqs: number[],
    homes: AmInbox[],
    resolve: (value: unknown) => void,
    reject: (e: unknown) => void,
    signal: AbortSignal | undefined,
    what: string,
  ): void {
    const w: Waiter = { need, got, seqs, homes, resolve, reject };
    this.waiters.push(w);
    if (!signal) return;
    const onAbort = () => {
      const i = this.waiters.indexOf(w);
      if (i < 0) return; // already answered
      this.waiters.splice(i, 1);
      AmInbox.giveBack(w);
      reject(abortError(signal, what));
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
  }

  /** Hand `message` to waiter `w` (the oldest); it resolves once it has all it waits for. */
  private feed(w: Waiter, message: AmMessage, seq: number, home: AmInbox): void {
    if (w.need === 0) {
      this.waiters.shift();
      return w.resolve(message);
    }
    w.got.push(message);
    w.seqs.push(seq);
    w.homes.push(home);
    if (w.got.length < w.need) return;
    this.waiters.shift();
    w.resolve(w.got);
  }

  /**
   * A waiter ends without resolving: the messages it collected go back to the front of the
   * queues they came from, in their order, and to whatever receives wait there.
   */
  static giveBack(w: Pick<Waiter, "got" | "seqs" | "homes">): void {
    if (w.got.length === 0) return;
    for (let i = w.got.length - 1; i >= 0; i--) w.homes[i]!.unshift(w.got[i]!, w.seqs[i]!);
    for (const home of new Set(w.homes)) home.deliverQueued();
    w.got.length = 0;
    w.seqs.length = 0;
    w.homes.length = 0;
  }

  /**
   * Put a message taken earlier back at the front (it was queued before: no bound applies). Into
   * a closed inbox it is dropped, as `close` dropped what was queued then (a worker-wide window
   * aborted after this endpoint closed): its GPU memory freed, not kept where nobody can take it.
   */
  unshift(message: AmMessage, seq: number): void {
    if (this.closed) return dropDevice(message);
    this.messages++;
    this.bytes += queuedBytes(message);
    this.entries.unshift({ message, seq });
  }

  /** Queued entries to the waiters, oldest first (after messages came back from a window). */
  deliverQueued(): void {
    while (this.waiters.length > 0 && this.entries.length > 0) {
      const seq = this.entries[0]!.seq;
      const message = this.takeReady();
      if (message !== undefined) this.feed(this.waiters[0]!, message, seq, this);
      else this.putErrorToWaiter(this.takeError()!);
    }
    if (this.failed && this.entries.length === 0) this.fail(this.failed);
  }

  /** The oldest waiter gets `error` in its place, giving back what it had collected. */
  private putErrorToWaiter(error: UcxError): void {
    const w = this.waiters.shift()!;
    AmInbox.giveBack(w);
    w.reject(error);
  }

  /** The error a receive gets for an entry that is not a message. */
  private entryError(e: Exclude<Entry, { message: AmMessage }>): UcxError {
    if ("error" in e) return e.error;
    const { maxQueuedMessages, maxQueuedBytes } = this.limits;
    return new UcxError(
      "UCX_TS_LIMIT_EXCEEDED",
      `amRecv: ${e.refused} active message(s) were refused here: the queue of unread messages was full ` +
        `(maxQueuedMessages ${maxQueuedMessages}, maxQueuedBytes ${maxQueuedBytes})`,
    );
  }

  /**
   * The endpoint failed: every waiter rejects with `error` (nothing more will come to it), and so
   * does every later receive once the messages already queued have been taken.
   */
  fail(error: UcxError): void {
    this.failed ??= error;
    const waiters = this.waiters.splice(0);
    // Windows give back what they collected, the last first, so the first's messages lead.
    for (let i = waiters.length - 1; i >= 0; i--) AmInbox.giveBack(waiters[i]!);
    for (const w of waiters) w.reject(error);
  }

  /** Reject every waiter with `error` and forget what is queued (its GPU memory freed: nobody can take it now). */
  close(error: UcxError): void {
    this.closed = true;
    for (const w of this.waiters.splice(0)) w.reject(error);
    for (const e of this.entries) if ("message" in e) dropDevice(e.message);
    this.entries.length = 0;
    this.messages = 0;
    this.bytes = 0;
  }
}

/**
 * What a queued message holds, for the queue's byte bound: its data, or the size of the
 * DeviceBuffer the router copied it into (its host `data` is then empty). Counted as 0, device
 * messages queued without bound in bytes: GPU memory held up to maxQueuedMessages times the
 * largest message (a soak's wind-down found one held in the inbox of senders with no endpoint
 * here, 2026-12-07).
 */
function queuedBytes(message: AmMessage): number {
  return (message.device?.size ?? message.data.length) + message.header.length;
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
