/**
 * Before a forced close of an endpoint made by worker address: let what UCX is already sending on
 * it leave first (bounded), so that the close finds its transports idle.
 *
 * Why (UCX 1.13.1, tcp, read from its source; docs/testing.md, Soak): such an endpoint's tcp
 * lanes are connected to the peer's interface, one socket carrying both directions. Destroyed
 * while connected both ways (`uct_tcp_ep_destroy`), a lane keeps its receive side and sends a
 * CONN_FIN; if bytes are still waiting to be written (a message half-written; the forced close's
 * purge also cuts a zero-copy one short, so the peer reads the CONN_FIN as part of it), the
 * CONN_FIN waits behind them with write readiness armed. When the peer's own CONN_FIN arrives in
 * the same wake-up, UCX frees the lane handling it (`uct_tcp_cm_handle_conn_fin`) and then runs
 * the write handler on the freed memory (`uct_tcp_iface_handle_events`): SIGSEGV. With nothing
 * in flight the CONN_FIN goes out whole at once, nothing is armed, and a peer that reads it first
 * frees its lane on its own close without a CONN_FIN. So both sides quiesce: the closing one and
 * the one whose link reported the close (its UCX endpoint is still whole then).
 *
 * Endpoints made through UCX's connection manager (`protocol: "ucx"`) connect endpoint to
 * endpoint, which UCX frees at once without a CONN_FIN: they need none of this.
 */
import type { Submitted } from "./endpoint-host.ts";

/**
 * The most a forced close waits for its sends and the flush before it goes ahead anyway. A
 * 16 MiB message crosses loopback tcp in ~10 ms on a quiet machine; the 2-core machine under
 * load 11-22 took over 200 ms for 8 MiB (docs/testing.md). A send the peer never receives (a
 * rendezvous nobody matched) costs the whole wait.
 */
export const FORCE_CLOSE_DRAIN_MS = 2000;

/** How often the wait for the sends looks again (the request table has no per-endpoint signal). */
const POLL_MS = 2;

export interface QuiesceHost {
  /** The worker is closing or closed (it closes every endpoint itself). */
  readonly closed: boolean;
  /** Await `p`, progressing the worker meanwhile in polling and blocking modes. */
  settled<T>(p: Promise<T>): Promise<T>;
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/**
 * Wait until the endpoint's sends, puts, gets and atomics have completed in UCX (`inFlight()`
 * counts those UCX still holds; `waitForSends`: not for an endpoint already failed, whose peer
 * may never take them), then until a flush of the endpoint (`flush()` submits
 * `ucp_ep_flush_nbx`) completes: that one waits for what UCX queued on the lanes itself. Both
 * within FORCE_CLOSE_DRAIN_MS; never rejects.
 */
export async function quiesceBeforeForce(host: QuiesceHost, inFlight: () => number, flush: () => Submitted<void>, waitForSends: boolean): Promise<void> {
  const deadline = Date.now() + FORCE_CLOSE_DRAIN_MS;
  if (waitForSends) {
    while (inFlight() > 0 && Date.now() < deadline && !host.closed) await host.settled(sleep(POLL_MS));
  }
  const left = deadline - Date.now();
  if (left <= 0 || host.closed) return;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const flushed = flush().promise.then(
    () => undefined,
    () => undefined, // a flush that fails (the peer is gone) leaves nothing in flight either
  );
  await host.settled(Promise.race([flushed, new Promise<void>((resolve) => (timer = setTimeout(resolve, left)))]));
  clearTimeout(timer);
}
