/**
 * `Listener`: accepts connections on a host and port. Each connection request becomes an
 * `Endpoint`, handed to `onConnection` or, without one, queued for the async iterator.
 */
import type { Endpoint, ErrorHandling } from "./endpoint.ts";
import { UcxError } from "./errors.ts";
import { ipv4String } from "./sockaddr.ts";
import type { Worker } from "./worker.ts";

export interface ListenOptions {
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
  /** The last connection that could not be accepted, if any. */
  lastError: UcxError | undefined;

  /** @internal Made by `Worker.listen`. */
  constructor(
    readonly worker: Worker,
    readonly id: number,
    private readonly options: ListenOptions,
  ) {}

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
  bound(port: number): void {
    this.#port = port;
  }

  /** @internal A connection request arrived (from the executor's conn handler). */
  onConnectionRequest(connRequest: number, ip: number, port: number): void {
    if (this.#closed) return;
    const remote = { host: ipv4String(ip), port };
    this.worker.accept(connRequest, this.options.errorHandling ?? this.worker.errorHandling, remote).then(
      (ep) => {
        if (this.options.onConnection) this.options.onConnection(ep);
        else {
          const waiter = this.waiters.shift();
          if (waiter) waiter({ value: ep, done: false });
          else this.queue.push(ep);
        }
      },
      (e: UcxError) => (this.lastError = e),
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
    this.markClosed();
    await this.worker.closeListener(this.id);
  }

  /** @internal */
  markClosed(): void {
    this.#closed = true;
    for (const w of this.waiters.splice(0)) w({ value: undefined, done: true });
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.close();
  }
}
