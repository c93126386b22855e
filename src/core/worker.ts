/**
 * `Worker`: a UCP worker and its progress engine, the object everything else hangs from.
 * It creates endpoints (by worker address or host/port), listeners, posts tag receives and
 * probes, and settles every request's Promise when its completion record arrives.
 */
import { cpus } from "node:os";
import { backend, getEnv } from "../ffi/index.ts";
import { asBytes, type BufferLike } from "./buffers.ts";
import { DEFAULT_FEATURES, type Feature } from "./context.ts";
import type { Engine, EngineOptions, ProgressMode, Submission } from "./engine/engine.ts";
import { submission } from "./engine/engine.ts";
import { InlineEngine } from "./engine/inline-engine.ts";
import type { Payload } from "./engine/payload.ts";
import { CompletionKind, DONE, EP_FLAG_ERR_PEER, MULTI_FLAG_IF_QUEUED, Op } from "./engine/records.ts";
import type { Ring } from "./engine/ring.ts";
import { ThreadedEngine } from "./engine/threaded-engine.ts";
import { turnDue, yieldToEventLoop } from "./engine/event-loop.ts";
import { HybridEngine } from "./engine/hybrid-engine.ts";
import { connectionError, invalidArgument, UcxError } from "./errors.ts";
import { abortError } from "./abort.ts";
import { Endpoint, type ErrorHandling } from "./endpoint.ts";
import { describeStatus } from "./library.ts";
import { Listener, type ConnectProtocol, type ListenerHost, type ListenOptions } from "./listener.ts";
import { connectWithHello, listenWithHello } from "./hello/connection.ts";
import { ScopeTable } from "./hello/scopes.ts";
import { MemoryHandle, packKey, type MemMapOptions } from "./memory.ts";
import { allocateForMemMap, checkMemMapSize } from "./memory-limits.ts";
import { ownerBytes, RESERVED_OWNER } from "./am/header.ts";
import { DEFAULT_AM_LIMITS, type AmInbox, type AmMessage, type AmQueueLimits } from "./am/inbox.ts";
import { AmRouter, type AmHandler } from "./am/router.ts";
import { Requests } from "./requests.ts";
import { BouncePool } from "./proto/bounce-pool.ts";
import type { ProtocolOptions } from "./proto/config.ts";
import type { SendProtocol } from "./proto/protocols.ts";
import { formatProtoInfo } from "./proto/report.ts";
import { ProtocolSelector } from "./proto/selector.ts";
import { SendPath } from "./proto/send-path.ts";
import { RegistrationCache } from "./proto/registration-cache.ts";
import { INLINE_CAPACITY } from "./engine/records.ts";
import { checkHost, sockaddr } from "./sockaddr.ts";
import { checkWorkerAddress, wrapWorkerAddress } from "./worker-address.ts";
import { FULL_MASK, joinTag, scopedMaskWords, scopedTagWords, tagWords, unscopedTag, type Tag } from "./tag.ts";
import { checkLimits, DEFAULT_MULTI_LIMITS, type MultiLimits, type MultiRecvOptions, type RecvOptions, type RecvResult } from "./receive-options.ts";
import type { EndpointHost } from "./endpoint-host.ts";
import type { HelloWorker } from "./hello/connection.ts";

const UCS_OK = 0;
/** How long `close()` waits for sends that resolved early to reach the peer. */
const EARLY_SEND_DRAIN_MS = 2000;
const UCS_ERR_BUFFER_TOO_SMALL = -11;
const UCS_ERR_MESSAGE_TRUNCATED = -9;
const UCS_ERR_CANCELED = -16;

export interface WorkerOptions {
  /**
   * `thread` (default): a progress thread; `polling`: call `progress()`; `blocking`: `wait()`;
   * `hybrid`: this thread drives UCX by itself while work is outstanding (spinning briefly,
   * then parked on UCX's event fd): polling's latency without a loop of your own.
   */
  readonly progressMode?: ProgressMode;
  /**
   * Error handling of endpoints unless an endpoint says otherwise. `peer` (default): UCX
   * detects a dead peer and pending requests reject; on UCX 1.13 this restricts two processes
   * on one host to tcp. `none`: shared memory, but a dead peer is not detected. See README.
   */
  readonly errorHandling?: ErrorHandling;
  /** UCP features; default tag, stream, wakeup, am, rma, amo32, amo64. */
  readonly features?: readonly Feature[];
  /** UCX configuration for this worker's context, e.g. `{ TLS: "tcp" }`. */
  readonly config?: Readonly<Record<string, string | number | boolean>>;
  /** Slots in the submission ring (default 1024); a full ring queues submissions in order. */
  readonly ringSize?: number;
  /** Thread mode: how long the application thread spins for a completion before parking (µs; default 20, under 4 cores used only while such spins catch completions; a value you set is always used); hybrid mode: how long it keeps progressing UCX after the last event (default 100 µs on fewer than 4 cores, 200 µs on more). */
  readonly spinMicroseconds?: number;
  /** Thread mode: how long the progress thread busy-polls after its last work (µs; default 5 under 4 cores, 50 from 4). */
  readonly threadSpinMicroseconds?: number;
  /**
   * Thread mode: while the application awaits something, let the progress thread spin as long as
   * the last gap between its bursts of work (up to 10 ms, at most cores - 1 such threads per
   * process), and hand its core to the application thread it wakes (thread-spin-policy.ts).
   * Default: on from 4 cores (unless threadSpinMicroseconds is set). Under 4 cores it is a
   * trade: on 2 cores it made two processes' 8 B round trip 1.5-2.5x faster but windowed
   * 8 B-64 KiB bandwidth 20-50 % lower (the spinning threads of two processes take both cores
   * from the application threads), so it is off there unless you turn it on.
   */
  readonly adaptiveThreadSpin?: boolean;
  /**
   * Thread mode: while the application thread waits for a result it drives UCX itself, as
   * polling mode does, and the progress thread sleeps; the thread takes over again when the
   * application runs other code for 2 ms, needs an operation only the thread performs (connect,
   * close, flush, RMA, multi-buffer, ...), or nothing happens for 1 ms. Round trips then cost
   * no thread wake-up (2 cores, two processes, 8 B: median 13 us against 320-390 without).
   * Default: on, unless the environment variable UCX_TS_TAKEOVER is 0.
   * Not on Bun (its FFI cannot run a callback on a thread other than the one that made it, and
   * UCX calls the endpoint error handler on whichever thread progresses it): ignored there.
   */
  readonly takeover?: boolean;
  /**
   * Thread mode: queue submissions in the shared ring for the progress thread to take in
   * batches (default true, UCXX's "delayed submission"); false posts each as a message.
   */
  readonly delayedSubmission?: boolean;
  /** Default limits of this worker's multi-buffer receives (`recvMulti`). */
  readonly multi?: MultiLimits;
  /** Bounds of each endpoint's queue of unread active messages. */
  readonly am?: AmQueueLimits;
  /**
   * How sends' bytes reach UCX (inline, bounce, zcopy), chosen per size from cost lines: costs,
   * forced protocols, the bounce pool. See README, "Protocol selection", and `ucx-ts proto-info`.
   */
  readonly protocols?: ProtocolOptions;
}

export type { AmHandler } from "./am/router.ts";

export { DEFAULT_MULTI_LIMITS, type MultiLimits, type MultiRecvOptions, type RecvOptions, type RecvResult } from "./receive-options.ts";

/** An optional boolean option: absent, or true or false (anything else is a typed error). */
function checkBoolean(name: string, value: unknown): void {
  if (value !== undefined && typeof value !== "boolean") throw invalidArgument(`${name} must be true or false, got ${String(value)}`);
}

/**
 * The longest the progress thread learns to spin while the application awaits something
 * (thread-spin-policy.ts). Two processes' 8 B ping-pong on 2 cores, median round trip (same
 * hour): 2 ms 269-317 us, 10 ms 150-176, 100 ms 166-202; with 10 ms the p90 was lowest too.
 */
const THREAD_SPIN_MAX_US = 10_000;

/** Spin budgets from the core count: on 2 cores a spinning thread can starve the other one. */
function defaultSpins(): { app: number; thread: number; hybrid: number; adaptive: boolean; learnThread: boolean } {
  const cores = cpus().length;
  // Hybrid mode has no progress thread of its own to starve: its application thread may spin
  // long enough for a round trip's reply to come back (10-30 us in polling mode here).
  // Thread mode's application spin: always on from 4 cores (a spare core makes it cheap, and the
  // fastest round trips need it); under 4 adaptive (spin-policy.ts), as it stops by itself where
  // it costs (between two processes on 2 cores).
  // The progress thread's learnt spin: from 4 cores (see WorkerOptions.adaptiveThreadSpin).
  return cores >= 4
    ? { app: 20, thread: 50, hybrid: 200, adaptive: false, learnThread: true }
    : { app: 20, thread: 5, hybrid: 100, adaptive: true, learnThread: false };
}

export class Worker implements EndpointHost, ListenerHost, HelloWorker {
  readonly progressMode: ProgressMode;
  readonly errorHandling: ErrorHandling;
  private engine!: Engine;
  /** @internal Sends' protocol selection and the bounce pool (proto/send-path.ts). */
  sendPath!: SendPath;
  private readonly requests = new Requests();
  private readonly endpoints = new Map<number, Endpoint>();
  private readonly listeners = new Map<number, Listener>();
  private nextObjectId = 1;
  private multiLimits: Required<MultiLimits> = DEFAULT_MULTI_LIMITS;
  /** The UCP features this worker's context was created with. */
  features: readonly Feature[] = DEFAULT_FEATURES;
  private closing: Promise<void> | undefined;
  #closed = false;

  private constructor(options: WorkerOptions) {
    this.progressMode = options.progressMode ?? "thread";
    this.errorHandling = options.errorHandling ?? "peer";
    if (!["thread", "polling", "blocking", "hybrid"].includes(this.progressMode)) {
      throw invalidArgument(`progressMode must be thread, polling, blocking or hybrid, got '${this.progressMode}'`);
    }
    if (!["peer", "none"].includes(this.errorHandling)) {
      throw invalidArgument(`errorHandling must be peer or none, got '${this.errorHandling}'`);
    }
  }

  /** Create a worker (and its UCX context); in thread mode this starts the progress thread. */
  static async create(options: WorkerOptions = {}): Promise<Worker> {
    const w = new Worker(options);
    w.multiLimits = checkLimits(options.multi ?? {}, DEFAULT_MULTI_LIMITS);
    w.features = options.features ?? DEFAULT_FEATURES;
    const am = { ...DEFAULT_AM_LIMITS, ...options.am };
    if (!(Number.isInteger(am.maxQueuedMessages) && am.maxQueuedMessages >= 0 && Number.isSafeInteger(am.maxQueuedBytes) && am.maxQueuedBytes >= 0)) {
      throw invalidArgument("am.maxQueuedMessages and am.maxQueuedBytes must be non-negative integers");
    }
    w.amRouter = new AmRouter(am);
    const spins = defaultSpins();
    const engineOptions: EngineOptions = {
      features: options.features ?? DEFAULT_FEATURES,
      config: options.config ?? {},
      ringSize: options.ringSize ?? 1024,
      spinMicroseconds: options.spinMicroseconds ?? (w.progressMode === "hybrid" ? spins.hybrid : spins.app),
      // Under 4 cores the default budget is used while it pays; a budget the caller chose, always.
      adaptiveSpin: options.spinMicroseconds === undefined && spins.adaptive,
      threadSpinMicroseconds: options.threadSpinMicroseconds ?? spins.thread,
      adaptiveThreadSpin: options.adaptiveThreadSpin ?? (options.threadSpinMicroseconds === undefined && spins.learnThread),
      threadSpinMaxMicroseconds: THREAD_SPIN_MAX_US,
      delayedSubmission: options.delayedSubmission ?? true,
      takeover: options.takeover ?? getEnv("UCX_TS_TAKEOVER") !== "0",
    };
    if (!(engineOptions.ringSize >= 1 && engineOptions.ringSize <= 1 << 20)) throw invalidArgument("ringSize must be 1..2^20");
    checkBoolean("takeover", options.takeover);
    checkBoolean("adaptiveThreadSpin", options.adaptiveThreadSpin);
    // Protocol tables first: a bad protocol option fails here, before any thread starts.
    const selector = new ProtocolSelector(w.progressMode, INLINE_CAPACITY, options.protocols);
    const { bounceChunkSize, bounceChunks } = selector.configuration;
    const pool = BouncePool.create(bounceChunkSize, bounceChunkSize > 0 ? bounceChunks : 0, w.progressMode === "thread");
    const onCompletion = (ring: Ring, word: number) => w.onCompletion(ring, word);
    const withPool: EngineOptions = { ...engineOptions, bouncePool: pool.buffer };
    w.engine =
      w.progressMode === "thread"
        ? await ThreadedEngine.start(withPool, onCompletion)
        : w.progressMode === "hybrid"
          ? new HybridEngine(withPool, onCompletion).start()
          : new InlineEngine(w.progressMode, withPool, onCompletion);
    pool.attach((b) => w.addressOf(b));
    w.sendPath = new SendPath(
      {
        request: (s, keep, what, onArrive, now) => w.request(s, keep, what, () => undefined, undefined, onArrive, now),
        settleEarly: (id, status) => w.settleEarly(id, status),
        holdMemory: (bytes, promise) => w.holdMemory(bytes, promise),
      },
      selector,
      pool,
      new RegistrationCache(
        {
          nextId: () => w.newObjectId(),
          map: (id, address, length, keep, onFail) => {
            const r = w.request(submission({ op: Op.MemMap, target: id, address, length }), keep, "ucp_mem_map", () => undefined, undefined, (_id, status) => {
              if (status !== UCS_OK) onFail();
            });
            r.promise.catch(() => {}); // a refused registration only makes this buffer go plain
          },
          unmap: (id) => {
            if (!w.closed) w.post(submission({ op: Op.MemUnmap, target: id }));
          },
          userRegistration: (buffer) => w.memoryOf.get(buffer)?.id,
          addressOf: (b) => w.addressOf(b),
        },
        { maxBytes: selector.configuration.registrationMaxBytes, maxRegistration: selector.configuration.registrationMaxBuffer },
      ),
      (b) => w.addressOf(b),
    );
    if (selector.configuration.info) process.stderr.write(formatProtoInfo(selector));
    return w;
  }

  get closed(): boolean {
    return this.#closed || this.closing !== undefined;
  }

  /**
   * Thread mode with takeover in effect (WorkerOptions.takeover, where the runtime allows it),
   * with its counts: rounds the application thread drove UCX in, times the progress thread lent
   * it the token, and times it took it back because those rounds stopped. null otherwise.
   */
  get takeoverStats(): { rounds: number; lends: number; takenBack: number } | null {
    return this.engine instanceof ThreadedEngine ? this.engine.takeoverStats : null;
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
    return this.requests.size;
  }

  // --- requests: the one path every operation takes -----------------------------------------

  /**
   * Submit `s` as a request and return its Promise. `keep` stays referenced until the
   * completion arrives; `onOk` turns a successful completion into the result.
   */
  request<T>(
    s: Omit<Submission, "request">,
    keep: unknown,
    operation: string,
    onOk: (value: number, tagLo: number, tagHi: number) => T,
    onError?: (status: number, value: number) => UcxError | undefined,
    /** Runs when the completion arrives, even for a request settled early (payload hand-over). */
    onArrive?: (id: number, status: number) => void,
    /** The caller settles it at once (see Engine.submit): hand it to UCX now. */
    now = false,
  ): { id: number; promise: Promise<T> } {
    this.assertOpen();
    let resolve!: (v: T) => void;
    let reject!: (e: unknown) => void;
    const promise = new Promise<T>((res, rej) => {
      resolve = res;
      reject = rej;
    });
    const id = this.requests.add((status, value, tagLo, tagHi) => {
      if (status === UCS_OK) {
        try {
          resolve(onOk(value, tagLo, tagHi));
        } catch (e) {
          reject(e);
        }
      } else {
        // The worker's close fails a receive nobody awaits (a forgotten one, a listener's): its
        // rejection must not end the process as an unhandled one. Awaited, it still throws.
        // (Asked of the table: in polling mode the close reaches here before `closing` is set.)
        if (this.requests.closing) promise.catch(() => {});
        reject(onError?.(status, value) ?? UcxError.fromStatus(status, operation, describeStatus));
      }
      this.updateActive();
    }, keep, onArrive && ((status) => onArrive(id, status)), (reason) => {
      reject(reason);
      this.updateActive();
    });
    try {
      // `s` is the caller's fresh submission() object: completed in place, not copied.
      (s as Submission).request = id;
      this.engine.submit(s as Submission, now);
    } catch (e) {
      this.requests.complete(id, UCS_ERR_CANCELED, 0, 0, 0); // never submitted: forget it
      promise.catch(() => {});
      throw e;
    }
    this.updateActive();
    return { id, promise };
  }

  /** Submit without a request (cancel, reject). */
  post(s: Submission): void {
    this.engine.submit(s);
  }

  /** Reject request `id` now with `status` (its buffers stay held until UCX reports it). */
  settleEarly(id: number, status: number): void {
    this.requests.settleEarly(id, status);
  }

  requestPending(id: number): boolean {
    return this.requests.has(id);
  }

  /** @internal Request `id` waits on endpoint `owner` (see `unsettledRequestsOf`); `receive` for receives. */
  ownRequest(id: number, owner: object, receive = false): void {
    this.requests.setOwner(id, owner, receive);
  }

  /** @internal The receives (or the other requests) of endpoint `owner` whose Promises have not settled. */
  unsettledRequestsOf(owner: object, receives = false): number[] {
    return this.requests.unsettledOf(owner, receives);
  }

  /** @internal `promise` is what the application holds for request `id` (a wrapper of its own Promise). */
  exposeRequest(id: number, promise: Promise<unknown>): void {
    this.requests.expose(id, promise);
  }

  /** @internal Request `id`'s endpoint failed with `status`: its cancel (or "nothing queued") reports that. */
  failRequestAs(id: number, status: number): void {
    this.requests.failAs(id, status);
  }

  private updateActive(): void {
    this.engine.setActive(this.requests.size > 0 || this.listeners.size > 0 || this.amWaiting > 0 || this.amRouter.handlerCount > 0);
  }

  private onCompletion(ring: Ring, w: number): void {
    const u32 = ring.u32;
    const kind = u32[w + DONE.kind];
    const id = u32[w + DONE.id]!;
    const status = ring.i32[w + DONE.status]!;
    const value = ring.f64[(w >> 1) + DONE.value]!;
    const tagLo = u32[w + DONE.tagLo]!;
    const tagHi = u32[w + DONE.tagHi]!;
    if (kind === CompletionKind.Request) {
      // A request settled early (a send that resolved on submission) ends here: the worker may
      // now be idle, which settling did not say.
      if (this.requests.complete(id, status, value, tagLo, tagHi)) this.updateActive();
    }
    else if (kind === CompletionKind.ConnectionRequest) this.listeners.get(id)?.onConnectionRequest(value, tagLo, tagHi);
    else if (kind === CompletionKind.EndpointError) this.endpoints.get(id)?.fail(status);
    else if (kind === CompletionKind.AmMessage) this.onActiveMessage(id, status, value, tagLo);
  }

  // --- active messages (routing in am/router.ts) ----------------------------------------------

  private amRouter = new AmRouter(DEFAULT_AM_LIMITS);
  private amWaiting = 0;

  /** @internal The inbox of endpoint `id` (0: messages from senders without an endpoint here). */
  amInbox(id: number): AmInbox {
    return this.amRouter.inbox(id);
  }

  /** @internal Wait for the next message of inbox `id` (-1: any), keeping the worker active meanwhile. */
  amTake(id: number, signal?: AbortSignal): Promise<AmMessage> {
    const p = this.amRouter.take(id, signal);
    this.amWaiting++;
    this.updateActive();
    const done = () => {
      this.amWaiting--;
      this.updateActive();
    };
    p.then(done, done);
    return this.settled(p);
  }

  /**
   * Receive the next active message from any sender, in arrival order: the oldest unread one of
   * any endpoint's queue, or the next to arrive that no `ep.amRecv()` is waiting for.
   */
  amRecv(options: RecvOptions = {}): Promise<AmMessage> {
    this.assertOpen();
    return this.amTake(-1, options.signal);
  }

  /**
   * Receive the messages peers address to UCXX receiver callback (owner, id) with
   * `amSend(data, { callback: { owner, id } })`. Returns a function that removes the handler.
   * "ucxx" is UCXX's own owner name and is refused.
   */
  onAmCallback(owner: string, id: number | bigint, handler: AmHandler): () => void {
    if (owner === RESERVED_OWNER) throw invalidArgument(`the receiver-callback owner '${RESERVED_OWNER}' is reserved by UCXX`);
    try {
      ownerBytes(owner);
    } catch (e) {
      throw invalidArgument((e as Error).message);
    }
    return this.addAmHandler(AmRouter.callbackKey(owner, id), handler);
  }

  /**
   * Receive UCX active messages with a raw AM id (1 and above; 0 carries UCXX's messages):
   * UCX's plain AM model, the header as the sender gave it. Resolves once UCX has the handler;
   * the returned function removes it here (UCX keeps delivering; messages are then dropped).
   */
  async onAm(amId: number, handler: AmHandler): Promise<() => void> {
    if (!Number.isInteger(amId) || amId < 1 || amId > 0xffff) throw invalidArgument(`AM id must be an integer from 1 to 65535, got ${amId}`);
    if (!this.features.includes("am")) throw invalidArgument("active messages need the 'am' feature");
    const off = this.addAmHandler(AmRouter.rawKey(amId), handler);
    try {
      await this.settled(this.request(submission({ op: Op.AmRegister, target: amId }), null, "ucp_worker_set_am_recv_handler", () => undefined).promise);
    } catch (e) {
      off();
      throw e;
    }
    return off;
  }

  private addAmHandler(key: string, handler: AmHandler): () => void {
    if (typeof handler !== "function") throw invalidArgument("the handler must be a function");
    const off = this.amRouter.addHandler(key, handler);
    this.updateActive();
    return () => {
      off();
      this.updateActive();
    };
  }

  private onActiveMessage(endpointId: number, status: number, eventId: number, amId: number): void {
    const endpoint = this.endpoints.get(endpointId);
    this.amRouter.route(endpoint ? endpointId : 0, endpoint, status, this.engine.takePayload(eventId), amId);
  }

  private assertOpen(): void {
    if (this.#closed || this.closing) throw new UcxError("UCX_TS_CLOSED", "the worker is closed");
  }

  // --- addresses, endpoints, listeners -------------------------------------------------------

  /**
   * This worker's UCP address: hand it to a peer, which connects with `connect(address)`.
   * It comes in ucx-ts's envelope (length and CRC-32 around UCX's bytes), so that a copy
   * corrupted or truncated on its way is refused with UCS_ERR_INVALID_ADDR instead of aborting
   * the peer inside UCX. `{ format: "ucx" }` gives UCX's plain bytes, for UCXX or C peers.
   */
  async address(options: { format?: "ucx-ts" | "ucx" } = {}): Promise<Uint8Array> {
    const format = options.format ?? "ucx-ts";
    if (format !== "ucx-ts" && format !== "ucx") throw invalidArgument(`address format must be 'ucx-ts' or 'ucx', got '${format}'`);
    const ucx = await this.copyOut({ op: Op.WorkerAddress }, 4096, "ucp_worker_get_address");
    return format === "ucx" ? ucx : wrapWorkerAddress(ucx);
  }

  /** This worker's plain UCX address, asked once: connect() checks peers' addresses against it. */
  private ownUcxAddress(): Promise<Uint8Array> {
    if (!this.ownAddress) {
      this.ownAddress = this.copyOut({ op: Op.WorkerAddress }, 4096, "ucp_worker_get_address");
      this.ownAddress.catch(() => (this.ownAddress = undefined)); // asked again next time
    }
    return this.ownAddress;
  }

  private ownAddress: Promise<Uint8Array> | undefined;

  /**
   * Bytes the executor copies out of UCX (worker address, packed remote key) into a buffer of
   * ours: the executor answers UCS_ERR_BUFFER_TOO_SMALL with the size needed, and we ask again.
   */
  private async copyOut(fields: Partial<Submission> & { op: number }, capacity: number, operation: string): Promise<Uint8Array> {
    for (;;) {
      const out = new Uint8Array(capacity);
      const { promise } = this.request(
        submission({ ...fields, address: this.addressOf(out), length: capacity }),
        out,
        operation,
        (length) => out.slice(0, length),
        (status, needed) => {
          if (status === UCS_ERR_BUFFER_TOO_SMALL) capacity = needed;
          return undefined;
        },
      );
      try {
        return await this.settled(promise);
      } catch (e) {
        if ((e as UcxError).code !== "UCS_ERR_BUFFER_TOO_SMALL") throw e;
      }
    }
  }

  /**
   * Connect to a peer, by its worker address (bytes from its `address()`) or by host and port
   * (a peer's `listen()`). By host and port the default protocol is ucx-ts's hello (README,
   * "Connecting"): the endpoint gets its own tag receive (`ep.recv`), and a connection that
   * cannot be made or is refused rejects with a typed error within 10 s. `protocol: "ucx"` is
   * UCX's client-server connection, for a UCX/UCXX listener. By worker address the endpoint is
   * raw: tags are UCX's, received with `worker.recv`.
   */
  async connect(
    peer: BufferLike | { host: string; port: number; protocol?: ConnectProtocol },
    options: { errorHandling?: ErrorHandling } = {},
  ): Promise<Endpoint> {
    const errorHandling = options.errorHandling ?? this.errorHandling;
    if (!["peer", "none"].includes(errorHandling)) throw invalidArgument(`errorHandling must be peer or none`);
    if (typeof peer === "object" && peer !== null && "port" in peer && !ArrayBuffer.isView(peer) && checkProtocol(peer.protocol) === "hello") {
      checkHost(peer.host ?? "");
      if (!Number.isInteger(peer.port) || peer.port < 1 || peer.port > 65535) throw invalidArgument(`port must be 1..65535, got ${peer.port}`);
      this.assertOpen();
      return connectWithHello(this, peer.host, peer.port, errorHandling);
    }
    const flags = errorHandling === "peer" ? EP_FLAG_ERR_PEER : 0;
    const id = this.nextObjectId++;
    let s: Submission;
    let keep: Uint8Array;
    let remote: { host: string; port: number } | undefined;
    if (typeof peer === "object" && peer !== null && "port" in peer && !ArrayBuffer.isView(peer)) {
      remote = { host: peer.host, port: peer.port };
      keep = await sockaddr(peer.host, peer.port);
      s = submission({ op: Op.EndpointCreateSockaddr, target: id, address: this.addressOf(keep), length: keep.length, flags });
    } else {
      keep = checkWorkerAddress(asBytes(peer as BufferLike, "peer address"), await this.ownUcxAddress());
      s = submission({ op: Op.EndpointCreateAddress, target: id, address: this.addressOf(keep), length: keep.length, flags });
    }
    const ep = new Endpoint(this, id, errorHandling, remote);
    this.endpoints.set(id, ep);
    try {
      await this.settled(this.request(s, keep, "ucp_ep_create", () => undefined).promise);
      // Client-server endpoints connect in the background: a flush completes when the
      // connection is up, and fails (error handling peer) when it cannot be made.
      if (remote) await ep.flush();
    } catch (e) {
      this.endpoints.delete(id);
      await ep.close({ force: true }).catch(() => {});
      const status = (e as UcxError).status;
      throw remote && status !== undefined ? connectionError(status, remote.host, remote.port, describeStatus) : e;
    }
    return ep;
  }

  private readonly scopes = new ScopeTable();

  /** @internal A receive scope for an endpoint made through the hello (hello/scopes.ts). */
  allocateScope(): number {
    return this.scopes.allocate();
  }

  /** @internal */
  releaseScope(scope: number): void {
    this.scopes.release(scope);
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
    scopes: { scope: number; peerScope: number },
  ): { endpoint: Endpoint; created: Promise<void> } {
    const id = this.nextObjectId++;
    const flags = errorHandling === "peer" ? EP_FLAG_ERR_PEER : 0;
    const ep = new Endpoint(this, id, errorHandling, remote, scopes);
    this.endpoints.set(id, ep);
    const s = submission({ op: Op.EndpointCreateAddress, target: id, address: this.addressOf(address), length: address.length, flags });
    const created = this.settled(this.request(s, address, "ucp_ep_create", () => undefined).promise).catch((e: unknown) => {
      this.forgetEndpoint(id);
      throw e;
    });
    return { endpoint: ep, created };
  }

  /** @internal An endpoint accepted by a listener (`conn_request` from its handler). */
  async accept(connRequest: number, errorHandling: ErrorHandling, remote: { host: string; port: number }): Promise<Endpoint> {
    const id = this.nextObjectId++;
    const ep = new Endpoint(this, id, errorHandling, remote);
    this.endpoints.set(id, ep);
    const flags = errorHandling === "peer" ? EP_FLAG_ERR_PEER : 0;
    try {
      await this.settled(
        this.request(submission({ op: Op.EndpointCreateConnRequest, target: id, handle: connRequest, flags }), null, "ucp_ep_create", () => undefined)
          .promise,
      );
    } catch (e) {
      this.endpoints.delete(id);
      throw e;
    }
    return ep;
  }

  // --- registered memory (RMA) -----------------------------------------------------------------

  /**
   * Register memory with UCX so that peers can put, get and run atomics on it: `size` bytes that
   * ucx-ts allocates (zeroed), or the caller's buffer. The handle's `bytes` are the memory;
   * `packRkey()` gives the key a peer unpacks with `ep.unpackRkey()`.
   */
  async memMap(memory: number | BufferLike, options: MemMapOptions = {}): Promise<MemoryHandle> {
    let bytes: Uint8Array | undefined;
    let length: number;
    if (typeof memory === "number") {
      if (!Number.isSafeInteger(memory) || memory < 1) throw invalidArgument(`memMap needs a size of at least 1 byte, got ${memory}`);
      length = memory;
      const allocator = options.allocator === "ucx" ? "ucx" : "js";
      checkMemMapSize(memory, allocator);
      if (allocator === "js") bytes = allocateForMemMap(memory);
    } else {
      if (options.allocator === "ucx") throw invalidArgument("memMap: allocator 'ucx' is for a size, not for a buffer of yours");
      bytes = asBytes(memory, "memory");
      length = bytes.length;
    }
    if (length === 0) throw invalidArgument("memMap: cannot register zero bytes");
    const id = this.nextObjectId++;
    const given = bytes ? this.addressOf(bytes) : 0;
    const address = await this.settled(
      this.request(submission({ op: Op.MemMap, target: id, address: given, length }), bytes ?? null, "ucp_mem_map", (a) => a).promise,
    );
    // UCX's memory: a view of it, which unmap() detaches so that it cannot outlive the memory.
    bytes ??= new Uint8Array(backend().view(address, length));
    const handle = new MemoryHandle(this.memoryOwner, id, bytes, address, options.allocator === "ucx");
    this.memories.set(id, handle);
    this.memoryOf.set(bytes.buffer, handle);
    return handle;
  }

  /** Wait until every atomic and put/get issued so far is ordered before later ones (ucp_worker_fence). */
  fence(): Promise<void> {
    return this.settled(this.request(submission({ op: Op.WorkerFence }), null, "ucp_worker_fence", () => undefined).promise);
  }

  private readonly memories = new Map<number, MemoryHandle>();
  /** Registered memory by its ArrayBuffer: an operation whose local buffer is one holds its handle. */
  private readonly memoryOf = new WeakMap<ArrayBufferLike, MemoryHandle>();
  private readonly memoryOwner = {
    packRkey: async (h: MemoryHandle): Promise<Uint8Array> =>
      packKey(h.address, h.length, await this.copyOut({ op: Op.RkeyPack, target: h.id }, 1024, "ucp_rkey_pack")),
    unmap: async (h: MemoryHandle): Promise<void> => {
      h.detach((b) => backend().detachView(b));
      try {
        if (!this.closed) await this.settled(this.request(submission({ op: Op.MemUnmap, target: h.id }), h.bytes, "ucp_mem_unmap", () => undefined).promise);
      } finally {
        this.memories.delete(h.id);
        this.memoryOf.delete(h.bytes.buffer);
      }
    },
  };

  /** @internal Count `promise` against the memory handle `bytes` belongs to, if any. */
  holdMemory<T>(bytes: Uint8Array, promise: Promise<T>): Promise<T> {
    const h = this.memoryOf.get(bytes.buffer);
    return h ? h.inFlight.hold(promise) : promise;
  }

  /** @internal A new id for an object the executor keeps by id (endpoint, listener, memory, key). */
  newObjectId(): number {
    return this.nextObjectId++;
  }

  /** @internal */
  forgetEndpoint(id: number): void {
    const scope = this.endpoints.get(id)?.scope;
    if (scope !== undefined) this.scopes.release(scope);
    this.endpoints.delete(id);
  }

  /**
   * Listen for connections on `host:port` (port 0: any free port, see `listener.port`).
   * Accepted endpoints go to `onConnection`, or to the listener's async iterator; connections
   * that could not be accepted to `onError`. The port speaks ucx-ts's hello unless
   * `protocol: "ucx"` asks for UCX's own listener (plain UCX/UCXX clients; on UCX 1.13 a TCP
   * client writing unexpected bytes to it aborts this process).
   */
  async listen(options: ListenOptions = {}): Promise<Listener> {
    const protocol = checkProtocol(options.protocol);
    const errorHandling = options.errorHandling ?? this.errorHandling;
    if (!["peer", "none"].includes(errorHandling)) throw invalidArgument(`errorHandling must be peer or none`);
    const id = this.nextObjectId++;
    const sa = await sockaddr(options.host ?? "0.0.0.0", options.port ?? 0);
    const listener = new Listener(this, id, options);
    this.listeners.set(id, listener);
    try {
      if (protocol === "hello") {
        const server = await listenWithHello(this, listener, {
          host: options.host ?? "0.0.0.0",
          port: options.port ?? 0,
          errorHandling,
          maxPendingHandshakes: options.maxPendingHandshakes,
          handshakeTimeoutMs: options.handshakeTimeoutMs,
        });
        listener.bound(server.port, server);
        return listener;
      }
      const port = await this.settled(
        this.request(submission({ op: Op.Listen, target: id, address: this.addressOf(sa), length: sa.length }), sa, "ucp_listener_create", (p) => p)
          .promise,
      );
      listener.bound(port);
    } catch (e) {
      this.listeners.delete(id);
      this.updateActive();
      throw e;
    }
    return listener;
  }

  /** @internal */
  async closeListener(id: number): Promise<void> {
    if (!this.listeners.has(id)) return;
    try {
      // A hello listener has no UCX listener: its TCP server was closed by the listener.
      if (!this.closed && this.listeners.get(id)!.protocol === "ucx") await this.settled(this.request(submission({ op: Op.ListenerClose, target: id }), null, "ucp_listener_destroy", () => undefined).promise);
    } finally {
      this.listeners.delete(id);
      this.updateActive();
    }
  }

  // --- tag matching --------------------------------------------------------------------------

  /**
   * Receive a tagged message from any endpoint into `buffer`. `mask` selects which tag bits
   * must match (default: all). Resolves with the sender's tag and the length received; a
   * message larger than `buffer` rejects with UCS_ERR_MESSAGE_TRUNCATED.
   */
  recv(buffer: BufferLike, tag: Tag, mask: Tag = FULL_MASK, options: RecvOptions = {}): Promise<RecvResult> {
    return this.tagRecv(buffer, tag, mask, options).promise;
  }

  /**
   * @internal The receive, with its request id (endpoints track theirs). With `scope` (an endpoint
   * made through the hello) it matches that receive scope exactly and the user's tag under the
   * user's mask, and reports the sender's tag without the scope (tag.ts, "scoped endpoints").
   * With `ifQueued` (a failed endpoint past its drain) it is posted only if UCX holds a match.
   */
  tagRecv(buffer: BufferLike, tag: Tag, mask: Tag, options: RecvOptions, scope?: number, ifQueued = false): { id: number; promise: Promise<RecvResult> } {
    const bytes = asBytes(buffer);
    const [tagLo, tagHi] = scope === undefined ? tagWords(tag) : scopedTagWords(scope, tag);
    const [maskLo, maskHi] = scope === undefined ? tagWords(mask, "tag mask") : scopedMaskWords(mask);
    if (options.signal?.aborted) return { id: 0, promise: Promise.reject(abortError(options.signal, "recv")) };
    const r = this.request(
      submission({ op: ifQueued ? Op.TagRecvIfQueued : Op.TagRecv, address: this.addressOf(bytes), length: bytes.length, tagLo, tagHi, maskLo, maskHi }),
      bytes,
      "ucp_tag_recv_nbx",
      (length, lo, hi) => ({ tag: scope === undefined ? joinTag(lo, hi) : unscopedTag(lo, hi), length }),
      (status, length) =>
        status === UCS_ERR_MESSAGE_TRUNCATED
          ? new UcxError(
              "UCS_ERR_MESSAGE_TRUNCATED",
              `ucp_tag_recv_nbx failed: UCS_ERR_MESSAGE_TRUNCATED: the message (${length} bytes) does not fit the ${bytes.length}-byte buffer`,
              { status, statusText: describeStatus(status) ?? undefined, incomingLength: length },
            )
          : undefined,
    );
    this.cancelOnAbort(r, options.signal, false, "recv");
    return r;
  }

  /**
   * Receive a multi-buffer batch (UCXX's `tagMultiRecv`, Python `recv_multi`): the frames a
   * peer sent with `sendMulti` (or UCXX's `send_multi`) under `tag`, however many and however
   * large, allocated here as the headers announce them. Resolves with the frames in order.
   * Headers that are malformed or ask for more than the limits reject (UCX_TS_PROTOCOL_ERROR,
   * UCX_TS_LIMIT_EXCEEDED) before anything is allocated.
   */
  recvMulti(tag: Tag, options: MultiRecvOptions = {}): Promise<Uint8Array[]> {
    return this.tagRecvMulti(tag, options).promise;
  }

  /**
   * @internal The multi-receive, with its request id (endpoints track theirs); `scope` and
   * `ifQueued` as in `tagRecv`. The batch's later messages are received with the header's full
   * tag, scope included.
   */
  tagRecvMulti(tag: Tag, options: MultiRecvOptions, scope?: number, ifQueued = false): { id: number; promise: Promise<Uint8Array[]> } {
    const [tagLo, tagHi] = scope === undefined ? tagWords(tag) : scopedTagWords(scope, tag);
    const [maskLo, maskHi] = scope === undefined ? tagWords(options.mask ?? FULL_MASK, "tag mask") : scopedMaskWords(options.mask ?? FULL_MASK);
    const { maxBytes, maxHeaders } = checkLimits(options, this.multiLimits);
    if (options.signal?.aborted) return { id: 0, promise: Promise.reject(abortError(options.signal, "recvMulti")) };
    let payload: Payload | undefined;
    const flags = ifQueued ? MULTI_FLAG_IF_QUEUED : 0;
    const r = this.request(
      submission({ op: Op.MultiRecv, tagLo, tagHi, maskLo, maskHi, length: maxBytes, handle: maxHeaders, flags }),
      null,
      "recvMulti",
      () => {
        if (!payload?.buffers) throw new UcxError("UCX_TS_CLOSED", "recvMulti: the frames did not come back from the progress engine");
        return payload.buffers.map((b) => new Uint8Array(b));
      },
      () => (payload?.code ? new UcxError(payload.code, `recvMulti: ${payload.message}`) : undefined),
      (id) => (payload = this.engine.takePayload(id)),
    );
    this.cancelOnAbort(r, options.signal, false, "recvMulti");
    return r;
  }

  /**
   * @internal Wire an AbortSignal to cancel request `id`: it rejects with an AbortError (abort.ts)
   * once UCX reports it cancelled. With `rejectAtOnce` it rejects on abort even though UCX cannot
   * cancel the operation (stream receives): the buffer then stays with UCX until the endpoint closes.
   */
  cancelOnAbort(r: { id: number; promise: Promise<unknown> }, signal: AbortSignal | undefined, rejectAtOnce = false, operation = "receive"): void {
    if (!signal) return;
    const onAbort = () => {
      this.requests.abort(r.id, abortError(signal, operation), rejectAtOnce);
      this.cancel(r.id);
    };
    signal.addEventListener("abort", onAbort, { once: true });
    // One signal may serve thousands of receives: let go of each listener when its request ends.
    const off = () => signal.removeEventListener("abort", onAbort);
    r.promise.then(off, off);
  }

  /** @internal Ask UCX to cancel request `id`; it then completes with UCS_ERR_CANCELED. */
  cancel(id: number): void {
    if (this.#closed || !this.requests.has(id)) return;
    this.engine.submit(submission({ op: Op.Cancel, target: id }));
  }

  /**
   * Is a message matching `tag`/`mask` waiting? Resolves with its tag and length, or null.
   * The message stays queued for a later `recv`. It answers at once, so a signal only matters
   * if it is aborted already (rejects as an aborted receive does).
   */
  async probe(tag: Tag, mask: Tag = FULL_MASK, options: RecvOptions = {}): Promise<RecvResult | null> {
    const [tagLo, tagHi] = tagWords(tag);
    const [maskLo, maskHi] = tagWords(mask, "tag mask");
    if (options.signal?.aborted) throw abortError(options.signal, "probe");
    const { promise } = this.request(
      submission({ op: Op.TagProbe, tagLo, tagHi, maskLo, maskHi }),
      null,
      "ucp_tag_probe_nb",
      (length, lo, hi): RecvResult | null => ({ tag: joinTag(lo, hi), length }),
    );
    try {
      return await this.settled(promise);
    } catch (e) {
      if ((e as UcxError).code === "UCS_ERR_NO_MESSAGE") return null;
      throw e;
    }
  }

  /** Wait until every operation posted on this worker so far is complete at the transport level. */
  flush(): Promise<void> {
    return this.settled(this.request(submission({ op: Op.WorkerFlush }), null, "ucp_worker_flush_nbx", () => undefined).promise);
  }

  // --- progress ------------------------------------------------------------------------------

  /**
   * Polling and blocking modes: run UCX once (submit queued operations, `ucp_worker_progress`,
   * settle what completed). Thread mode: deliver completions already reported. Returns the
   * amount of work done.
   */
  progress(): number {
    if (this.#closed) return 0;
    return this.engine.progress();
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
    if (this.#closed) return 0;
    return this.engine.wait(timeoutMs);
  }

  /**
   * Await `promise`, progressing the worker meanwhile in polling and blocking modes (yielding
   * to the event loop regularly, so timers, I/O and other workers still run; it never sleeps in
   * `wait()`, which would starve them). In thread mode this is `await`.
   */
  settled<T>(awaited: Promise<T>): Promise<T> {
    // The same Promise for a native one (no allocation); a thenable or a value is adopted.
    const promise = Promise.resolve(awaited);
    // Thread and hybrid modes progress by themselves.
    if (this.progressMode === "thread" || this.progressMode === "hybrid") return promise;
    // One driver loop per worker, however many Promises are awaited through settled() at once:
    // a loop each made 17 concurrent awaits cost 17 progress calls per turn (measured: a round
    // of 16 receives took ~0.9 ms instead of ~0.1).
    this.awaited++;
    // The caller gets `promise` itself: a derived Promise (finally, catch) cost two more
    // Promises and a microtask per operation (Promises cost ~0.7 us each here, as much as the
    // UCX calls of a small send).
    promise.then(this.unawait, this.unawait);
    this.driver ??= this.drive();
    return promise;
  }

  private readonly unawait = (): void => void this.awaited--;

  /** Promises awaited through settled() that have not settled yet (polling, blocking). */
  private awaited = 0;
  private driver: Promise<void> | undefined;

  /** Progress while anything is awaited through settled(), yielding to the event loop now and then. */
  private async drive(): Promise<void> {
    while (this.awaited > 0 && !this.#closed) {
      this.engine.progress();
      // A resolved Promise runs its reactions on the microtask queue: give it a turn.
      await undefined;
      // Let timers and I/O run now and then, but not on every round: a macrotask turn costs
      // microseconds to a millisecond (setTimeout's floor), more than a whole round trip.
      // (The turn is shared with every other loop of this process: see event-loop.ts.)
      if (turnDue(2)) await yieldToEventLoop();
    }
    // Cleared here, synchronously with the last check: a settled() call after this point must
    // start a new driver (a Promise.finally would clear it a microtask late, and a call in
    // between would wait forever).
    this.driver = undefined;
  }

  // --- closing -------------------------------------------------------------------------------

  /**
   * Close everything: pending requests are cancelled (their Promises reject with
   * UCS_ERR_CANCELED), endpoints force-closed, listeners destroyed, UCX freed. Idempotent.
   */
  close(): Promise<void> {
    if (!this.closing) {
      this.requests.markClosing();
      this.closing = (async () => {
        // Sends that resolved early are owed to the peer: let them finish (bounded: a dead peer
        // with error handling "none" may never complete them), then cancel the rest.
        if (this.sendPath.unfinished > 0) {
          let timer: ReturnType<typeof setTimeout> | undefined;
          const timeout = new Promise<void>((resolve) => (timer = setTimeout(resolve, EARLY_SEND_DRAIN_MS)));
          await this.settled(Promise.race([this.sendPath.whenDrained(), timeout]));
          clearTimeout(timer);
        }
        await Promise.all([...this.listeners.values()].map((l) => l.markClosed()));
        for (const ep of this.endpoints.values()) ep.markClosed();
        // UCX frees the memory it allocated when the engine stops: no view may reach it after.
        for (const h of this.memories.values()) h.detach((b) => backend().detachView(b));
        await this.engine.stop();
        this.#closed = true;
        this.amRouter.closeAll(new UcxError("UCX_TS_CLOSED", "the worker is closed"));
        this.requests.abandonAll(UCS_ERR_CANCELED);
        this.listeners.clear();
        this.endpoints.clear();
      })();
    }
    return this.closing;
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.close();
  }

  /** @internal The address UCX is given for `bytes` (the caller keeps `bytes` referenced). */
  addressOf(bytes: Uint8Array): number {
    return backend().addressOf(bytes);
  }
}

function checkProtocol(protocol: unknown): ConnectProtocol {
  if (protocol === undefined) return "hello";
  if (protocol !== "hello" && protocol !== "ucx") throw invalidArgument(`protocol must be 'hello' or 'ucx', got '${String(protocol)}'`);
  return protocol;
}
