/**
 * The listening side of the hello (wire.ts) on the runtime's own TCP server (`node:net`, which
 * Node, Deno and Bun all provide): UCX never sees a byte a stranger sends to the port.
 *
 * A connection owes one well-formed hello (and, on an authenticated listener, a valid proof,
 * auth.ts) within `timeoutMs`; anything else (garbage, a wrong version, an oversize length,
 * silence, a wrong or late proof, bytes after the hello) closes it and is reported through
 * `onError` only: `onHello`, which makes the endpoint, never sees it. At most `maxPending`
 * connections may be in their handshake; a new one past that closes the oldest, so a flood of
 * silent connections costs bounded memory (maxPending x (HEADER_BYTES + MAX_BODY) at worst) and
 * does not shut out an honest client that completes its handshake promptly.
 */
import { createServer, type Server, type Socket } from "node:net";
import { UcxError } from "../errors.ts";
import { clientProof, freshNonce, listenerProof, proofMatches, type Transcript } from "./auth.ts";
import { AUTH_BYTES, challengeBody, encodeChallenge, encodeGreeting, encodeRefusal, type Greeting, greetingBody, HelloKind, HelloProtocolError, HelloReader, proofPairingBody, RefuseCode } from "./wire.ts";
import type { Pairing } from "./pairing.ts";

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
   * A complete handshake: the client's hello and its proof's pairing (pairing.ts), with the count
   * this side's challenge gave. Called synchronously from the socket's data event. Resolves with
   * the answer to write (an accept or a refusal) and, for an accept, who keeps the connection
   * open afterwards (link.ts); a refusal's connection is closed after the answer.
   */
  readonly onHello: (
    hello: Greeting,
    remote: Remote,
    encodeAccept: (g: Greeting) => Uint8Array,
    pairing: { readonly listenerCount: number; readonly client: Pairing },
  ) => Promise<HelloAnswer>;
  /** The listener's worker address, named in every challenge (and bound into both proofs). */
  readonly identity: Uint8Array;
  /**
   * The count the challenge carries: endpoints this worker has made by address to the worker of
   * the hello's address (pairing.ts). Throws a UcxError for an address that is not one.
   */
  readonly pairingCount: (clientAddress: Uint8Array) => number;
  /** Authenticated listener (auth.ts): a client must prove it holds `secret` before `onHello` is called. */
  readonly auth?: { readonly secret: Uint8Array };
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
  /** Connections in their handshake, oldest first (a Map keeps insertion order). */
  private readonly pending = new Map<Socket, { drop: (e: UcxError) => void; evictable: () => boolean }>();
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
    if (this.pending.size >= this.maxPending && !this.evictOldest()) {
      socket.destroy();
      this.options.onError(new UcxError("UCX_TS_LIMIT_EXCEEDED", `connection from ${where} closed: ${this.maxPending} handshakes are already pending`));
      return;
    }
    const reader = new HelloReader();
    const auth = this.options.auth;
    // "hello": waiting for the hello; "proof": challenge sent, waiting for the proof; "answering":
    // the peer is done (and authenticated), its endpoint is being made; "kept": handed over.
    let state: "hello" | "proof" | "answering" | "kept" = "hello";
    let hello: Greeting | undefined;
    let challenge: { count: number; body: Uint8Array } | undefined;
    const drop = (error: UcxError, answer?: Uint8Array) => {
      if (!this.pending.delete(socket)) return;
      clearTimeout(timer);
      // A refusal's words go out first; the socket is destroyed after, whatever the peer does.
      if (answer) {
        socket.end(answer);
        setTimeout(() => socket.destroy(), 1000).unref?.();
      } else socket.destroy();
      this.options.onError(error);
    };
    this.pending.set(socket, { drop, evictable: () => state === "hello" || state === "proof" });
    // One deadline for the whole handshake: a client that answers the challenge late is as
    // silent as one that never greets.
    const timer = setTimeout(
      () => drop(new UcxError("UCS_ERR_TIMED_OUT", `connection from ${where} closed: handshake not done within ${this.timeoutMs} ms`)),
      this.timeoutMs,
    );
    socket.on("error", () => {}); // a reset shows as "close" below; this keeps it from being thrown
    socket.on("close", () => {
      if (state !== "answering" && state !== "kept") drop(new UcxError("UCS_ERR_CONNECTION_RESET", `connection from ${where} closed before its hello was answered`));
    });
    const answerHello = (greeting: Greeting, transcript: Transcript | undefined, client: Pairing) => {
      state = "answering";
      clearTimeout(timer);
      const encodeAccept = (g: Greeting): Uint8Array => {
        if (!transcript || !auth) return encodeGreeting(HelloKind.Accept, g);
        const proof = listenerProof(auth.secret, transcript, greetingBody({ ...g, auth: new Uint8Array(AUTH_BYTES) }));
        return encodeGreeting(HelloKind.Accept, { ...g, auth: proof });
      };
      this.options.onHello(greeting, remote, encodeAccept, { listenerCount: challenge!.count, client }).then(
        ({ answer, keep, discard }) => {
          if (!this.pending.delete(socket) || socket.destroyed) return discard?.();
          state = "kept";
          if (!keep) return void socket.end(answer);
          socket.removeAllListeners("data");
          socket.removeAllListeners("close");
          socket.write(answer);
          keep(socket);
        },
        (e: unknown) => {
          state = "hello";
          drop(e instanceof UcxError ? e : new UcxError("UCX_TS_PROTOCOL_ERROR", `connection from ${where}: ${(e as Error).message}`));
        },
      );
    };
    socket.on("data", (chunk: Uint8Array) => {
      if (state === "answering" || state === "kept") return drop(new UcxError("UCX_TS_PROTOCOL_ERROR", `connection from ${where}: bytes after the hello`));
      let message;
      try {
        message = reader.push(chunk);
      } catch (e) {
        if (!(e instanceof HelloProtocolError)) throw e;
        return drop(new UcxError("UCX_TS_PROTOCOL_ERROR", `connection from ${where} closed: ${e.message}`));
      }
      if (!message) return;
      if (state === "hello") {
        if (message.kind !== HelloKind.Hello) return drop(new UcxError("UCX_TS_PROTOCOL_ERROR", `connection from ${where} closed: it sent kind ${message.kind} instead of a hello`));
        hello = message.greeting;
        if (auth && !hello.auth) {
          const reason = "this listener requires authentication: connect with auth: { secret }";
          return drop(new UcxError("UCX_TS_AUTH_FAILED", `connection from ${where} refused: it did not offer authentication`), encodeRefusal(reason, RefuseCode.AuthRequired));
        }
        if (!auth && hello.auth) {
          const reason = "this listener does not authenticate (listen without auth); connect without auth";
          return drop(new UcxError("UCX_TS_AUTH_FAILED", `connection from ${where} refused: it asked for authentication, this listener has no secret`), encodeRefusal(reason, RefuseCode.AuthNotOffered));
        }
        let count: number;
        try {
          count = this.options.pairingCount(hello.address);
        } catch (e) {
          if (!(e instanceof UcxError)) throw e;
          return drop(e);
        }
        const nonce = auth ? freshNonce() : undefined;
        challenge = { count, body: challengeBody(count, this.options.identity, nonce) };
        state = "proof";
        reader.next();
        socket.write(encodeChallenge(count, this.options.identity, nonce));
        return;
      }
      // state "proof"
      if (message.kind !== HelloKind.Proof) return drop(new UcxError("UCX_TS_PROTOCOL_ERROR", `connection from ${where} closed: it sent kind ${message.kind} instead of its proof`));
      if ((message.proof !== undefined) !== (auth !== undefined)) return drop(new UcxError("UCX_TS_PROTOCOL_ERROR", `connection from ${where} closed: its proof ${auth ? "lacks" : "carries"} a MAC`));
      if (!auth) return answerHello(hello!, undefined, message.pairing);
      const transcript = { helloBody: greetingBody(hello!), challengeBody: challenge!.body, listenerIdentity: this.options.identity };
      if (!proofMatches(message.proof!, clientProof(auth.secret, transcript, proofPairingBody(message.pairing, true)))) {
        return drop(
          new UcxError("UCX_TS_AUTH_FAILED", `connection from ${where} refused: its proof does not match this listener's secret`),
          encodeRefusal("authentication failed", RefuseCode.AuthFailed),
        );
      }
      answerHello({ ...hello!, auth: undefined }, transcript, message.pairing);
    });
  }

  /**
   * Make room for a new connection by closing the oldest one still in its handshake (not one
   * whose endpoint is being made). A flood of silent connections then only ever holds
   * `maxPending` sockets, and an honest client, which completes in a few round trips, is not
   * shut out by it. False when none can go.
   */
  private evictOldest(): boolean {
    for (const [, entry] of this.pending) {
      if (!entry.evictable()) continue;
      entry.drop(new UcxError("UCX_TS_LIMIT_EXCEEDED", `${this.maxPending} handshakes pending: the oldest was closed to make room for a new connection`));
      return true;
    }
    return false;
  }

  /**
   * Stop listening and close the connections still in their handshake. Accepted connections are
   * their endpoints' links and stay: net.Server's close callback would wait for them, so this
   * does not.
   */
  close(): Promise<void> {
    for (const socket of this.pending.keys()) socket.destroy();
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
