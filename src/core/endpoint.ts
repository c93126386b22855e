/**
 * `Endpoint`: a connection to one peer worker. Tag sends and stream transfers go out on it;
 * `recv` here is the worker's tag receive tied to this endpoint's life (as UCXX does it): if the
 * endpoint fails, what the peer sent before it went away can still be received, and a receive
 * nothing can satisfy rejects with the endpoint's error instead of waiting for a message that
 * can no longer come (endpoint-drain.ts).
 */
import { callUserCallback } from "./user-callback.ts";
import { asBytes, type BufferLike } from "./buffers.ts";
import { submission } from "./engine/engine.ts";
import type { DirectTags } from "./engine/direct-tags.ts";
import { CLOSE_FLAG_FORCE, Op } from "./engine/records.ts";
import { closedError, invalidArgument, statusName, UcxError, unsupportedDevice, withCallerStack } from "./errors.ts";
import { UcxRequest } from "./ucx-request.ts";
import { ReceiveDrain } from "./endpoint-drain.ts";
import { quiesceBeforeForce } from "./endpoint-quiesce.ts";
import { encodeHeaders, HEADER_BYTES } from "./multi/header.ts";
import type { RemoteKey } from "./memory.ts";
import { EndpointRma, type AtomicOp, type AtomicOptions } from "./endpoint-rma.ts";
import { amSendHeader, type AmSendOptions } from "./am/send-header.ts";
import { protocolFlags } from "./am/send-protocol.ts";
import { UCX_CONSTANTS as C } from "../ffi/index.ts";
import type { AmMessage } from "./am/inbox.ts";
import { isDeviceBuffer, type DeviceBuffer } from "./cuda/device-buffer.ts";
import { amSendFromDevice, recvIntoDevice, sendFromDevice, sendMultiWithDevice, stagesDeviceFrames, type Frame } from "./cuda/transfers.ts";
import type { TagPort } from "./cuda/staged-multi-receive.ts";
import { describeStatus } from "./library.ts";
import { FULL_MASK, putTag, type Tag, type TagFields } from "./tag.ts";
import type { MultiRecvOptions, RecvOptions, RecvResult } from "./receive-options.ts";
import type { EndpointHost } from "./endpoint-host.ts";

/** UCP_AM_SEND_FLAG_REPLY: UCXX's receiver routes a message by its reply endpoint. */
const AM_SEND_FLAG_REPLY = C.UCP_AM_SEND_FLAG_REPLY;

/** Messages up to this size go as one submission in `sendMany`; a window with larger ones goes message by message. */
const SEND_MANY_SMALL_BYTES = 64 * 1024;

export type ErrorHandling = "peer" | "none";
export type { AtomicOp, AtomicOptions } from "./endpoint-rma.ts";
export type { AmSendOptions } from "./am/send-header.ts";

/** Where Endpoint.sendTag leaves a send's tag words. */
const sendTagWords: TagFields = { tagLo: 0, tagHi: 0, maskLo: 0, maskHi: 0 };

export class Endpoint {
  #error: UcxError | undefined;
  /** Set when the endpoint failed: its receives drain what UCX holds (endpoint-drain.ts). */
  #drain: ReceiveDrain | undefined;
  /** Sends that had resolved early and then never reached the peer (close() reports them). */
  #lostSends = 0;
  #forced = false;
  #closed = false;
  /** The failure came from UCX (its lanes are torn down already), not from the hello's link. */
  #failedInUcx = false;
  private closing: Promise<void> | undefined;
  /** Called once if UCX reports this endpoint failed (peer died, connection lost). */
  onError: ((error: UcxError) => void) | undefined;
  /** @internal An endpoint made through the hello: the connection whose end tells the peer we closed. */
  link: { close(): void } | undefined;
  /**
   * @internal The other end, when a worker connected to its own listener. UCX makes each of the
   * two endpoints a loop to itself (a message sent on one arrives as if from that same one), so
   * what arrives on this endpoint is routed to the partner, the end the sender meant.
   */
  loopPartner: Endpoint | undefined;

  /** @internal Made by `Worker.connect` and by listeners. */
  constructor(
    /** The worker that made this endpoint (typed by what the endpoint needs of it: endpoint-host.ts). */
    readonly worker: EndpointHost,
    readonly id: number,
    readonly errorHandling: ErrorHandling,
    /** The peer's host and port, for endpoints made by host/port or accepted by a listener. */
    readonly remote: { host: string; port: number } | undefined,
    /** Endpoints made through the hello: this side's receive scope and the peer's (hello/scopes.ts). */
    scopes?: { scope: number; peerScope: number },
    /**
     * Made by worker address (the hello's, or `connect(address)`), not through UCX's connection
     * manager: its tcp lanes half-close, so a forced close quiesces first (endpoint-quiesce.ts).
     */
    private readonly byAddress = false,
  ) {
    this.scope = scopes?.scope;
    this.peerScope = scopes?.peerScope;
    this.#rma = new EndpointRma(worker, id, (r) => this.track(r), () => this.#closed);
  }

  /** Remote keys, put/get and atomics on this endpoint (endpoint-rma.ts). */
  readonly #rma: EndpointRma;

  /**
   * The receive scope of an endpoint made through the hello (`listen()` / `connect({ host, port })`
   * between ucx-ts workers): its tag receives take only this peer's messages. Undefined for a raw
   * endpoint (by worker address, or the "ucx" protocol), whose tag traffic is UCX's worker-wide one.
   */
  readonly scope: number | undefined;
  /** The peer's receive scope, which this endpoint's tag sends carry. */
  readonly peerScope: number | undefined;

  /** The error UCX reported for this endpoint, if any. */
  get error(): UcxError | undefined {
    return this.#error;
  }

  get closed(): boolean {
    return this.#closed;
  }

  /**
   * Why a new operation is refused, as a rejected Promise, or undefined when it may go ahead.
   * A refusal rejects rather than throws: a send that races the peer's failure must end like any
   * other failed send, in the caller's `await` / `.catch`, not as a synchronous exception.
   */
  private refusal(): Promise<never> | undefined {
    const refused = this.refusalError();
    return refused && Promise.reject(refused);
  }

  /** `refusal`'s error itself, for the calls that report without a Promise (sendRequest). */
  private refusalError(): UcxError | undefined {
    return this.#error ?? this.receiveRefusalError();
  }

  /** Receives still work on a failed endpoint (what arrived can be read); not on a closed one. */
  private receiveRefusal(): Promise<never> | undefined {
    const refused = this.receiveRefusalError();
    return refused && Promise.reject(refused);
  }

  private receiveRefusalError(): UcxError | undefined {
    if (this.#closed || this.closing) return closedError("endpoint");
    if (this.worker.closed) return closedError("worker");
    return undefined;
  }

  private track<T>(r: { id: number; promise: Promise<T> }): Promise<T> {
    this.worker.ownRequest(r.id, this);
    return this.worker.settled(r.promise);
  }

  private trackReceive<T>(r: { id: number; promise: Promise<T> }): Promise<T> {
    this.worker.ownRequest(r.id, this, true);
    this.#drain?.adopt(r.id);
    const exposed = withCallerStack(this.worker.settled(r.promise));
    this.worker.exposeRequest(r.id, exposed);
    return exposed;
  }

  /** Past a failure's drain: a receive takes only a message UCX already holds. */
  private get queuedOnly(): boolean {
    return this.#drain?.over ?? false;
  }

  /**
   * Send `buffer` as one tagged message. Resolves when the buffer may be reused: at once for
   * sizes whose protocol copies the bytes (inline, bounce: see README, "Protocol selection"),
   * else when UCX is done with the buffer. On an endpoint made through the hello (`scope` set)
   * the tag is the peer endpoint's: it has 48 bits (a larger one is UCX_TS_INVALID_ARGUMENT) and
   * only the peer's `ep.recv` on this connection takes it; on a raw endpoint it is UCX's 64-bit tag.
   */
  send(buffer: BufferLike | DeviceBuffer, tag: Tag): Promise<void> {
    const refused = this.refusal();
    if (refused) return refused;
    if (isDeviceBuffer(buffer)) {
      return sendFromDevice(buffer, { host: (bytes) => this.send(bytes, tag), direct: (address, length, keep) => this.sendAt(address, length, tag, keep) });
    }
    const bytes = asBytes(buffer);
    const { tagLo, tagHi } = this.sendTag(tag);
    // Polling and blocking modes: a small send straight to UCX (SendPath.sendDirect).
    const direct = this.worker.sendPath.sendDirect(this.directTags, this.id, bytes, tagLo, tagHi, this);
    if (direct) return direct;
    return this.track(this.worker.sendPath.send(Op.TagSend, "tag-send", this.id, bytes, tagLo, tagHi, "ucp_tag_send_nbx", this));
  }

  /** The worker's direct tag calls (Worker.directTags), made once: sendDirect asks for them per send. */
  private readonly directTags = (): DirectTags | undefined => this.worker.directTags();

  /**
   * Receive a tagged message from this endpoint's peer into `buffer`: `mask` selects which of the
   * 48 tag bits must match (default all), and the result's `tag` is the peer's. Rejects with this
   * endpoint's error if it fails. Only endpoints made through the hello (`listen()` and
   * `connect({ host, port })` between ucx-ts workers) have a receive of their own: on an endpoint
   * made by worker address or with protocol "ucx", UCX's tag matching is worker-wide (any peer's
   * message would match), so this throws UCX_TS_UNSUPPORTED; use `worker.recv` there.
   */
  recv(buffer: BufferLike | DeviceBuffer, tag: Tag, mask: Tag = FULL_MASK, options: RecvOptions = {}): Promise<RecvResult> {
    const refused = this.receiveRefusal();
    if (refused) return refused;
    if (isDeviceBuffer(buffer)) return recvIntoDevice(buffer, (bytes, released) => this.recvReleased(bytes, tag, mask, options, released), (r) => r.length);
    return this.trackReceive(this.worker.tagRecv(buffer, tag, mask, options, this.receiveScope("recv"), this.queuedOnly));
  }

  /**
   * `recv` as a UcxRequest, without a Promise (`worker.recvRequest`; README, "Requests without
   * Promises"), tied to this endpoint's life as `recv` is: if the endpoint fails, the request
   * fails with its error (after the drain of what the peer sent first). Host memory only.
   */
  recvRequest(buffer: BufferLike, tag: Tag, mask: Tag = FULL_MASK): UcxRequest<RecvResult> {
    const refused = this.receiveRefusalError();
    if (refused) return UcxRequest.failed(refused);
    if (isDeviceBuffer(buffer)) return UcxRequest.failed(unsupportedDevice("recvRequest"));
    const { id, request } = this.worker.tagRecvRequest(buffer, tag, mask, this.receiveScope("recvRequest"), this.queuedOnly);
    if (id !== 0) {
      this.worker.ownRequest(id, this, true);
      this.#drain?.adopt(id);
    }
    return request;
  }

  /**
   * `send` as a UcxRequest, without a Promise: done once the buffer may be reused (for small
   * sizes inside this call: their bytes are copied), failed with the endpoint's error if it
   * fails. Host memory only.
   */
  sendRequest(buffer: BufferLike, tag: Tag): UcxRequest<void> {
    const refused = this.refusalError();
    if (refused) return UcxRequest.failed(refused);
    if (isDeviceBuffer(buffer)) return UcxRequest.failed(unsupportedDevice("sendRequest"));
    const bytes = asBytes(buffer);
    const { tagLo, tagHi } = this.sendTag(tag);
    const request = new UcxRequest<void>();
    // Polling and blocking modes: a small send straight to UCX, its bytes staged (no address of
    // the caller's view is taken: a new subarray per send made each a WeakMap entry).
    if (this.worker.sendPath.sendDirectInto(this.directTags, this.id, bytes, tagLo, tagHi, this, request)) return request;
    this.sendByRing(bytes, tagLo, tagHi, false, () => request.succeed(undefined), (e) => request.fail(e));
    return request;
  }

  /**
   * A tag send through the submission ring that reports by callback (postSend, sendRequest):
   * `done` at once where it resolved early (its bytes copied; `preferEarly`: whenever it fits a
   * record), else from inside the progress call that delivers its completion; `failed` when its
   * Promise rejects.
   */
  private sendByRing(bytes: Uint8Array, tagLo: number, tagHi: number, preferEarly: boolean, done: () => void, failed: (e: unknown) => void): void {
    const r = this.worker.sendPath.send(Op.TagSend, "tag-send", this.id, bytes, tagLo, tagHi, "ucp_tag_send_nbx", this, preferEarly, done);
    this.worker.ownRequest(r.id, this);
    if (r.early) done();
    else r.promise.catch(failed);
  }

  /** `recv` into staging memory: `released` runs once UCX no longer holds `bytes` (at once if it never did). */
  private recvReleased(bytes: Uint8Array, tag: Tag, mask: Tag, options: RecvOptions, released: () => void): Promise<RecvResult> {
    const refused = this.receiveRefusal();
    if (refused) {
      released(); // never reached UCX (a refused submission reports through `released` itself)
      return refused;
    }
    // A throw from tagRecv (or receiveScope) means the bytes never reached UCX: recvIntoDevice gives them back at once.
    const r = this.worker.tagRecv(bytes, tag, mask, options, this.receiveScope("recv"), this.queuedOnly, released);
    try {
      return this.trackReceive(r);
    } catch (e) {
      return Promise.reject(e); // posted: the bytes come back when UCX reports it (`released`)
    }
  }

  /**
   * @internal `send` of host bytes for a caller that drives progress itself while it waits (the
   * collectives' steps, src/ucg/step-spin.ts) and counts completions with callbacks: no
   * `worker.settled()` (in polling and blocking modes it started the worker's progress driver,
   * which ran a progress round inside the post and then a second loop beside the caller's), and
   * a send that fits a submission record goes inline whatever the cost tables say (SendPath
   * `preferEarly`) and calls `done` now (its bytes are copied), rather than after its completion
   * came back through progress and a microtask. Others call `done` inside the progress call
   * that delivers their completion, and `failed` when their Promise rejects.
   */
  postSend(bytes: Uint8Array, tag: Tag, done: () => void, failed: (e: unknown) => void): void {
    const refused = this.refusal();
    // Refused: reported a microtask later, never inside the caller's posting loop.
    if (refused) return void refused.then(done, failed);
    const { tagLo, tagHi } = this.sendTag(tag);
    // Polling and blocking modes: a send that would go inline goes straight to UCX instead
    // (engine/direct-tags.ts), which copies its bytes inside the call: no record, no request
    // entry, no completion to come. So does a larger one whose protocol is zcopy, by address:
    // the ring's record, request entry and completion record cost ~10 us of a 512 KiB send's
    // posting in a 2-rank alltoall's exchange step (2026-12-07); its buffer stays held in the
    // direct slot until UCX is done with it, and `done` runs inside the progress round that
    // finishes it. Counted in the endpoint's sends in flight (`requestsInFlightOf`), which a
    // forced close's quiesce waits for.
    const direct = this.worker.directTags();
    const path = this.worker.sendPath;
    if (direct && (path.sendsEarly(bytes.length) || path.takesZcopyDirect(bytes.length))) return this.sendDirect(direct, bytes, tagLo, tagHi, done, failed);
    // A send that did not resolve at once (a large one) reports success through `done` from
    // inside the progress call that completes it, as a plan's receive does (a step polling
    // synchronously sees it there; through the Promise it waited out the whole poll budget).
    this.sendByRing(bytes, tagLo, tagHi, true, done, failed);
  }

  private sendDirect(direct: DirectTags, bytes: Uint8Array, tagLo: number, tagHi: number, done: () => void, failed: (e: unknown) => void): void {
    const r = direct.send(this.id, this.worker.cachedAddressOf(bytes), bytes.length, tagLo, tagHi, bytes);
    if (r === UCS_OK) return done();
    if (r > 0) {
      // UCX keeps it (its buffer held in the slot): settled from inside the progress round that finishes it.
      return direct.settleWith(r, (status) => {
        if (status === UCS_OK) return done();
        this.failAfterSend(status);
        failed(UcxError.fromStatus(status, "ucp_tag_send_nbx", describeStatus));
      });
    }
    // Failed now (the endpoint failed in UCX): reported a microtask later, never inside the
    // caller's posting loop, as a refused send is.
    this.failAfterSend(r);
    const error = UcxError.fromStatus(r, "ucp_tag_send_nbx", describeStatus);
    void Promise.resolve().then(() => failed(error));
  }

  /**
   * Send a window of tagged messages with one call: each buffer is one message with `tag`, in
   * order, all handed to UCX in one submission (one record, one completion, one Promise, where
   * `send` costs one of each per message). Resolves when every buffer may be reused; the first
   * message that fails rejects it (one refused while posting stops the rest from being posted).
   * The peer receives them as ordinary messages: `recv` one by one, or `recvMany` for a window.
   * A window holding a message over 64 KiB goes message by message through `send` instead (its
   * registration cache matters there, and a Promise per large message costs nothing).
   */
  sendMany(buffers: readonly (BufferLike | DeviceBuffer)[], tag: Tag): Promise<void> {
    const refused = this.refusal();
    if (refused) return refused;
    if (!Array.isArray(buffers)) throw invalidArgument("sendMany needs an array of buffers");
    if (buffers.some(isDeviceBuffer)) return Promise.all(buffers.map((b) => this.send(b, tag))).then(() => undefined);
    const frames = buffers.map((b, i) => asBytes(b as BufferLike, `buffer ${i}`));
    const { tagLo, tagHi } = this.sendTag(tag);
    if (frames.length === 0) return Promise.resolve();
    // Large messages cost their bytes, not their Promise: they take the send path, whose
    // registration cache spares UCX registering each one (ring order keeps them in order).
    if (frames.some((f) => f.length > SEND_MANY_SMALL_BYTES)) return Promise.all(frames.map((f) => this.send(f, tag))).then(() => undefined);
    // Polling and blocking modes (hybrid while its driver runs): every message straight to UCX
    // from this call, one Promise for the window (proto/send-many-direct.ts).
    const direct = this.worker.sendPath.sendManyDirect(this.directTags, this.id, frames, tagLo, tagHi);
    if (direct) return direct;
    // The executor posts the batch's messages from a descriptor of (address, length) pairs, as
    // for sendMulti (batch-operations.ts), minus UCXX's headers.
    const descriptorBytes = this.descriptorOf(frames);
    return this.track(
      this.worker.request(
        submission({ op: Op.MultiSend, target: this.id, address: this.worker.addressOf(descriptorBytes), length: frames.length, tagLo, tagHi }),
        [descriptorBytes, frames],
        "sendMany",
        () => undefined,
      ),
    );
  }

  /** The (f64 address, f64 length) pairs the executor posts a window's messages from. */
  private descriptorOf(frames: readonly Uint8Array[]): Uint8Array {
    const descriptor = new Float64Array(2 * frames.length);
    for (let i = 0; i < frames.length; i++) {
      descriptor[2 * i] = this.worker.addressOf(frames[i]!);
      descriptor[2 * i + 1] = frames[i]!.length;
    }
    return new Uint8Array(descriptor.buffer);
  }

  /**
   * Receive a window of tagged messages from this endpoint's peer with one call (the receiving
   * side of `sendMany`, or of any run of `send`s): `buffers[i]` takes the i-th message matching
   * `tag`/`mask`. Resolves with one result per buffer; the first failure (a message larger than
   * its buffer, this endpoint's error, an abort) rejects and cancels the rest. As `recv`, only on
   * an endpoint made through the hello; elsewhere use `worker.recvMany`.
   */
  recvMany(buffers: readonly BufferLike[], tag: Tag, mask: Tag = FULL_MASK, options: RecvOptions = {}): Promise<RecvResult[]> {
    const refused = this.receiveRefusal();
    if (refused) return refused;
    return this.trackReceive(this.worker.tagRecvMany(buffers, tag, mask, options, this.receiveScope("recvMany"), this.queuedOnly));
  }

  /**
   * @internal A tag send of memory UCX reads itself (device memory on a UCX with CUDA support):
   * straight to ucp_tag_send_nbx, never through the send path's JavaScript copies.
   */
  sendAt(address: number, length: number, tag: Tag, keep: object): Promise<void> {
    const refused = this.refusal();
    if (refused) return refused;
    const { tagLo, tagHi } = this.sendTag(tag);
    return this.track(this.worker.request(submission({ op: Op.TagSend, target: this.id, address, length, tagLo, tagHi }), keep, "ucp_tag_send_nbx", () => undefined));
  }

  /**
   * The tag words of a send on this endpoint, scoped to the peer's endpoint where there is one,
   * in an object shared by every send (read them at once): an array per send was garbage.
   */
  private sendTag(tag: Tag): Readonly<TagFields> {
    putTag(sendTagWords, tag, this.peerScope);
    return sendTagWords;
  }

  /** This endpoint's receive scope; a raw endpoint has none, and its receives are refused. */
  private receiveScope(operation: string): number {
    if (this.scope !== undefined) return this.scope;
    throw new UcxError(
      "UCX_TS_UNSUPPORTED",
      `ep.${operation}: this endpoint was made by worker address or with protocol "ucx", so it has no receive of its own ` +
        `(UCX matches tags worker-wide: another peer's message could be taken); use worker.${operation}(), the worker-wide receive`,
    );
  }

  /**
   * Send several buffers as one multi-buffer batch (UCXX's `tagMultiSend`, Python
   * `send_multi`): UCXX's headers (1,209 bytes per 100 frames), then every frame, all as tag
   * messages with `tag`, posted at once. Resolves when every buffer may be reused. The peer
   * receives them with `recvMulti(tag)` (or UCXX's `recv_multi`) without knowing count or sizes.
   */
  sendMulti(buffers: readonly Frame[], tag: Tag): Promise<void> {
    const refused = this.refusal();
    if (refused) return refused;
    if (!Array.isArray(buffers)) throw invalidArgument("sendMulti needs an array of buffers");
    if (buffers.some(isDeviceBuffer)) {
      return sendMultiWithDevice(buffers, (bytes) => this.send(bytes, tag), (frames, device) => this.sendFrames(frames, device, tag));
    }
    return this.sendFrames(buffers.map((b, i) => asBytes(b as BufferLike, `frame ${i}`)), undefined, tag);
  }

  /** One MultiSend submission: headers (with each frame's device flag) and frames, posted at once. */
  private sendFrames(frames: Uint8Array[], device: readonly boolean[] | undefined, tag: Tag): Promise<void> {
    const { tagLo, tagHi } = this.sendTag(tag);
    const headers = encodeHeaders(frames.map((f, i) => ({ size: f.length, device: device?.[i] ?? false })));
    const count = headers.length / HEADER_BYTES + frames.length;
    // The descriptor the executor reads: (address, length) of every message, headers first.
    const descriptor = new Float64Array(2 * count);
    const headerAddress = this.worker.addressOf(headers);
    let m = 0;
    for (let h = 0; h < headers.length; h += HEADER_BYTES) {
      descriptor[m++] = headerAddress + h;
      descriptor[m++] = HEADER_BYTES;
    }
    for (const f of frames) {
      descriptor[m++] = this.worker.addressOf(f);
      descriptor[m++] = f.length;
    }
    const descriptorBytes = new Uint8Array(descriptor.buffer);
    return this.track(
      this.worker.request(
        submission({ op: Op.MultiSend, target: this.id, address: this.worker.addressOf(descriptorBytes), length: count, tagLo, tagHi }),
        [descriptorBytes, headers, frames],
        "sendMulti",
        () => undefined,
      ),
    );
  }

  /**
   * Receive a multi-buffer batch (see `Worker.recvMulti`) from this endpoint's peer, tied to this
   * endpoint's life: if the endpoint fails, the receive rejects with its error. Like `recv`, only
   * on an endpoint made through the hello; elsewhere use `worker.recvMulti`.
   */
  recvMulti(tag: Tag, options?: MultiRecvOptions & { deviceFrames?: "host" }): Promise<Uint8Array[]>;
  recvMulti(tag: Tag, options: MultiRecvOptions & { deviceFrames: "device" }): Promise<(Uint8Array | DeviceBuffer)[]>;
  recvMulti(tag: Tag, options: MultiRecvOptions = {}): Promise<(Uint8Array | DeviceBuffer)[]> {
    const refused = this.receiveRefusal();
    if (refused) return refused;
    if (stagesDeviceFrames(options)) {
      // Device frames through the receiving pipeline: each message of the batch is a receive of
      // this endpoint's own, tracked like `recv`, so the endpoint failing rejects the batch.
      const scope = this.receiveScope("recvMulti");
      const port: TagPort = {
        owner: this.worker,
        key: `${scope}:${tag}:${options.mask ?? FULL_MASK}`,
        recv: (bytes, t, m, released) => {
          // The batch posts as it goes (its next header, its next chunk once a slot frees, a
          // queued batch once the one before it has posted all): a receive posted after this
          // endpoint's close has swept its receives would wait, holding its slot and frames,
          // until the worker closed. Thrown, it never reaches UCX and the batch rejects.
          const refused = this.receiveRefusalError();
          if (refused) throw refused;
          const r = this.worker.tagRecv(bytes, t, m, {}, scope, this.queuedOnly, released);
          return { promise: this.trackReceive(r), cancel: () => this.worker.cancel(r.id) };
        },
      };
      return withCallerStack(this.worker.recvMultiStaged(tag, options, port));
    }
    return this.trackReceive(this.worker.tagRecvMulti(tag, options, this.receiveScope("recvMulti"), this.queuedOnly));
  }

  // --- active messages -----------------------------------------------------------------------

  /**
   * Send an active message (UCXX's `am_send`): `data` with UCXX's AM header on AM id 0 and
   * UCP_AM_SEND_FLAG_REPLY, so UCXX peers and ucx-ts peers receive it with `amRecv()`.
   * `header` is the user header; `callback` addresses a receiver callback (`onAmCallback`).
   * With `amId` it is a plain UCX active message instead: `header` goes as UCX's header, without
   * UCXX's wrapping, to the peer's `onAm(amId)` handler (or, for 0, to its UCXX decoding).
   */
  amSend(data: BufferLike | DeviceBuffer, options: AmSendOptions = {}): Promise<void> {
    const refused = this.refusal();
    if (refused) return refused;
    if (isDeviceBuffer(data)) {
      if (options.amId !== undefined) throw invalidArgument("amSend: device memory goes with UCXX's AM header (its memory type), not with a raw amId");
      return amSendFromDevice(data, (bytes, memoryType) => this.amSendBytes(bytes, options, memoryType));
    }
    return this.amSendBytes(asBytes(data), options, 0);
  }

  /** The AM send itself; `memoryType` goes in UCXX's header (0 host, 1 CUDA). */
  private amSendBytes(bytes: Uint8Array, options: AmSendOptions, memoryType: number): Promise<void> {
    const { amId, header } = amSendHeader(options, memoryType);
    const flags = AM_SEND_FLAG_REPLY | protocolFlags(options.protocol, memoryType);
    // Small (data and header fit a record): copied, resolved at once, as a small `send` is.
    const inline = memoryType === 0 ? this.worker.sendPath.amSendInline(this.id, bytes, header, amId, flags, this) : undefined;
    if (inline) return this.track(inline);
    return this.track(
      this.worker.request(
        submission({
          op: Op.AmSend,
          target: this.id,
          address: this.worker.addressOf(bytes),
          length: bytes.length,
          handle: this.worker.addressOf(header),
          flags: header.length,
          tagLo: amId,
          tagHi: flags,
        }),
        [bytes, header],
        "ucp_am_send_nbx",
        () => undefined,
        undefined,
        // Handed to UCX now, as a zcopy tag send is (SendPath): at the next round of progress
        // the first of a window's rendezvous messages left 12-20 us after the call.
        true,
      ),
    );
  }

  /**
   * Send a window of active messages with one call: each buffer is one message, in order, all
   * with the same `options` (user header, receiver callback or raw `amId`), handed to UCX in one
   * submission: one record, one completion and one Promise for the window, where `amSend` costs
   * one of each per message. The peer receives them as ordinary active messages (`amRecv` one by
   * one, `amRecvMany(n)` for a window). Resolves when every buffer (and the header) may be reused.
   * Unlike a small `amSend`, nothing is copied at the call: the buffers must stay unchanged until
   * the Promise settles. The first message that fails rejects the window with its UcxError (a
   * failed endpoint: the endpoint's error); one refused while the window is posted stops the
   * rest from being posted, and messages before a failure may have reached the peer. A rejected
   * window has still waited for every message UCX had taken, so its memory is free to reuse then
   * too. Device memory goes message by message through `amSend`.
   */
  amSendMany(buffers: readonly (BufferLike | DeviceBuffer)[], options: AmSendOptions = {}): Promise<void> {
    const refused = this.refusal();
    if (refused) return refused;
    if (!Array.isArray(buffers)) throw invalidArgument("amSendMany needs an array of buffers");
    if (buffers.some(isDeviceBuffer)) return Promise.all(buffers.map((b) => this.amSend(b, options))).then(() => undefined);
    const frames = buffers.map((b, i) => asBytes(b as BufferLike, `buffer ${i}`));
    const { amId, header } = amSendHeader(options, 0);
    const flags = AM_SEND_FLAG_REPLY | protocolFlags(options.protocol);
    if (frames.length === 0) return Promise.resolve();
    const descriptorBytes = this.descriptorOf(frames);
    return this.track(
      this.worker.request(
        submission({
          op: Op.AmSendMany,
          target: this.id,
          address: this.worker.addressOf(descriptorBytes),
          length: frames.length,
          handle: this.worker.addressOf(header),
          flags: header.length,
          tagLo: amId,
          tagHi: flags,
        }),
        [descriptorBytes, header, frames],
        "amSendMany",
        () => undefined,
        undefined,
        true, // handed to UCX now, as amSend's messages are
      ),
    );
  }

  /**
   * The next active message this peer sent (UCXX's `am_recv`): the library allocated its memory.
   * Messages that arrived before anyone asked wait, in order, within the worker's `am` bounds.
   */
  amRecv(options: RecvOptions = {}): Promise<AmMessage> {
    const refused = this.receiveRefusal();
    if (refused) return refused;
    return this.worker.amTake(this.id, options.signal);
  }

  /**
   * The next `count` active messages this peer sent, as one window (`worker.amRecvMany` for any
   * sender): one Promise for all, resolved once the last has arrived, in order. The first error in
   * their place (a refused or undeliverable message, this endpoint's failure once its queued
   * messages are taken, an abort) rejects the window and gives the messages it had collected back
   * to the front of the queue, so `amRecv`/`amRecvMany` get them later.
   */
  amRecvMany(count: number, options: RecvOptions = {}): Promise<AmMessage[]> {
    const refused = this.receiveRefusal();
    if (refused) return refused;
    return this.worker.amTakeMany(this.id, count, options.signal);
  }

  // --- remote memory access ------------------------------------------------------------------

  /** Unpack a peer's key (what its `MemoryHandle.packRkey()` returned) for use on this endpoint. */
  async unpackRkey(packed: BufferLike): Promise<RemoteKey> {
    const refused = this.refusal();
    if (refused) return refused;
    return this.#rma.unpackRkey(packed);
  }

  /** Write `buffer` into the peer's memory at `remoteAddress` (inside `rkey`'s region). */
  put(buffer: BufferLike | DeviceBuffer, remoteAddress: number, rkey: RemoteKey): Promise<void> {
    if (isDeviceBuffer(buffer)) return sendFromDevice(buffer, { host: (bytes) => this.put(bytes, remoteAddress, rkey) });
    const refused = this.refusal();
    if (refused) return refused;
    return this.#rma.rma(Op.Put, "put", buffer, remoteAddress, rkey);
  }

  /** Read the peer's memory at `remoteAddress` into `buffer` (its length says how much). */
  get(buffer: BufferLike | DeviceBuffer, remoteAddress: number, rkey: RemoteKey): Promise<void> {
    if (isDeviceBuffer(buffer)) return recvIntoDevice(buffer, (bytes) => this.get(bytes, remoteAddress, rkey), () => buffer.size);
    const refused = this.refusal();
    if (refused) return refused;
    return this.#rma.rma(Op.Get, "get", buffer, remoteAddress, rkey);
  }

  /**
   * An atomic operation on the 32- or 64-bit word at `remoteAddress` (aligned to its size):
   * `add`, `and`, `or`, `xor` (with `fetch: true` they resolve with the old value: fetch-add
   * and so on), `swap` (resolves with the old value), `cswap` (writes `value` if the word
   * equals `compare`; resolves with the old value). 64-bit values are BigInts on the way out
   * (Numbers or BigInts on the way in); 32-bit ones are Numbers (unsigned).
   */
  atomic(op: AtomicOp, remoteAddress: number, rkey: RemoteKey, value: number | bigint, options: AtomicOptions = {}): Promise<number | bigint | undefined> {
    const refused = this.refusal();
    if (refused) return refused;
    return this.#rma.atomic(op, remoteAddress, rkey, value, options);
  }

  /**
   * Send `buffer` on the endpoint's byte stream (resolves as `send` does). An empty buffer
   * resolves at once and sends nothing: a stream has no message boundaries, so 0 bytes do not
   * exist on it (and UCX 1.13 aborts the receiving process on a 0-byte stream send).
   */
  streamSend(buffer: BufferLike | DeviceBuffer): Promise<void> {
    const refused = this.refusal();
    if (refused) return refused;
    if (isDeviceBuffer(buffer)) return sendFromDevice(buffer, { host: (bytes) => this.streamSend(bytes) });
    const bytes = asBytes(buffer);
    if (bytes.length === 0) return Promise.resolve(); // never to UCX: see above
    return this.track(this.worker.sendPath.send(Op.StreamSend, "stream-send", this.id, bytes, 0, 0, "ucp_stream_send_nbx", this));
  }


  /**
   * Fill `buffer` entirely from the endpoint's byte stream (waitall). Resolves with its length.
   * Aborting rejects at once (an AbortError, see RecvOptions), but UCX cannot cancel a stream receive:
   * the buffer stays UCX's (held by ucx-ts) until data fills it or the endpoint closes, and the
   * stream's next bytes still go to it. Close the endpoint after aborting a stream receive.
   */
  streamRecv(buffer: BufferLike | DeviceBuffer, options: RecvOptions = {}): Promise<number> {
    const refused = this.receiveRefusal();
    if (refused) return refused;
    if (isDeviceBuffer(buffer)) return recvIntoDevice(buffer, (bytes) => this.streamRecv(bytes, options), (n) => n);
    const bytes = asBytes(buffer);
    // UCX drops a failed endpoint's stream data with the endpoint (see README, "Peer failure").
    if (this.#error) return Promise.reject(this.#error);
    // A worker connected to itself: the partner's UCX endpoint is the loop this side's bytes come in on.
    const from = this.loopPartner?.id ?? this.id;
    const r = this.worker.request(
      submission({ op: Op.StreamRecv, target: from, address: this.worker.addressOf(bytes), length: bytes.length }),
      bytes,
      "ucp_stream_recv_nbx",
      (length) => length,
    );
    this.worker.cancelOnAbort(r, options.signal, true, "streamRecv");
    return this.trackReceive(r);
  }

  /** Wait until everything sent on this endpoint has left (remote completion at transport level). */
  flush(): Promise<void> {
    const refused = this.refusal();
    if (refused) return refused;
    return this.track(this.worker.request(submission({ op: Op.EndpointFlush, target: this.id }), null, "ucp_ep_flush_nbx", () => undefined));
  }

  /** UCX's description of this endpoint's configuration (`ucp_ep_print_info`). */
  async info(): Promise<string> {
    const refused = this.refusal();
    if (refused) return refused;
    const out = new Uint8Array(64 * 1024);
    const length = await this.track(
      this.worker.request(
        submission({ op: Op.EndpointInfo, target: this.id, address: this.worker.addressOf(out), length: out.length }),
        out,
        "ucp_ep_print_info",
        (n) => n,
      ),
    );
    return new TextDecoder().decode(out.subarray(0, length));
  }

  /** The transports this endpoint's lanes use, as `transport/device` (e.g. `tcp/lo`, `sysv/memory`). */
  async transports(): Promise<string[]> {
    return parseTransports(await this.info());
  }

  /**
   * Close: by default flush what was sent, then close (`ucp_ep_close_nbx`). `force: true`
   * closes without waiting for the peer, failing what is still in flight; UCX allows that only
   * for endpoints with error handling "peer", so a "none" endpoint is always flushed and closed.
   * On an endpoint made by worker address (the hello's) a forced close first lets what is already
   * on its way finish, for at most 2 s (endpoint-quiesce.ts: UCX 1.13's tcp transport crashes
   * otherwise). Idempotent.
   */
  close(options: { force?: boolean } = {}): Promise<void> {
    if (this.worker.closed) {
      this.#closed = true;
      return Promise.resolve();
    }
    if (!this.closing) {
      this.#forced = options.force === true;
      const force = options.force === true || this.#error !== undefined;
      const submitClose = (): Promise<void> => {
        // The worker closed while this close quiesced: it closed the endpoint too.
        if (this.worker.closed) return Promise.resolve();
        const r = this.worker.request(submission({ op: Op.EndpointClose, target: this.id, flags: force ? CLOSE_FLAG_FORCE : 0 }), null, "ucp_ep_close_nbx", () => undefined);
        return this.worker.settled(r.promise);
      };
      const closed =
        force && this.byAddress && this.errorHandling === "peer" && !this.#failedInUcx
          ? quiesceBeforeForce(this.worker, () => this.worker.requestsInFlightOf(this, this.id), () => this.worker.request(submission({ op: Op.EndpointFlush, target: this.id }), null, "ucp_ep_flush_nbx", () => undefined), this.#error === undefined).then(submitClose)
          : submitClose();
      this.closing = closed
        .catch((e: UcxError) => {
          // Closing an endpoint whose peer is gone reports the peer's failure: it is closed all the same.
          // So does UCS_ERR_NOT_CONNECTED, which ucp_ep_close_nbx returns when the peer's own close
          // disconnected the lanes while ours flushed (both sides closing at once, as in the README's
          // example: seen once under Deno in a fresh-clone CI, 2026-11-27). Data that resolved early and
          // never arrived is still reported below (UCX_TS_DATA_LOST).
          if (!this.#error && e.code !== "UCS_ERR_CANCELED" && e.code !== "UCS_ERR_NOT_CONNECTED" && !isEndpointFailure(e.status)) throw e;
        })
        .finally(() => {
          if (this.worker.closed) {
            this.#closed = true;
            return;
          }
          // Tag and multi-buffer receives are the worker's in UCX (scoped tags): closing the
          // endpoint ends none of them, and one still posted kept its buffer, and its Promise
          // unsettled, until the worker closed (the soak's echo receives posted before a send
          // failed on a closed endpoint: up to 13.8 MiB after two minutes of faults, 2026-11-25).
          // Cancelled, each rejects with UCS_ERR_CANCELED and lets go of its buffer.
          for (const id of this.worker.unsettledRequestsOf(this, true)) this.worker.cancel(id);
          this.link?.close();
          this.#closed = true;
          this.worker.closeAmInbox(this.id, closedError("endpoint"));
          this.worker.forgetEndpoint(this.id);
        })
        .then(() => {
          // The goal of a close (the connection ends) is reached whether or not the peer left
          // first; what the application must hear is data it believed sent that never arrived.
          if (this.#lostSends > 0) {
            throw new UcxError(
              "UCX_TS_DATA_LOST",
              `${this.#lostSends} send(s) on ${this.describe()} had resolved but never reached the peer` +
                (this.#error ? `: ${this.#error.message}` : ""),
              { status: this.#error?.status, cause: this.#error },
            );
          }
        });
    }
    return this.closing;
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.close();
  }

  private describe(): string {
    return `endpoint ${this.remote ? `${this.remote.host}:${this.remote.port}` : this.id}`;
  }

  /**
   * @internal UCX reported the endpoint failed: what can no longer reach the peer (sends,
   * flushes, RMA) rejects now; receives drain what UCX holds first (endpoint-drain.ts).
   */
  fail(status: number, origin: "ucx" | "link" = "ucx"): void {
    if (origin === "ucx") this.#failedInUcx = true;
    if (this.#error) return;
    this.#error = UcxError.fromStatus(status, this.describe(), describeStatus);
    for (const id of this.worker.unsettledRequestsOf(this)) {
      this.worker.cancel(id);
      this.worker.settleEarly(id, status);
    }
    this.#drain = new ReceiveDrain(this.worker, this, status, this.#error, this.worker.amInbox(this.id));
    this.link?.close();
    callUserCallback(this.onError, this.#error);
  }

  /**
   * @internal A send that had resolved early did not complete in UCX (failed, or cancelled by
   * the close of a failed endpoint): its data is lost, which close() reports; a failure also
   * means the endpoint is not usable. Cancelled by a close the application forced, or by the
   * worker's close, it was given up knowingly.
   */
  failAfterSend(status: number): void {
    if (this.#closed || (status === UCS_ERR_CANCELED && (this.#forced || this.worker.closed))) return;
    this.#lostSends++;
    if (status !== UCS_ERR_CANCELED) this.fail(status);
  }

  /** @internal The worker is closing. */
  markClosed(): void {
    this.link?.close();
    this.#closed = true;
  }
}

const UCS_OK = 0;
const UCS_ERR_CANCELED = -16;

function isEndpointFailure(status: number | undefined): boolean {
  if (status === undefined) return false;
  const name = statusName(status);
  return name === "UCS_ERR_CONNECTION_RESET" || name === "UCS_ERR_ENDPOINT_TIMEOUT" || name === "UCS_ERR_UNREACHABLE" || name.endsWith("_FAILURE");
}

/** `transport/device` of every lane in `ucp_ep_print_info` output, without repeats. */
export function parseTransports(info: string): string[] {
  const found: string[] = [];
  for (const line of info.split("\n")) {
    if (!/lane\[\d+\]/.test(line)) continue;
    const m = /\b(\w+)\/([\w:.-]+?)(?:\.\d+)?\s/.exec(line.replace(/^.*?lane\[\d+\]:\s*\d+:/, ""));
    if (m && !found.includes(`${m[1]}/${m[2]}`)) found.push(`${m[1]}/${m[2]}`);
  }
  return found;
}

