/**
 * The hello's TCP connection, kept open for the life of the endpoint pair it made: its end is how
 * one side learns that the other closed its endpoint or died. UCX does not tell: two endpoints
 * made by worker address stay silent when one side closes (measured here, UCX 1.13, error
 * handling "peer": no error on the survivor within 25 s), where UCX's sockaddr connection
 * manager reported the same close within milliseconds. The kernel closes the socket of a killed
 * process at once, so a dead peer is seen without waiting for UCX's keepalive.
 *
 * After the hello nothing more is said on it: any byte, an error or the close is the loss.
 */
import type { Socket } from "node:net";

/**
 * How long the loss waits before it fails the endpoint: a peer that closes its endpoint flushes
 * first, so its messages are already here; a killed one may have left some in UCX's hands, which
 * the worker's progress then delivers before the endpoint is failed.
 */
export const LINK_LOSS_GRACE_MS = 250;

export class HelloLink {
  #closed = false;
  private timer: ReturnType<typeof setTimeout> | undefined;

  constructor(
    private readonly socket: Socket,
    onLost: () => void,
  ) {
    const lost = () => {
      if (this.#closed) return;
      this.#closed = true;
      socket.destroy();
      this.timer = setTimeout(onLost, LINK_LOSS_GRACE_MS);
    };
    socket.on("data", lost);
    socket.on("error", lost);
    socket.on("close", lost);
    socket.setKeepAlive(true);
    socket.unref(); // the endpoint, not its link, decides whether the process has work left
    socket.resume();
  }

  /** Our endpoint closed: tell the peer by closing the connection. Idempotent. */
  close(): void {
    clearTimeout(this.timer);
    if (this.#closed) return;
    this.#closed = true;
    this.socket.end();
    // A peer that never reads its end must not keep ours half-open.
    setTimeout(() => this.socket.destroy(), 1000).unref?.();
  }
}
