/**
 * The connecting side of the hello (wire.ts): one TCP connection to a listener, our hello out,
 * its answer (accept or refuse) back, the connection closed. Every way this can fail ends in a
 * typed UcxError within `timeoutMs`: nothing listening, a refusal, a peer that is not a ucx-ts
 * hello listener, silence.
 */
import { connect, type Socket } from "node:net";
import { UCS_STATUS } from "../../ffi/index.ts";
import { connectionError, UcxError } from "../errors.ts";
import { describeStatus } from "../library.ts";
import { type HelloMessage, HelloKind, HelloProtocolError, HelloReader } from "./wire.ts";

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
 * becomes the endpoint's link (link.ts), the caller closes it otherwise.
 */
export function exchangeHello(
  host: string,
  port: number,
  hello: Uint8Array,
  timeoutMs = DEFAULT_CONNECT_TIMEOUT_MS,
): Promise<{ message: HelloMessage; socket: Socket }> {
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
    socket.on("data", (chunk: Uint8Array) => {
      try {
        const message = reader.push(chunk);
        if (message?.kind === HelloKind.Hello) throw new HelloProtocolError("the listener greeted instead of answering");
        if (message) finish({ message });
      } catch (e) {
        if (!(e instanceof HelloProtocolError)) throw e;
        finish({ error: new UcxError("UCX_TS_PROTOCOL_ERROR", `connect ${where}: ${e.message}`) });
      }
    });
  });
}
