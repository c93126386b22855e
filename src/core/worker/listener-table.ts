/**
 * A worker's listeners: `listen` on the hello (hello/connection.ts) or on UCX's sockaddr
 * listener, the close of either, and the table by id that connection requests are routed through.
 */
import { markCloseOnExec } from "../close-on-exec.ts";
import { submission } from "../engine/engine.ts";
import { Op } from "../engine/records.ts";
import type { ErrorHandling } from "../endpoint.ts";
import { listenWithHello, type HelloWorker } from "../hello/connection.ts";
import { authWithoutHello, secretBytes } from "../hello/auth.ts";
import { Listener, type ListenerHost, type ListenOptions } from "../listener.ts";
import { sockaddr } from "../sockaddr.ts";
import { checkErrorHandling, checkProtocol } from "./options.ts";
import { addressOf, type RequestPath } from "./request-path.ts";

export class ListenerTable {
  private readonly listeners = new Map<number, Listener>();

  constructor(
    /** The worker: what its listeners and the hello are given. */
    private readonly worker: ListenerHost & HelloWorker,
    private readonly path: RequestPath,
    private readonly settled: <T>(p: Promise<T>) => Promise<T>,
  ) {}

  get size(): number {
    return this.listeners.size;
  }

  get(id: number): Listener | undefined {
    return this.listeners.get(id);
  }

  async listen(options: ListenOptions, defaultErrorHandling: ErrorHandling): Promise<Listener> {
    const protocol = checkProtocol(options.protocol);
    const secret = secretBytes(options.auth);
    if (secret && protocol !== "hello") throw authWithoutHello();
    const errorHandling = checkErrorHandling(options.errorHandling ?? defaultErrorHandling);
    const id = this.path.newObjectId();
    const sa = await sockaddr(options.host ?? "0.0.0.0", options.port ?? 0);
    const listener = new Listener(this.worker, id, options);
    this.listeners.set(id, listener);
    try {
      if (protocol === "hello") {
        const server = await listenWithHello(this.worker, listener, {
          host: options.host ?? "0.0.0.0",
          port: options.port ?? 0,
          errorHandling,
          maxPendingHandshakes: options.maxPendingHandshakes,
          handshakeTimeoutMs: options.handshakeTimeoutMs,
          secret,
        });
        listener.bound(server.port, server);
        return listener;
      }
      const port = await this.settled(
        this.path.request(submission({ op: Op.Listen, target: id, address: addressOf(sa), length: sa.length }), sa, "ucp_listener_create", (p) => p)
          .promise,
      );
      listener.bound(port);
      markCloseOnExec(); // the listening socket
    } catch (e) {
      this.listeners.delete(id);
      this.path.updateActive();
      throw e;
    }
    return listener;
  }

  async close(id: number): Promise<void> {
    if (!this.listeners.has(id)) return;
    try {
      // A hello listener has no UCX listener: its TCP server was closed by the listener.
      if (!this.path.closed && this.listeners.get(id)!.protocol === "ucx") {
        await this.settled(this.path.request(submission({ op: Op.ListenerClose, target: id }), null, "ucp_listener_destroy", () => undefined).promise);
      }
    } finally {
      this.listeners.delete(id);
      this.path.updateActive();
    }
  }

  /** The worker is closing: every listener stops (a hello listener's TCP server closes). */
  markAllClosed(): Promise<void[]> {
    return Promise.all([...this.listeners.values()].map((l) => l.markClosed()));
  }

  clear(): void {
    this.listeners.clear();
  }
}
