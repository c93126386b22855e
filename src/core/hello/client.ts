/**
 * The connecting side of the hello (wire.ts): one TCP connection to a listener, our hello out,
 * its answer (accept or refuse) back, the connection closed. Every way this can fail ends in a
 * typed UcxError within `timeoutMs`: nothing listening, a refusal, a peer that is not a ucx-ts
 * hello listener, silence.
 */
import { connect, type Socket } from "node:net";
import { UcxError } from "../errors.ts";
import { type HelloMessage, HelloKind, HelloProtocolError, HelloReader } from "./wire.ts";

export const DEFAULT_CONNECT_TIMEOUT_MS = 10_000;

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
    const timer = setTimeout(
      () => finish({ error: new UcxError("UCS_ERR_TIMED_OUT", `connect ${where}: no answer to the hello within ${timeoutMs} ms`) }),
      timeoutMs,
    );
    const reader = new HelloReader();
    socket = connect({ host, port }, () => socket!.write(hello));
    socket.setNoDelay(true);
    socket.on("error", (e: NodeJS.ErrnoException) => {
      const code = e.code === "ECONNREFUSED" ? "UCS_ERR_UNREACHABLE" : e.code === "ECONNRESET" ? "UCS_ERR_CONNECTION_RESET" : "UCS_ERR_IO_ERROR";
      finish({ error: new UcxError(code, `connect ${where}: ${e.message}`, { cause: e }) });
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
