/**
 * `Listener`: accepts connections on a host and port. Each connection becomes an `Endpoint`,
 * handed to `onConnection` or, without one, queued for the async iterator; each connection that
 * could not be accepted is reported to `onError`.
 *
 * Two protocols on the port. "hello" (default): the runtime's own TCP server speaks ucx-ts's
 * hello (hello/), then both sides create their endpoints by worker address; UCX never parses a
 * stranger's bytes. "ucx": UCX's sockaddr listener (`ucp_listener_create`), for plain UCX and
 * UCXX peers; on UCX 1.13 any TCP client writing unexpected bytes to that port aborts the
 * process (tcp_sockcm_ep.c), so expose it only to peers you trust.
 */
import { callUserCallback } from "./user-callback.ts";
import type { Endpoint, ErrorHandling } from "./endpoint.ts";
import { UcxError } from "./errors.ts";
import type { HelloAuthOptions } from "./hello/auth.ts";
import type { HelloServer } from "./hello/server.ts";
import { ipv4String } from "./sockaddr.ts";

/**
 * What a listener needs of the worker that made it (worker.ts implements it), declared here so
 * that the listener never imports the worker above it.
 */
export interface ListenerHost {
  readonly errorHandling: ErrorHandling;
  /** Create the endpoint of an accepted UCX connection request. */
  accept(connRequest: number, errorHandling: ErrorHandling, remote: { host: string; port: number }): Promise<Endpoint>;
  closeListener(id: number): Promise<void>;
}

/** What the listening port speaks: ucx-ts's hello (default) or UCX's own sockaddr protocol. */
export type ConnectProtocol = "hello" | "ucx";

export interface ListenOptions {
  /**
   * "hello" (default): ucx-ts's handshake on a TCP server of the runtime's; clients connect with
   * `connect({ host, port })`. "ucx": UCX's sockaddr listener, for UCX/UCXX clients (C
   * `ucp_client_server`, UCXX `createEndpointFromHostname`) and `connect({ host, port, protocol:
   * "ucx" })`; on UCX 1.13 a TCP client sending it unexpected bytes aborts this process.
   */
  readonly protocol?: ConnectProtocol;
  /** Hello listeners: most connections in their handshake at once (default 64); a new one past it closes the oldest. */
  readonly maxPendingHandshakes?: number;
  /** Hello listeners: how long a connection may take over its whole handshake, proof included (default 5,000 ms). */
  readonly handshakeTimeoutMs?: number;
  /**
   * Hello listeners: accept only clients that prove they hold `secret` (HMAC-SHA-256
   * challenge-response, hello/auth.ts); the others are closed and reported as
   * UCX_TS_AUTH_FAILED, never delivered. Authenticates, does not encrypt (README,
   * "Authenticated listeners").
   */
  readonly auth?: HelloAuthOptions;
  /**
   * Called with each connection that could not be accepted: a refused peer (UCS_ERR_REJECTED:
   * another error handling mode), bytes that are not a hello (UCX_TS_PROTOCOL_ERROR), silence
   * (UCS_ERR_TIMED_OUT), too many pending handshakes (UCX_TS_LIMIT_EXCEEDED), an endpoint UCX
   * could not create. The listener goes on listening. `listener.onError` may be set instead.
   */
  readonly onError?: (error: UcxError) => void;
  /** Port to listen on; 0 (default) lets the OS pick a free one (see `listener.port`). */
  readonly port?: number;
  /** Address to bind; default all IPv4 interfaces. */
  readonly host?: string;
  /** Error handling of accepted endpoints; default the worker's. */
  readonly errorHandling?: ErrorHandling;
  /** Called with each accepted endpoint. Without it, iterate the listener. */
  readonly onConnection?: (endpoint: Endpoint) => void;
}

export class Listener implements AsyncIterable<Endpoint> {
  #port = 0;
  #closed = false;
  private readonly queue: Endpoint[] = [];
  private readonly waiters: ((r: IteratorResult<Endpoint>) => void)[] = [];
  #hello: HelloServer | undefined;
  /** The last connection that could not be accepted, if any. */
  lastError: UcxError | undefined;
  /** Called with each connection that could not be accepted (see `ListenOptions.onError`). */
  onError: ((error: UcxError) => void) | undefined;

  /** @internal Made by `Worker.listen`. */
  constructor(
    /** The worker that made this listener (typed by what the listener needs of it). */
    readonly worker: ListenerHost,
    readonly id: number,
    private readonly options: ListenOptions,
  ) {
    this.onError = options.onError;
  }

  /** "hello" or "ucx": what the port speaks. */
  get protocol(): ConnectProtocol {
    return this.options.protocol ?? "hello";
  }

  /** The port actually bound. */
  get port(): number {
    return this.#port;
  }

  get host(): string {
    return this.options.host ?? "0.0.0.0";
  }

  get closed(): boolean {
    return this.#closed;
  }

  /** @internal */
  bound(port: number, hello?: HelloServer): void {
    this.#port = port;
    this.#hello = hello;
  }

  /** @internal An endpoint is accepted: to `onConnection`, a waiting `accept()`, or the queue. */
  deliver(ep: Endpoint): void {
    if (this.options.onConnection) callUserCallback(this.options.onConnection, ep);
    else {
      const waiter = this.waiters.shift();
      if (waiter) waiter({ value: ep, done: false });
      else this.queue.push(ep);
    }
  }

  /** @internal A connection could not be accepted. */
  reportError(error: UcxError): void {
    this.lastError = error;
    if (this.#closed) return;
    callUserCallback(this.onError, error);
  }

  /** @internal A connection request arrived (from the executor's conn handler). */
  onConnectionRequest(connRequest: number, ip: number, port: number): void {
    if (this.#closed) return;
    const remote = { host: ipv4String(ip), port };
    this.worker.accept(connRequest, this.options.errorHandling ?? this.worker.errorHandling, remote).then(
      (ep) => this.deliver(ep),
      (e: UcxError) => this.reportError(e),
    );
  }

  /** Accepted endpoints, in order, until the listener closes. */
  [Symbol.asyncIterator](): AsyncIterator<Endpoint> {
    return {
      next: () => {
        const ep = this.queue.shift();
        if (ep) return Promise.resolve({ value: ep, done: false });
        if (this.#closed) return Promise.resolve({ value: undefined, done: true });
        return new Promise((resolve) => this.waiters.push(resolve));
      },
      return: async () => {
        await this.close();
        return { value: undefined, done: true };
      },
    };
  }

  /** The next accepted endpoint. */
  async accept(): Promise<Endpoint> {
    const r = await this[Symbol.asyncIterator]().next();
    if (r.done) throw new UcxError("UCX_TS_CLOSED", "the listener is closed");
    return r.value;
  }

  /** Stop listening. Endpoints already accepted stay open. Idempotent. */
  async close(): Promise<void> {
    if (this.#closed) return;
    await this.markClosed();
    await this.worker.closeListener(this.id);
  }

  /** @internal Also what the worker's close does: the hello server stops here (UCX's listener goes with the worker). */
  markClosed(): Promise<void> {
    this.#closed = true;
    for (const w of this.waiters.splice(0)) w({ value: undefined, done: true });
    const hello = this.#hello;
    this.#hello = undefined;
    return hello ? hello.close() : Promise.resolve();
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.close();
  }
}
