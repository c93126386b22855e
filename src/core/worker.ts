/**
 * `Worker`: a UCP worker and its progress engine, the object everything else hangs from, as
 * users see it. Its parts live in worker/, one concern a file: the options and their defaults
 * (options.ts), starting the engine and the send path (engine-start.ts), the request path every
 * operation takes (request-path.ts), progress per mode (progress-driver.ts), endpoints and
 * connecting (endpoint-table.ts), listeners (listener-table.ts), registered memory and rkeys
 * (registered-memory.ts), tag receives (tag-receives.ts), active messages
 * (active-message-hub.ts), where completion records go (completion-routing.ts), the close
 * (shutdown.ts). This file wires them together.
 *
 * Endpoints, listeners and the hello see the worker only through the interfaces they declare
 * below it (endpoint-host.ts, listener.ts, hello/connection.ts): no module under it imports this.
 */
import type { BufferLike } from "./buffers.ts";
import { rememberDescriptorsBeforeUcx, workerClosed, workerOpened } from "./close-on-exec.ts";
import { isDeviceBuffer, type DeviceBuffer } from "./cuda/device-buffer.ts";
import { recvIntoDevice, stagesDeviceFrames } from "./cuda/transfers.ts";
import type { TagPort } from "./cuda/staged-multi-receive.ts";
import { DEFAULT_FEATURES, type Feature } from "./context.ts";
import type { Endpoint, ErrorHandling } from "./endpoint.ts";
import { workerUuid } from "./ucx-address-format.ts";
import type { Submitted } from "./endpoint-host.ts";
import type { DirectTags } from "./engine/direct-tags.ts";
import type { RequestHandles } from "./engine/request-handles.ts";
import type { AmAtomics } from "./engine/am-atomics.ts";
import { isProgressMode, PROGRESS_MODES, type ProgressMode, type Submission } from "./engine/engine.ts";
import { submission } from "./engine/engine.ts";
import { Op } from "./engine/records.ts";
import { ThreadedEngine, type TakeoverStats } from "./engine/threaded-engine.ts";
import { HybridEngine, type HybridStats } from "./engine/hybrid-engine.ts";
import { closedError, invalidArgument, UcxError, unsupportedDevice } from "./errors.ts";
import { UcxRequest } from "./ucx-request.ts";
import type { HelloAuthOptions } from "./hello/auth.ts";
import { drainScopeTwice } from "./hello/scope-drain.ts";
import type { ConnectProtocol, Listener, ListenOptions } from "./listener.ts";
import type { MemMapOptions, MemoryHandle } from "./memory.ts";
import type { AmInbox, AmMessage } from "./am/inbox.ts";
import type { AmHandler } from "./am/router.ts";
import type { ProtocolOptions } from "./proto/config.ts";
import type { SendProtocol } from "./proto/protocols.ts";
import type { ProtocolSelector } from "./proto/selector.ts";
import type { SendPath } from "./proto/send-path.ts";
import { checkLimits, DEFAULT_MULTI_LIMITS, type MultiRecvOptions, type RecvOptions, type RecvResult } from "./receive-options.ts";
import { FULL_MASK, type Tag } from "./tag.ts";
import { wrapWorkerAddress } from "./worker-address.ts";
import { ActiveMessageHub } from "./worker/active-message-hub.ts";
import { routeCompletion } from "./worker/completion-routing.ts";
import { makeSendPath, startEngine } from "./worker/engine-start.ts";
import { EndpointTable } from "./worker/endpoint-table.ts";
import { ListenerTable } from "./worker/listener-table.ts";
import { amLimitsFrom, defaultProgressMode, engineOptionsFrom, type WorkerOptions } from "./worker/options.ts";
import { ProgressDriver } from "./worker/progress-driver.ts";
import { RegisteredMemory } from "./worker/registered-memory.ts";
import { addressOf, cachedAddressOf, RequestPath } from "./worker/request-path.ts";
import { shutDown } from "./worker/shutdown.ts";
import { TagReceives } from "./worker/tag-receives.ts";

export type { WorkerOptions } from "./worker/options.ts";
export type { AmHandler } from "./am/router.ts";
export { defaultProgressMode } from "./worker/options.ts";
export { DEFAULT_MULTI_LIMITS, type MultiLimits, type MultiRecvOptions, type RecvOptions, type RecvResult } from "./receive-options.ts";

export class Worker {
  readonly progressMode: ProgressMode;
  readonly errorHandling: ErrorHandling;
  /** The UCP features this worker's context was created with. */
  features: readonly Feature[] = DEFAULT_FEATURES;
  /** @internal Sends' protocol selection and the bounce pool (proto/send-path.ts). */
  sendPath!: SendPath;
  readonly #driver: ProgressDriver;
  readonly #path: RequestPath;
  readonly #endpoints: EndpointTable;
  readonly #listeners: ListenerTable;
  readonly #memory: RegisteredMemory;
  #receives!: TagReceives;
  #am!: ActiveMessageHub;
  #closing: Promise<void> | undefined;

  private constructor(options: WorkerOptions) {
    this.progressMode = options.progressMode ?? defaultProgressMode();
    this.errorHandling = options.errorHandling ?? "peer";
    if (!isProgressMode(this.progressMode)) {
      throw invalidArgument(`progressMode must be one of ${PROGRESS_MODES.join(", ")}, got '${this.progressMode}'`);
    }
    if (!["peer", "none"].includes(this.errorHandling)) {
      throw invalidArgument(`errorHandling must be peer or none, got '${this.errorHandling}'`);
    }
    const settled = <T>(p: Promise<T>): Promise<T> => this.#driver.settled(p);
    this.#driver = new ProgressDriver(this.progressMode, () => this.#path.stopped);
    this.#path = new RequestPath(() => this.#listeners.size > 0 || this.#am.active, settled, (p) => this.#driver.resolvedNow(p));
    this.#endpoints = new EndpointTable(this, this.#path, settled);
    this.#listeners = new ListenerTable(this, this.#path, settled);
    this.#memory = new RegisteredMemory(this.#path, settled);
  }

/** Create a worker (and its UCX context); in thread mode this starts the progress thread. */
  static async create(options: WorkerOptions = {}): Promise<Worker> {
    rememberDescriptorsBeforeUcx(); // in thread mode this thread never loads UCX itself
    const w = new Worker(options);
    const multiLimits = checkLimits(options.multi ?? {}, DEFAULT_MULTI_LIMITS);
    w.features = options.features ?? DEFAULT_FEATURES;
    const settled = <T>(p: Promise<T>): Promise<T> => w.settled(p);
    w.#am = new ActiveMessageHub(amLimitsFrom(options), w.#path, settled, () => w.features);
    const engineOptions = engineOptionsFrom(options, w.progressMode);
    const targets = { path: w.#path, listeners: w.#listeners, endpoints: w.#endpoints, am: w.#am };
    const { engine, selector, pool } = await startEngine(w.progressMode, engineOptions, options.protocols, (ring, word) => routeCompletion(targets, ring, word));
    w.#path.engine = engine;
    w.#driver.engine = engine;
    w.#receives = new TagReceives(w.#path, settled, multiLimits, (id) => engine.takePayload(id));
    w.sendPath = makeSendPath(w.#path, { resolved: () => w.#driver.resolved(), settled: (p) => w.#driver.settled(p), holdMemory: (b, p) => w.holdMemory(b, p), registrationOf: (b) => w.#memory.registrationOf(b) }, selector, pool);
    workerOpened(); // UCX's epoll sets, eventfds and tcp listening sockets become close-on-exec
    return w;
  }

  get closed(): boolean {
    return this.#path.closed;
  }

  /** A closing or closed worker's refusal (rejects, never throws): RequestPath.refusal. */
  #refusal(): Promise<never> | undefined {
    return this.#path.refusal();
  }

  /** Live endpoints of this worker (made, accepted or through the hello, not yet closed): diagnostics. */
  get endpointCount(): number {
    return this.#endpoints.size;
  }

/**
   * Thread mode with takeover in effect (WorkerOptions.takeover, where the runtime allows it),
   * with its counts: rounds the application thread drove UCX in, times the progress thread lent
   * it the token, times it took it back because those rounds stopped, times the application
   * thread handed it back, and that thread's event-loop turns and parks meanwhile. null otherwise.
   */
  get takeoverStats(): TakeoverStats | null {
    const engine = this.#path.engine;
    return engine instanceof ThreadedEngine ? engine.takeoverStats : null;
  }

  /**
   * Hybrid mode's counts: the driver's parks, those ended by UCX's event, the start-up window
   * before the fd watcher thread is ready (parks then end on a 1 ms timeout, so while something
   * is awaited the driver polls through event-loop turns instead), and the microtask turns it
   * awaited (`yields`: few while it waits, engine/idle-spin.ts). A copy; null in other modes.
   */
  get hybridStats(): Readonly<HybridStats> | null {
    const engine = this.#path.engine;
    return engine instanceof HybridEngine ? { ...engine.stats } : null;
  }

  /** The protocol selection tables in use (what `ucx-ts proto-info` prints). */
  get protocols(): ProtocolSelector {
    return this.sendPath.selector;
  }

  /** What the send registration cache (protocol zcopy-reg) did: registrations made, reused, unmapped, refused. */
  get registrationStats(): Readonly<{ maps: number; unmaps: number; hits: number; failed: number; registeredBytes: number }> {
    const c = this.sendPath.registrations;
    return { ...c.stats, registeredBytes: c.registeredBytes };
  }

  /** How many sends each protocol carried since the worker started. */
  get protocolCounts(): Readonly<Record<SendProtocol, number>> {
    return { ...this.sendPath.counts };
  }

  /**
   * Change the protocol configuration (costs, forced protocols); the tables are rebuilt now,
   * never on the data path. The bounce pool's size is fixed when the worker is created.
   */
  configureProtocols(options: ProtocolOptions): void {
    this.protocols.configure(options); // the selector keeps the pool's and the cache's sizes
  }

  /** Requests whose completion has not arrived yet. */
  get pendingRequests(): number {
    return this.#path.requests.size;
  }

  // --- active messages (routing in am/router.ts, worker/active-message-hub.ts) ----------------

/**
   * Receive the next active message from any sender, in arrival order: the oldest unread one of
   * any endpoint's queue, or the next to arrive that no `ep.amRecv()` is waiting for.
   */
  amRecv(options: RecvOptions = {}): Promise<AmMessage> {
    const refused = this.#refusal();
    if (refused) return refused;
    return this.#am.take(-1, options.signal);
  }

/**
   * Receive the next `count` active messages from any sender as one window, in arrival order:
   * one Promise for all of them (what a stream of small messages needs; see `amRecv` for the
   * order). Resolves once the last has arrived; the first error in their place (a refused or
   * undeliverable message, an abort) rejects the window, and the messages it had collected go
   * back to the front of their queues for later receives. A count that is not an integer from 0
   * throws UCX_TS_INVALID_ARGUMENT.
   */
  amRecvMany(count: number, options: RecvOptions = {}): Promise<AmMessage[]> {
    const refused = this.#refusal();
    if (refused) return refused;
    return this.#am.takeMany(-1, count, options.signal);
  }

/**
   * Receive the messages peers address to UCXX receiver callback (owner, id) with
   * `amSend(data, { callback: { owner, id } })`. Returns a function that removes the handler.
   * "ucxx" is UCXX's own owner name and is refused.
   */
  onAmCallback(owner: string, id: number | bigint, handler: AmHandler): () => void {
    return this.#am.onAmCallback(owner, id, handler);
  }

/**
   * Receive UCX active messages with a raw AM id (1 to 65534; 0 carries UCXX's messages, 65535
   * ucx-ts's atomics over active messages):
   * UCX's plain AM model, the header as the sender gave it. Resolves once UCX has the handler;
   * the returned function removes it here (UCX keeps delivering; messages are then dropped).
   */
  onAm(amId: number, handler: AmHandler): Promise<() => void> {
    const refused = this.#refusal();
    if (refused) return refused;
    return this.#am.onAm(amId, handler);
  }

  // --- addresses, endpoints, listeners (worker/endpoint-table.ts, worker/listener-table.ts) ---

/**
   * This worker's UCP address: hand it to a peer, which connects with `connect(address)`.
   * It comes in ucx-ts's envelope (length and CRC-32 around UCX's bytes), so that a copy
   * corrupted or truncated on its way is refused with UCS_ERR_INVALID_ADDR instead of aborting
   * the peer inside UCX. `{ format: "ucx" }` gives UCX's plain bytes, for UCXX or C peers.
   */
  async address(options: { format?: "ucx-ts" | "ucx" } = {}): Promise<Uint8Array> {
    const format = options.format ?? "ucx-ts";
    if (format !== "ucx-ts" && format !== "ucx") throw invalidArgument(`address format must be 'ucx-ts' or 'ucx', got '${format}'`);
    const ucx = await this.#path.copyOut({ op: Op.WorkerAddress }, 4096, "ucp_worker_get_address");
    return format === "ucx" ? ucx : wrapWorkerAddress(ucx);
  }

/**
   * Connect to a peer, by its worker address (bytes from its `address()`) or by host and port
   * (a peer's `listen()`). By host and port the default protocol is ucx-ts's hello (README,
   * "Connecting"): the endpoint gets its own tag receive (`ep.recv`), and a connection that
   * cannot be made or is refused rejects with a typed error within 10 s. `protocol: "ucx"` is
   * UCX's client-server connection, for a UCX/UCXX listener. By worker address the endpoint is
   * raw: tags are UCX's, received with `worker.recv`.
   */
  connect(
    peer: BufferLike | { host: string; port: number; protocol?: ConnectProtocol },
    options: { errorHandling?: ErrorHandling; auth?: HelloAuthOptions } = {},
  ): Promise<Endpoint> {
    return this.#endpoints.connect(peer, options.errorHandling ?? this.errorHandling, options.auth);
  }

/**
   * Listen for connections on `host:port` (port 0: any free port, see `listener.port`).
   * Accepted endpoints go to `onConnection`, or to the listener's async iterator; connections
   * that could not be accepted to `onError`. The port speaks ucx-ts's hello unless
   * `protocol: "ucx"` asks for UCX's own listener (plain UCX/UCXX clients; on UCX 1.13 a TCP
   * client writing unexpected bytes to it aborts this process).
   */
  listen(options: ListenOptions = {}): Promise<Listener> {
    const refused = this.#refusal();
    if (refused) return refused;
    return this.#listeners.listen(options, this.errorHandling);
  }

  // --- registered memory (RMA: worker/registered-memory.ts) ------------------------------------

/**
   * Register memory with UCX so that peers can put, get and run atomics on it: `size` bytes that
   * ucx-ts allocates (zeroed), or the caller's buffer. The handle's `bytes` are the memory;
   * `packRkey()` gives the key a peer unpacks with `ep.unpackRkey()`.
   */
  memMap(memory: number | BufferLike, options: MemMapOptions = {}): Promise<MemoryHandle> {
    const refused = this.#refusal();
    if (refused) return refused;
    return this.#memory.memMap(memory, options);
  }

/** Wait until every atomic and put/get issued so far is ordered before later ones (ucp_worker_fence). */
  fence(): Promise<void> {
    const refused = this.#refusal();
    if (refused) return refused;
    return this.settled(this.#path.request(submission({ op: Op.WorkerFence }), null, "ucp_worker_fence", () => undefined).promise);
  }

  // --- tag matching (worker/tag-receives.ts) ---------------------------------------------------

/**
   * Receive a tagged message from any endpoint into `buffer`. `mask` selects which tag bits
   * must match (default: all). Resolves with the sender's tag and the length received; a
   * message larger than `buffer` rejects with UCS_ERR_MESSAGE_TRUNCATED.
   */
  recv(buffer: BufferLike | DeviceBuffer, tag: Tag, mask: Tag = FULL_MASK, options: RecvOptions = {}): Promise<RecvResult> {
    const refused = this.#refusal();
    if (refused) return refused;
    if (isDeviceBuffer(buffer)) {
      return recvIntoDevice(buffer, (bytes, released) => this.#receives.tagRecv(bytes, tag, mask, options, undefined, false, released).promise, (r) => r.length);
    }
    return this.#receives.tagRecv(buffer, tag, mask, options).promise;
  }

/**
   * `recv` as a UcxRequest, without a Promise: for a loop that drives progress itself (polling
   * mode's `progress()`, blocking mode's `wait()`) and reads the completion the moment that call
   * delivers it (`request.done`, `request.result()`); a Promise costs more than the UCX calls
   * of a small message (README, "Requests without Promises"). Host memory only.
   */
  recvRequest(buffer: BufferLike, tag: Tag, mask: Tag = FULL_MASK): UcxRequest<RecvResult> {
    if (this.#path.closed) return UcxRequest.failed(closedError("worker"));
    if (isDeviceBuffer(buffer)) return UcxRequest.failed(unsupportedDevice("recvRequest"));
    return this.#receives.tagRecvRequest(buffer, tag, mask).request;
  }

  /**
   * Receive a multi-buffer batch (UCXX's `tagMultiRecv`, Python `recv_multi`): the frames a
   * peer sent with `sendMulti` (or UCXX's `send_multi`) under `tag`, however many and however
   * large, allocated here as the headers announce them. Resolves with the frames in order.
   * Headers that are malformed or ask for more than the limits reject (UCX_TS_PROTOCOL_ERROR,
   * UCX_TS_LIMIT_EXCEEDED) before anything is allocated.
   */
  recvMulti(tag: Tag, options?: MultiRecvOptions & { deviceFrames?: "host" }): Promise<Uint8Array[]>;
  recvMulti(tag: Tag, options: MultiRecvOptions & { deviceFrames: "device" }): Promise<(Uint8Array | DeviceBuffer)[]>;
  recvMulti(tag: Tag, options: MultiRecvOptions = {}): Promise<(Uint8Array | DeviceBuffer)[]> {
    const refused = this.#refusal();
    if (refused) return refused;
    if (stagesDeviceFrames(options)) return this.#receives.recvMultiStaged(tag, options);
    return this.#receives.tagRecvMulti(tag, options).promise;
  }

/**
   * Receive a window of tagged messages from any endpoint with one call: `buffers[i]` takes the
   * i-th message matching `tag`/`mask` (UCX matches receives in the order they are posted).
   * One submission and one Promise for the whole window, which is what a stream of small
   * messages needs (see `Endpoint.sendMany`). Resolves with each buffer's sender tag and length;
   * the first receive that fails (a message larger than its buffer: UCS_ERR_MESSAGE_TRUNCATED)
   * rejects the whole and cancels the rest. Every buffer stays referenced until UCX is done.
   */
  recvMany(buffers: readonly BufferLike[], tag: Tag, mask: Tag = FULL_MASK, options: RecvOptions = {}): Promise<RecvResult[]> {
    const refused = this.#refusal();
    if (refused) return refused;
    return this.#receives.tagRecvMany(buffers, tag, mask, options).promise;
  }

/**
   * Is a message matching `tag`/`mask` waiting? Resolves with its tag and length, or null.
   * The message stays queued for a later `recv`. It answers at once, so a signal only matters
   * if it is aborted already (rejects as an aborted receive does).
   */
  probe(tag: Tag, mask: Tag = FULL_MASK, options: RecvOptions = {}): Promise<RecvResult | null> {
    const refused = this.#refusal();
    if (refused) return refused;
    return this.#receives.probe(tag, mask, options);
  }

/** Wait until every operation posted on this worker so far is complete at the transport level. */
  flush(): Promise<void> {
    const refused = this.#refusal();
    if (refused) return refused;
    return this.settled(this.#path.request(submission({ op: Op.WorkerFlush }), null, "ucp_worker_flush_nbx", () => undefined).promise);
  }

  // --- progress (worker/progress-driver.ts) ----------------------------------------------------

/**
   * Polling and blocking modes: run UCX once (submit queued operations, `ucp_worker_progress`,
   * settle what completed). Thread mode: deliver completions already reported. Returns the
   * amount of work done.
   */
  progress(): number {
    return this.#driver.progress();
  }

/**
   * Blocking mode: progress; if nothing happened, sleep on the worker's event fd until UCX has
   * an event or `timeoutMs` passes (default: no limit), then progress again. It blocks this
   * thread: while it sleeps, nothing else on the thread runs (other workers included).
   * Returns the amount of work done.
   */
  wait(timeoutMs = -1): number {
    if (this.progressMode !== "blocking") throw invalidArgument("wait() needs progressMode 'blocking'");
    if (!Number.isInteger(timeoutMs) || timeoutMs < -1) throw invalidArgument("timeoutMs must be an integer >= -1");
    return this.#driver.wait(timeoutMs);
  }

/**
   * Await `promise`, progressing the worker meanwhile in polling and blocking modes (yielding
   * to the event loop regularly, so timers, I/O and other workers still run; it never sleeps in
   * `wait()`, which would starve them). In thread mode this is `await`.
   */
  settled<T>(awaited: Promise<T>): Promise<T> {
    return this.#driver.settled(awaited);
  }

  // --- closing -------------------------------------------------------------------------------

/**
   * Close everything: pending requests are cancelled (their Promises reject with
   * UCS_ERR_CANCELED), endpoints force-closed, listeners destroyed, UCX freed. Idempotent.
   */
  close(): Promise<void> {
    if (!this.#closing) {
      this.#path.markClosing();
      const parts = { path: this.#path, listeners: this.#listeners, endpoints: this.#endpoints, am: this.#am, memory: this.#memory, sendPath: this.sendPath };
      this.#closing = shutDown(parts, (p) => this.settled(p)).then(() => {
        workerClosed();
        this.#driver.release();
      });
    }
    return this.#closing;
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.close();
  }

  // --- what endpoints, listeners and the hello ask of their worker (EndpointHost, ListenerHost,
  // HelloWorker): @internal, not for applications ------------------------------------------------

  /** @internal Submit a request (worker/request-path.ts). */
  request<T>(
    s: Omit<Submission, "request">,
    keep: unknown,
    operation: string,
    onOk: (value: number, tagLo: number, tagHi: number) => T,
    onError?: (status: number, value: number) => UcxError | undefined,
    /** Hand it to UCX now, not at the next round of progress (Engine.submit). */
    now = false,
  ): Submitted<T> {
    return this.#path.request(s, keep, operation, onOk, onError, undefined, now);
  }

  /** @internal Reject request `id` now with `status` (its buffers stay held until UCX reports it). */
  settleEarly(id: number, status: number): void {
    this.#path.requests.settleEarly(id, status);
  }

  /** @internal Ask UCX to cancel request `id`; it then completes with UCS_ERR_CANCELED. */
  cancel(id: number): void {
    this.#path.cancel(id);
  }

  /** @internal Wire an AbortSignal to cancel request `r` (worker/request-path.ts). */
  cancelOnAbort(r: Submitted<unknown>, signal: AbortSignal | undefined, rejectAtOnce = false, operation = "receive"): void {
    this.#path.cancelOnAbort(r, signal, rejectAtOnce, operation);
  }

  /** @internal Polling and blocking modes: the engine's direct tag calls, when one may go to UCX now. */
  directTags(): DirectTags | undefined {
    return this.#path.directTags();
  }

  /** @internal Polling and blocking modes: the memory handles mapped for single requests (request-handles.ts). */
  requestHandles(): RequestHandles | undefined {
    return this.#path.requestHandles();
  }

  /** @internal Polling, blocking and hybrid modes: atomics over active messages (engine/am-atomics.ts), both sides' counts. */
  amAtomics(): AmAtomics | undefined {
    return this.#path.amAtomics();
  }

  /** @internal Request `id` waits on endpoint `owner` (see `unsettledRequestsOf`); `receive` for receives. */
  ownRequest(id: number, owner: object, receive = false): void {
    this.#path.requests.setOwner(id, owner, receive);
  }

  /** @internal The receives (or the other requests) of endpoint `owner` whose Promises have not settled. */
  unsettledRequestsOf(owner: object, receives = false): number[] {
    return this.#path.requests.unsettledOf(owner, receives);
  }

  /**
   * @internal How many of endpoint `owner`'s requests other than receives UCX still holds: the
   * request table's, and the sends that went straight to UCX on endpoint `endpointId` (DirectTags).
   */
  requestsInFlightOf(owner: object, endpointId = 0): number {
    return this.#path.requests.inFlightOf(owner) + (endpointId === 0 ? 0 : this.#path.directSendsTo(endpointId));
  }

  /** @internal `promise` is what the application holds for request `id` (a wrapper of its own Promise). */
  exposeRequest(id: number, promise: Promise<unknown>): void {
    this.#path.requests.expose(id, promise);
  }

  /** @internal Request `id`'s endpoint failed with `status`: its cancel (or "nothing queued") reports that. */
  failRequestAs(id: number, status: number): void {
    this.#path.requests.failAs(id, status);
  }

  /** @internal A new id for an object the executor keeps by id (endpoint, listener, memory, key). */
  newObjectId(): number {
    return this.#path.newObjectId();
  }

  /** @internal The address UCX is given for `bytes` (the caller keeps `bytes` referenced). */
  addressOf(bytes: Uint8Array): number {
    return addressOf(bytes);
  }

  /** @internal `addressOf` through a cache (worker/request-path.ts cachedAddressOf). */
  cachedAddressOf(bytes: Uint8Array): number {
    return cachedAddressOf(bytes);
  }

  /** @internal Count `promise` against the memory handle `bytes` belongs to, if any. */
  holdMemory<T>(bytes: Uint8Array, promise: Promise<T>): Promise<T> {
    return this.#memory.hold(bytes, promise);
  }

  /** @internal An endpoint's tag receive (worker/tag-receives.ts). */
  tagRecv(buffer: BufferLike, tag: Tag, mask: Tag, options: RecvOptions, scope?: number, ifQueued = false, released?: () => void): Submitted<RecvResult> {
    return this.#receives.tagRecv(buffer, tag, mask, options, scope, ifQueued, released);
  }

  /** @internal An endpoint's tag receive as a UcxRequest (worker/tag-receives.ts). */
  tagRecvRequest(buffer: BufferLike, tag: Tag, mask: Tag, scope?: number, ifQueued = false): { id: number; request: UcxRequest<RecvResult> } {
    return this.#receives.tagRecvRequest(buffer, tag, mask, scope, ifQueued);
  }

  /** @internal A receive that settles through a callback, no Promise (worker/tag-receives.ts tagRecvWith). */
  tagRecvWith(bytes: Uint8Array, tag: Tag, done: (length: number) => void, failed: (e: UcxError) => void): number {
    this.#path.assertOpen();
    return this.#receives.tagRecvWith(bytes, tag, done, failed);
  }

  /** @internal An endpoint's multi-receive through the device pipeline (cuda/staged-multi-receive.ts). */
  recvMultiStaged(tag: Tag, options: MultiRecvOptions, port: TagPort): Promise<(Uint8Array | DeviceBuffer)[]> {
    return this.#receives.recvMultiStaged(tag, options, port);
  }

  /** @internal An endpoint's many-receive (worker/tag-receives.ts). */
  tagRecvMany(buffers: readonly BufferLike[], tag: Tag, mask: Tag, options: RecvOptions, scope?: number, ifQueued = false): Submitted<RecvResult[]> {
    return this.#receives.tagRecvMany(buffers, tag, mask, options, scope, ifQueued);
  }

  /** @internal An endpoint's multi-buffer receive (worker/tag-receives.ts). */
  tagRecvMulti(tag: Tag, options: MultiRecvOptions, scope?: number, ifQueued = false): Submitted<(Uint8Array | DeviceBuffer)[]> {
    return this.#receives.tagRecvMulti(tag, options, scope, ifQueued);
  }

  /** @internal The inbox of endpoint `id` (0: messages from senders without an endpoint here). */
  amInbox(id: number): AmInbox {
    return this.#am.inbox(id);
  }

  /** @internal Endpoint `id` is closed: its inbox rejects its waiters and is forgotten. */
  closeAmInbox(id: number, error: UcxError): void {
    this.#am.closeInbox(id, error);
  }

  /** @internal Wait for the next message of inbox `id` (-1: any), keeping the worker active meanwhile. */
  amTake(id: number, signal?: AbortSignal): Promise<AmMessage> {
    return this.#am.take(id, signal);
  }

  /** @internal Wait for the next `count` messages of inbox `id` (-1: any) as one window. */
  amTakeMany(id: number, count: number, signal?: AbortSignal): Promise<AmMessage[]> {
    return this.#am.takeMany(id, count, signal);
  }

  /** @internal The endpoint is closed: forget it (and release its receive scope). */
  forgetEndpoint(id: number): void {
    const scope = this.#endpoints.get(id)?.scope;
    this.#endpoints.forget(id);
    // What its peer sent after the close would stay in UCX's queue until the worker closes.
    if (scope !== undefined && !this.closed) drainScopeTwice(this, scope);
  }

  /** @internal A receive scope for an endpoint made through the hello (hello/scopes.ts). */
  allocateScope(): number {
    return this.#endpoints.scopes.allocate();
  }

  /** @internal */
  releaseScope(scope: number): void {
    this.#endpoints.scopes.release(scope);
  }

  /**
   * @internal `ucp_ep_create` to a worker address the hello brought (already checked), submitted
   * now: the hello's pairing depends on the order of these calls (hello/connection.ts). The scope
   * is released when the endpoint is forgotten.
   */
  endpointByAddress(
    address: Uint8Array,
    errorHandling: ErrorHandling,
    remote: { host: string; port: number },
    scopes: { scope: number; peerScope: number; loopback?: boolean },
    fillers?: readonly ErrorHandling[],
  ): { endpoint: Endpoint; created: Promise<void> } {
    return this.#endpoints.byAddress(address, errorHandling, remote, scopes, fillers);
  }

  /** @internal Endpoints made by address to the worker of `address` so far (hello/pairing.ts). */
  pairingCount(address: Uint8Array): number {
    return this.#endpoints.sequences.count(workerUuid(address));
  }

  /** @internal Modes of this worker's endpoints numbered [from, to) to the worker of `address`. */
  pairingModes(address: Uint8Array, from: number, to: number): ErrorHandling[] {
    return this.#endpoints.sequences.modes(workerUuid(address), from, to);
  }

  /** @internal An endpoint accepted by a listener (`conn_request` from its handler). */
  accept(connRequest: number, errorHandling: ErrorHandling, remote: { host: string; port: number }): Promise<Endpoint> {
    return this.#endpoints.accept(connRequest, errorHandling, remote);
  }

  /** @internal */
  closeListener(id: number): Promise<void> {
    return this.#listeners.close(id);
  }
}
