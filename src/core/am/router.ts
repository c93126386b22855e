/**
 * Where an arriving active message goes, on the application thread: to a raw-id handler, to a
 * UCXX receiver callback, or to its endpoint's inbox (through UCXX's header, which it checks);
 * a receive from any endpoint takes the oldest unread message of all inboxes, or the next to
 * arrive that no endpoint's receive is waiting for.
 */
import { callUserCallback } from "../user-callback.ts";
import { UcxError } from "../errors.ts";
import type { Endpoint } from "../endpoint.ts";
import type { Payload } from "../engine/payload.ts";
import { describeStatus } from "../library.ts";
import { UCS_MEMORY_TYPE_CUDA } from "../../ffi/index.ts";
import { cudaAvailability } from "../cuda/runtime.ts";
import { deviceCopyOf } from "../cuda/transfers.ts";
import { AmHeaderError, decodeAmHeader, RECEIVED_PLAIN_HEADER } from "./header.ts";
import { AmInbox, type AmMessage, type AmQueueLimits } from "./inbox.ts";
import { AM_POOL_MIN_BYTES } from "../engine/am-buffer-pool.ts";

/** A handler for active messages: runs on the application thread. */
export type AmHandler = (message: AmMessage, endpoint: Endpoint | undefined) => void;

const UCS_OK = 0;

export class AmRouter {
  /** Unread active messages by endpoint id (0: a sender with no endpoint here). */
  private readonly inboxes = new Map<number, AmInbox>();
  /** Receives from any endpoint waiting for a message (`worker.amRecv()`). */
  private readonly anyInbox = new AmInbox({ maxQueuedMessages: 0, maxQueuedBytes: 0 });
  /** Handlers by raw UCX AM id and by UCXX receiver callback. */
  private readonly handlers = new Map<string, AmHandler>();
  private arrivals = 0;

  constructor(
    private readonly limits: Required<AmQueueLimits>,
    /** `AmMessage.release()`: the engine takes the memory back for later messages. */
    private readonly reuse: (buffer: ArrayBuffer) => void,
  ) {}

  static callbackKey(owner: string, id: number | bigint): string {
    return `${owner}\0${BigInt.asUintN(64, BigInt(id))}`;
  }

  static rawKey(amId: number): string {
    return `#${amId}`;
  }

  get handlerCount(): number {
    return this.handlers.size;
  }

  inbox(id: number): AmInbox {
    let inbox = this.inboxes.get(id);
    if (!inbox) this.inboxes.set(id, (inbox = new AmInbox(this.limits)));
    return inbox;
  }

  /**
   * Endpoint `id` is closed: its waiters reject with `error` and its inbox goes. Kept, every
   * inbox of a closed endpoint stayed in this map until the worker closed (a soak of
   * reconnections grew the heap by ~1.5 KiB per connection, measured 2026-11-25). Nothing is
   * routed to the id afterwards: a message from an endpoint the worker has forgotten goes to
   * inbox 0 (ActiveMessageHub.arrived), and the endpoint's own amRecv() refuses once closed.
   */
  closeInbox(id: number, error: UcxError): void {
    const inbox = this.inboxes.get(id);
    if (!inbox) return;
    inbox.close(error);
    this.inboxes.delete(id);
  }

  /** The next message of inbox `id`, or with -1 of any inbox in arrival order. */
  take(id: number, signal?: AbortSignal): Promise<AmMessage> {
    if (id >= 0) return this.inbox(id).take(signal);
    const oldest = this.oldestInbox();
    return oldest ? oldest.take() : this.anyInbox.take(signal);
  }

  /**
   * The next `count` messages of inbox `id` as one window, or with -1 of all inboxes in arrival
   * order: those queued now first, then those arriving that no endpoint's receive waits for.
   */
  takeMany(id: number, count: number, signal?: AbortSignal): AmMessage[] | Promise<AmMessage[]> {
    if (id >= 0) return this.inbox(id).takeMany(count, signal);
    const got: AmMessage[] = [];
    const seqs: number[] = [];
    const homes: AmInbox[] = [];
    while (got.length < count && !signal?.aborted) {
      const inbox = this.oldestInbox();
      if (!inbox) break;
      const seq = inbox.oldest!;
      const message = inbox.takeReady();
      if (message === undefined) {
        // An error in line ends the window; what it collected goes back in front of the error.
        const error = inbox.takeError();
        AmInbox.giveBack({ got, seqs, homes });
        return Promise.reject(error);
      }
      got.push(message);
      seqs.push(seq);
      homes.push(inbox);
    }
    return this.anyInbox.takeMany(count, signal, got, seqs, homes);
  }

  /** The inbox holding the oldest unread entry, if any. */
  private oldestInbox(): AmInbox | undefined {
    let oldest: AmInbox | undefined;
    for (const inbox of this.inboxes.values()) {
      const seq = inbox.oldest;
      if (seq !== undefined && (oldest === undefined || seq < oldest.oldest!)) oldest = inbox;
    }
    return oldest;
  }

  /** The next message of inbox `id` (-1: of any inbox), if one is there now; else undefined. */
  takeReady(id: number): AmMessage | undefined {
    if (id >= 0) return this.inboxes.get(id)?.takeReady();
    return this.oldestInbox()?.takeReady();
  }

  /** Register `handler` under `key`; returns the function that removes it. */
  addHandler(key: string, handler: AmHandler): () => void {
    if (this.handlers.has(key)) throw new UcxError("UCX_TS_INVALID_ARGUMENT", "a handler is already registered for that id");
    this.handlers.set(key, handler);
    return () => {
      if (this.handlers.get(key) === handler) this.handlers.delete(key);
    };
  }

  route(endpointId: number, endpoint: Endpoint | undefined, status: number, payload: Payload | undefined, amId: number): void {
    if (status !== UCS_OK) {
      return this.target(this.inbox(endpointId)).putError(UcxError.fromStatus(status, "active message receive", describeStatus), this.arrivals++);
    }
    const buffer = payload?.buffers?.[0] ?? new ArrayBuffer(0);
    const data = new Uint8Array(buffer, 0, payload?.length ?? buffer.byteLength);
    this.routeData(endpointId, endpoint, amId, data, payload?.header ?? new Uint8Array(0), this.releaser(buffer));
  }

  /** Where a message for endpoint inbox `own` goes: its own waiter first, else a waiter for any endpoint, else its queue. */
  private target(own: AmInbox): AmInbox {
    return own.waiting === 0 && this.anyInbox.waiting > 0 ? this.anyInbox : own;
  }

  /**
   * A message received: to its raw-id handler, or (AM id 0) through UCXX's header to a receiver
   * callback or an inbox. `release` gives its memory back (or does nothing).
   */
  routeData(endpointId: number, endpoint: Endpoint | undefined, amId: number, data: Uint8Array, raw: Uint8Array, release: () => void): void {
    const own = this.inbox(endpointId);
    const inbox = this.target(own);
    const seq = this.arrivals++;
    if (amId !== 0) {
      const handler = this.handlers.get(AmRouter.rawKey(amId));
      if (handler) run(handler, { data, header: raw, memoryType: 0, release }, endpoint);
      return; // no handler any more: dropped, as UCX itself does for an id nobody handles
    }
    // UCXX's plain host header, known without decoding (the engine's packed messages): host
    // data, no receiver callback, no user header.
    if (raw === RECEIVED_PLAIN_HEADER) return inbox.put({ data, header: new Uint8Array(0), memoryType: 0, callback: undefined, release }, seq, own);
    let header;
    try {
      header = decodeAmHeader(raw);
    } catch (e) {
      if (!(e instanceof AmHeaderError)) throw e;
      return inbox.putError(new UcxError("UCX_TS_PROTOCOL_ERROR", `amRecv: a message was refused: ${e.message}`), seq);
    }
    // UCX received it into host memory (the executor's allocator); device data moves to the GPU
    // here, where CUDA is available, else it stays in host memory unless the sender asked for an error.
    const toDevice = header.memoryType === UCS_MEMORY_TYPE_CUDA && cudaAvailability().available;
    if (header.memoryType !== 0 && !toDevice && header.memoryTypePolicy === 1) {
      const why = header.memoryType === UCS_MEMORY_TYPE_CUDA ? cudaAvailability().reason : "no allocator for it here";
      return inbox.putError(new UcxError("UCX_TS_UNSUPPORTED", `amRecv: a message for memory type ${header.memoryType} was refused: ${why}`), seq);
    }
    let device;
    try {
      device = toDevice ? deviceCopyOf(data) : undefined;
    } catch (e) {
      return inbox.putError(e instanceof UcxError ? e : new UcxError("UCX_TS_CUDA_ERROR", `amRecv: ${(e as Error).message}`), seq);
    }
    // Device data was copied to the GPU: its host memory is free to reuse at once.
    if (device) release();
    const base = { data: device ? new Uint8Array(0) : data, header: header.userHeader, memoryType: header.memoryType, callback: header.callback, release };
    const message: AmMessage = device ? { ...base, device } : base;
    if (header.callback) {
      const handler = this.handlers.get(AmRouter.callbackKey(header.callback.owner, header.callback.id));
      if (handler) return run(handler, message, endpoint);
    }
    inbox.put(message, seq, own);
  }

  /**
   * A message's `release()`: the first call hands `buffer` to the engine (which detaches it
   * here), later ones do nothing; memory too small to be worth reusing is left to the collector.
   */
  private releaser(buffer: ArrayBuffer): () => void {
    if (buffer.byteLength < AM_POOL_MIN_BYTES) return noRelease;
    let released = false;
    return () => {
      // Already moved (released, or transferred by the application itself): nothing to give.
      if (released || buffer.byteLength === 0) return;
      released = true;
      this.reuse(buffer);
    };
  }

  /** The worker is closed: every waiting receive rejects with `error`; handlers are dropped. */
  closeAll(error: UcxError): void {
    for (const inbox of [...this.inboxes.values(), this.anyInbox]) inbox.close(error);
    this.handlers.clear();
  }
}

/** `release()` of a message whose memory is not reused (small, or shared with others). */
export function noRelease(): void {}

function run(handler: AmHandler, message: AmMessage, endpoint: Endpoint | undefined): void {
  callUserCallback(handler, message, endpoint);
}
