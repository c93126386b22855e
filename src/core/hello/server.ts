/**
 * The listening side of the hello (wire.ts) on the runtime's own TCP server (`node:net`, which
 * Node, Deno and Bun all provide): UCX never sees a byte a stranger sends to the port.
 *
 * A connection owes one well-formed hello within `timeoutMs`; anything else (garbage, a wrong
 * version, an oversize length, silence, bytes after the hello) closes it and is reported through
 * `onError` only. At most `maxPending` connections may be waiting for their hello or its answer;
 * further ones are closed at once, so a flood of silent connections costs bounded memory
 * (maxPending x (HEADER_BYTES + MAX_BODY) at worst).
 */
import { createServer, type Server, type Socket } from "node:net";
import { UcxError } from "../errors.ts";
import { type Greeting, HelloKind, HelloProtocolError, HelloReader } from "./wire.ts";

export interface Remote {
  readonly host: string;
  readonly port: number;
}

export interface HelloServerOptions {
  readonly host: string;
  readonly port: number;
  /** Most connections waiting for their hello or its answer (default 64). */
  readonly maxPending?: number;
  /** How long a connection may take to send its hello (default 5,000 ms). */
  readonly timeoutMs?: number;
  /**
   * A complete hello. Called synchronously from the socket's data event, in arrival order, so
   * that endpoints are created in hello order (see connection.ts, "conn_sn"). Resolves with the
   * answer to write (an accept or a refusal) and, for an accept, who keeps the connection open
   * afterwards (link.ts); a refusal's connection is closed after the answer.
   */
  readonly onHello: (hello: Greeting, remote: Remote) => Promise<HelloAnswer>;
  /** A connection that ended without a usable hello, or whose answer could not be made. */
  readonly onError: (error: UcxError) => void;
}

export interface HelloAnswer {
  readonly answer: Uint8Array;
  /** An accept: takes the connection once the answer is written. */
  readonly keep?: (socket: Socket) => void;
  /** An accept whose connection was gone before the answer: undo what the hello made. */
  readonly discard?: () => void;
}

export const DEFAULT_MAX_PENDING = 64;
export const DEFAULT_HELLO_TIMEOUT_MS = 5000;

export class HelloServer {
  private readonly server: Server;
  private readonly pending = new Set<Socket>();
  private readonly maxPending: number;
  private readonly timeoutMs: number;

  private constructor(private readonly options: HelloServerOptions) {
    this.maxPending = options.maxPending ?? DEFAULT_MAX_PENDING;
    this.timeoutMs = options.timeoutMs ?? DEFAULT_HELLO_TIMEOUT_MS;
    this.server = createServer((socket) => this.onConnection(socket));
  }

  /** Listen; resolves once bound (the port is then `port`), rejects if the port cannot be had. */
  static start(options: HelloServerOptions): Promise<HelloServer> {
    const s = new HelloServer(options);
    return new Promise((resolve, reject) => {
      const onError = (e: NodeJS.ErrnoException) =>
        reject(new UcxError(e.code === "EADDRINUSE" ? "UCS_ERR_BUSY" : "UCS_ERR_IO_ERROR", `listen on ${options.host}:${options.port}: ${e.message}`, { cause: e }));
      s.server.once("error", onError);
      s.server.listen(options.port, options.host, () => {
        s.server.off("error", onError);
        // Later server errors (rare: the socket table) go to the listener's error event.
        s.server.on("error", (e) => options.onError(new UcxError("UCS_ERR_IO_ERROR", `listener: ${e.message}`, { cause: e })));
        resolve(s);
      });
    });
  }

  get port(): number {
    return (this.server.address() as { port: number }).port;
  }

  /** Connections waiting for their hello or its answer. */
  get pendingCount(): number {
    return this.pending.size;
  }

  private onConnection(socket: Socket): void {
    const remote = { host: normaliseHost(socket.remoteAddress), port: socket.remotePort ?? 0 };
    const where = `${remote.host}:${remote.port}`;
    if (this.pending.size >= this.maxPending) {
      socket.destroy();
      this.options.onError(new UcxError("UCX_TS_LIMIT_EXCEEDED", `connection from ${where} closed: ${this.maxPending} handshakes are already pending`));
      return;
    }
    this.pending.add(socket);
    const reader = new HelloReader();
    let answered = false;
    const drop = (error: UcxError) => {
      if (!this.pending.delete(socket)) return;
      clearTimeout(timer);
      socket.destroy();
      this.options.onError(error);
    };
    const timer = setTimeout(() => drop(new UcxError("UCS_ERR_TIMED_OUT", `connection from ${where} closed: no hello within ${this.timeoutMs} ms`)), this.timeoutMs);
    socket.on("error", () => {}); // a reset shows as "close" below; this keeps it from being thrown
    socket.on("close", () => {
      if (!answered) drop(new UcxError("UCS_ERR_CONNECTION_RESET", `connection from ${where} closed before its hello was answered`));
    });
    socket.on("data", (chunk: Uint8Array) => {
      if (answered) return drop(new UcxError("UCX_TS_PROTOCOL_ERROR", `connection from ${where}: bytes after the hello`));
      let message;
      try {
        message = reader.push(chunk);
      } catch (e) {
        if (!(e instanceof HelloProtocolError)) throw e;
        return drop(new UcxError("UCX_TS_PROTOCOL_ERROR", `connection from ${where} closed: ${e.message}`));
      }
      if (!message) return;
      if (message.kind !== HelloKind.Hello) return drop(new UcxError("UCX_TS_PROTOCOL_ERROR", `connection from ${where} closed: it answered instead of greeting`));
      answered = true;
      clearTimeout(timer);
      this.options.onHello(message.greeting, remote).then(
        ({ answer, keep, discard }) => {
          if (!this.pending.delete(socket) || socket.destroyed) return discard?.();
          if (!keep) return void socket.end(answer);
          socket.removeAllListeners("data");
          socket.removeAllListeners("close");
          socket.write(answer);
          keep(socket);
        },
        (e: unknown) => {
          answered = false;
          drop(e instanceof UcxError ? e : new UcxError("UCX_TS_PROTOCOL_ERROR", `connection from ${where}: ${(e as Error).message}`));
        },
      );
    });
  }

  /**
   * Stop listening and close the connections still in their handshake. Accepted connections are
   * their endpoints' links and stay: net.Server's close callback would wait for them, so this
   * does not.
   */
  close(): Promise<void> {
    for (const socket of this.pending) socket.destroy();
    this.pending.clear();
    this.server.close();
    return Promise.resolve();
  }
}

/** "::ffff:127.0.0.1" (an IPv4 client on a dual-stack socket) as "127.0.0.1". */
function normaliseHost(address: string | undefined): string {
  if (!address) return "";
  return address.startsWith("::ffff:") && address.includes(".") ? address.slice(7) : address;
}
