/**
 * An endpoint's receives after UCX reported it failed, as TCP treats a closed socket: what the
 * peer sent before it went away can still be read, and only a receive nothing can satisfy gets
 * the endpoint's error.
 *
 * UCX keeps a failed endpoint's tag messages in the worker's unexpected queue, and the error can
 * overtake the peer's last messages: UCX's connection manager (its own TCP connection) may report
 * the disconnect before the data connection's last bytes are processed. So:
 * - for DRAIN_MS after the failure, receives wait as on a live endpoint (new ones are posted as
 *   usual): UCX delivers what is still in flight;
 * - then every receive still waiting is cancelled, and its cancel reports the endpoint's status
 *   (a posted tag receive that waited this long has nothing queued for it: a queued message
 *   would have matched it); the active-message inbox delivers what it holds, then the error;
 * - from then on a tag or multi-buffer receive is posted only if UCX holds a matching message
 *   (the executor probes and posts in one step: Op.TagRecvIfQueued), else it rejects at once.
 * A receive UCX cannot cancel (a stream receive) is settled with the error STUCK_MS later.
 */
import type { AmInbox } from "./am/inbox.ts";
import type { UcxError } from "./errors.ts";

/**
 * How long UCX may go on delivering a failed endpoint's in-flight messages. Measured (one
 * process, thread mode, 2,000 receives pending, 2,000 x 7,000 B sent then a forced close): with
 * no drain, 2 runs in 9 cancelled receives whose messages came after the error (1,530 and 1,675
 * of 2,000 completed); with 200 ms, 9 in 9 completed all 2,000.
 */
export const DRAIN_MS = 200;
/** How long after its cancel a receive may take to report it before it is settled anyway. */
const STUCK_MS = 300;

/** What the drain needs from the worker. */
export interface DrainHost {
  unsettledRequestsOf(owner: object, receives?: boolean): number[];
  failRequestAs(id: number, status: number): void;
  cancel(id: number): void;
  settleEarly(id: number, status: number): void;
}

export class ReceiveDrain {
  #over = false;

  constructor(
    private readonly host: DrainHost,
    private readonly owner: object,
    readonly status: number,
    readonly error: UcxError,
    private readonly inbox: AmInbox,
  ) {
    for (const id of host.unsettledRequestsOf(owner, true)) host.failRequestAs(id, status);
    unref(setTimeout(() => this.end(), DRAIN_MS));
  }

  /** Past the drain: new receives take only what UCX holds already. */
  get over(): boolean {
    return this.#over;
  }

  /** A receive made on the failed endpoint: its cancel (or "nothing queued") reports the failure. */
  adopt(id: number): void {
    this.host.failRequestAs(id, this.status);
  }

  private end(): void {
    this.#over = true;
    this.inbox.fail(this.error);
    const waiting = this.host.unsettledRequestsOf(this.owner, true);
    if (waiting.length === 0) return;
    for (const id of waiting) this.host.cancel(id);
    unref(
      setTimeout(() => {
        for (const id of waiting) this.host.settleEarly(id, this.status);
      }, STUCK_MS),
    );
  }
}

/** A timer that does not keep the process alive by itself (the worker does while it is active). */
function unref(timer: ReturnType<typeof setTimeout>): void {
  if (typeof timer === "number") (globalThis as { Deno?: { unrefTimer(id: number): void } }).Deno?.unrefTimer(timer);
  else (timer as { unref?: () => void }).unref?.();
}
