/**
 * The connecting side of the hello (wire.ts): one TCP connection to a listener, our hello out,
 * its answer (accept or refuse) back, the connection closed. Every way this can fail ends in a
 * typed UcxError within `timeoutMs`: nothing listening, a refusal, a peer that is not a ucx-ts
 * hello listener, silence.
 */
import { connect, type Socket } from "node:net";
import { UCS_STATUS } from "../../ffi/index.ts";
import { connectionError, UcxError } from "../errors.ts";
import { sameBytes } from "../buffers.ts";
import { describeStatus } from "../library.ts";
import { clientProof, freshNonce, listenerProof, proofMatches, type Transcript } from "./auth.ts";
import { AUTH_BYTES, challengeBody, encodeGreeting, encodeProof, type Greeting, greetingBody, type HelloMessage, HelloKind, HelloProtocolError, HelloReader, proofPairingBody } from "./wire.ts";
import type { Pairing } from "./pairing.ts";

export const DEFAULT_CONNECT_TIMEOUT_MS = 10_000;

/** The socket's errno as the UCS status UCX's own connection manager reports for it. */
const SOCKET_ERRORS: Readonly<Record<string, number>> = {
  ECONNREFUSED: UCS_STATUS.UCS_ERR_NOT_CONNECTED,
  EHOSTUNREACH: UCS_STATUS.UCS_ERR_UNREACHABLE,
  ENETUNREACH: UCS_STATUS.UCS_ERR_UNREACHABLE,
  ECONNRESET: UCS_STATUS.UCS_ERR_CONNECTION_RESET,
  ETIMEDOUT: UCS_STATUS.UCS_ERR_TIMED_OUT,
};

/**
 * Resolves with the listener's answer and the connection, still open: an accept's connection
 * becomes the endpoint's link (link.ts), the caller closes it otherwise. With `secret`, the hello
 * offers authentication (auth.ts) and only an accept whose proof verifies resolves: a listener
 * that cannot prove it holds the secret rejects with UCX_TS_AUTH_FAILED, before any endpoint.
 * `pairing` answers the challenge's count with this side's (pairing.ts); a UcxError it throws
 * ends the hello with that error.
 */
export function exchangeHello(
  host: string,
  port: number,
  greeting: Greeting,
  options: { timeoutMs?: number; secret?: Uint8Array; pairing: (listener: Uint8Array, listenerCount: number) => Pairing },
): Promise<{ message: HelloMessage; socket: Socket }> {
  const timeoutMs = options.timeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS;
  const secret = options.secret;
  const ours: Greeting = secret ? { ...greeting, auth: freshNonce() } : { ...greeting, auth: undefined };
  const hello = encodeGreeting(HelloKind.Hello, ours);
  let transcript: Transcript | undefined;
  let challenge: { count: number; identity: Uint8Array } | undefined;
  const where = `${host}:${port}`;
  return new Promise((resolve, reject) => {
    let socket: Socket | undefined;
    let settled = false;
    const finish = (outcome: { message: HelloMessage } | { error: UcxError }) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      if ("message" in outcome) {
        socket!.removeAllListeners("data");
        socket!.removeAllListeners("close");
        socket!.removeAllListeners("error");
        socket!.on("error", () => {}); // until the link takes it over
        socket!.pause();
        resolve({ message: outcome.message, socket: socket! });
      } else {
        socket?.destroy();
        reject(outcome.error);
      }
    };
    const timer = setTimeout(() => finish({ error: connectionError(UCS_STATUS.UCS_ERR_TIMED_OUT, host, port, describeStatus) }), timeoutMs);
    const reader = new HelloReader();
    socket = connect({ host, port }, () => socket!.write(hello));
    socket.setNoDelay(true);
    socket.on("error", (e: NodeJS.ErrnoException) => {
      // The same words and statuses as a UCX connection would give (errors.ts, connectionError).
      finish({ error: connectionError(SOCKET_ERRORS[e.code ?? ""] ?? UCS_STATUS.UCS_ERR_IO_ERROR, host, port, describeStatus, e) });
    });
    socket.on("close", () =>
      finish({
        error: new UcxError(
          "UCS_ERR_CONNECTION_RESET",
          `connect ${where}: the peer closed the connection without answering the hello (not a ucx-ts listener? ` +
            `a plain UCX listener needs connect({ host, port, protocol: "ucx" }))`,
        ),
      }),
    );
    const authFailed = (why: string) => finish({ error: new UcxError("UCX_TS_AUTH_FAILED", `connect ${where}: ${why}`) });
    socket.on("data", (chunk: Uint8Array) => {
      try {
        const message = reader.push(chunk);
        if (!message) return;
        if (message.kind === HelloKind.Hello || message.kind === HelloKind.Proof) throw new HelloProtocolError(`the listener sent kind ${message.kind} instead of answering`);
        if (message.kind === HelloKind.Challenge) {
          if (challenge) throw new HelloProtocolError("the listener sent a second challenge");
          if (!secret && message.nonce) throw new HelloProtocolError("the listener sent an authentication challenge to a hello that offered none");
          if (secret && !message.nonce) return authFailed("the listener's challenge carries no nonce (it has no secret, or is not who it claims)");
          challenge = { count: message.count, identity: message.identity };
          let pairing: Pairing;
          try {
            pairing = options.pairing(message.identity, message.count);
          } catch (e) {
            if (!(e instanceof UcxError)) throw e;
            return finish({ error: e });
          }
          reader.next();
          if (!secret) return void socket!.write(encodeProof(pairing));
          transcript = { helloBody: greetingBody(ours), challengeBody: challengeBody(message.count, message.identity, message.nonce), listenerIdentity: message.identity };
          socket!.write(encodeProof(pairing, clientProof(secret, transcript, proofPairingBody(pairing, true))));
          return;
        }
        if (message.kind === HelloKind.Accept && !challenge) throw new HelloProtocolError("the listener accepted before its challenge");
        if (message.kind === HelloKind.Accept && secret) {
          const accept = message.greeting;
          if (!transcript) return authFailed("the listener accepted without authenticating (it has no secret, or is not who it claims)");
          if (!accept.auth) return authFailed("the listener's accept carries no proof");
          const expected = listenerProof(secret, transcript, greetingBody({ ...accept, auth: new Uint8Array(AUTH_BYTES) }));
          if (!proofMatches(accept.auth, expected)) return authFailed("the listener's proof does not match this side's secret");
          if (!sameBytes(accept.address, transcript.listenerIdentity)) return authFailed("the listener's accept names another worker than its challenge");
        } else if (message.kind === HelloKind.Accept && message.greeting.auth) {
          throw new HelloProtocolError("the listener's accept carries a proof this side did not ask for");
        } else if (message.kind === HelloKind.Accept && !sameBytes(message.greeting.address, challenge!.identity)) {
          throw new HelloProtocolError("the listener's accept names another worker than its challenge");
        }
        finish({ message });
      } catch (e) {
        if (!(e instanceof HelloProtocolError)) throw e;
        finish({ error: new UcxError("UCX_TS_PROTOCOL_ERROR", `connect ${where}: ${e.message}`) });
      }
    });
  });
}
