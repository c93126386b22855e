/**
 * The table of live requests on the application thread. Each entry holds the Promise's
 * settle function and a strong reference to every buffer UCX may still touch: an entry leaves
 * the table only when the completion record for it arrives, even when its Promise was settled
 * earlier (an endpoint error rejects at once, but UCX owns a cancelled receive's buffer until it
 * reports the cancel).
 */
import { enter, leave, Phase, PROFILING } from "./profile.ts";

export type Settle = (status: number, value: number, tagLo: number, tagHi: number) => void;

interface Entry {
  settle: Settle;
  /** Rejects the request's Promise with a reason of the caller's (an AbortSignal's). */
  reject: ((reason: unknown) => void) | undefined;
  /** Runs when the completion arrives, settled early or not (takes a multi-receive's payload). */
  onArrive: Settle | undefined;
  /** Buffers (and anything else) that must stay alive until UCX is done. */
  keep: unknown;
  settled: boolean;
  /** The endpoint the request waits on, if any (its failure settles the request early). */
  owner: object | undefined;
  /** A receive (tag, multi-buffer, stream, ...): its endpoint's failure lets it drain first. */
  receive: boolean;
  /**
   * Set when the request's endpoint failed: a completion with UCS_ERR_CANCELED (the cancel its
   * failure made) or UCS_ERR_NO_MESSAGE (nothing queued for it) reports this status instead.
   */
  failedAs: number;
  /**
   * The Promise the application holds when it is not the request's own (a wrapper that retakes
   * a rejection's stack): marked handled when the worker's close fails the request (see `closing`).
   */
  exposed: Promise<unknown> | undefined;
  /** Set when an AbortSignal asked for the cancel: a UCS_ERR_CANCELED completion rejects with it (abort.ts). */
  abortReason: unknown;
}

const UCS_ERR_NO_MESSAGE = -1;
const UCS_ERR_CANCELED = -16;

/** Request ids are u32 in the ring; ids at or above 2^31 are the executor's own. */
const MAX_ID = 0x7fffffff;

export class Requests {
  private nextId = 1;
  private readonly entries = new Map<number, Entry>();
  /**
   * The worker is closing: a request it fails may be one nobody awaits (a forgotten receive);
   * its rejection must not end the process as an unhandled one. Awaited, it still throws.
   */
  #closing = false;

  get closing(): boolean {
    return this.#closing;
  }

  markClosing(): void {
    this.#closing = true;
  }

  /** `promise` is what the application holds for request `id` (see Entry.exposed). */
  expose(id: number, promise: Promise<unknown>): void {
    const e = this.entries.get(id);
    if (e) e.exposed = promise;
  }

  get size(): number {
    return this.entries.size;
  }

  add(settle: Settle, keep: unknown, onArrive?: Settle, reject?: (reason: unknown) => void): number {
    let id = this.nextId;
    while (this.entries.has(id)) id = id >= MAX_ID ? 1 : id + 1;
    this.nextId = id >= MAX_ID ? 1 : id + 1;
    this.entries.set(id, { settle, reject, keep, settled: false, onArrive, owner: undefined, receive: false, failedAs: 0, abortReason: undefined, exposed: undefined });
    return id;
  }

  /**
   * The completion for `id` arrived: settle (if not already) and release its buffers. Returns
   * true when the entry had been settled early (its settle function did not run now).
   */
  complete(id: number, status: number, value: number, tagLo: number, tagHi: number): boolean {
    const e = this.entries.get(id);
    if (!e) return false;
    this.entries.delete(id);
    if (e.failedAs !== 0 && (status === UCS_ERR_NO_MESSAGE || (status === UCS_ERR_CANCELED && e.abortReason === undefined))) status = e.failedAs;
    e.onArrive?.(status, value, tagLo, tagHi);
    if (e.settled) return true;
    e.settled = true;
    if (this.#closing && status !== 0) e.exposed?.catch(() => {});
    if (status === UCS_ERR_CANCELED && e.abortReason !== undefined && e.reject) e.reject(e.abortReason);
    else if (!PROFILING) e.settle(status, value, tagLo, tagHi);
    else {
      enter(Phase.Settle);
      try {
        e.settle(status, value, tagLo, tagHi);
      } finally {
        leave();
      }
    }
    return false;
  }

  /** Settle now with `status`, keeping the buffers until the completion arrives. */
  settleEarly(id: number, status: number): void {
    const e = this.entries.get(id);
    if (!e || e.settled) return;
    e.settled = true;
    if (PROFILING) enter(Phase.Settle);
    e.settle(status, 0, 0, 0);
    if (PROFILING) leave();
  }

  /**
   * An AbortSignal fired for request `id`: if UCX reports it cancelled, it rejects with `reason`
   * (a completion that won the race still resolves: its data is not lost). `now`: reject at once
   * (an operation UCX cannot cancel), keeping the buffers until the completion arrives.
   */
  abort(id: number, reason: unknown, now: boolean): void {
    const e = this.entries.get(id);
    if (!e || e.settled) return;
    e.abortReason = reason;
    if (!now || !e.reject) return;
    e.settled = true;
    e.reject(reason);
  }

  /** Record that request `id` waits on `owner` (an endpoint); `receive` for receives. */
  setOwner(id: number, owner: object, receive = false): void {
    const e = this.entries.get(id);
    if (e) {
      e.owner = owner;
      e.receive = receive;
    }
  }

  /** Request `id`'s endpoint failed: its cancel or a "nothing queued" reports `status` (see Entry.failedAs). */
  failAs(id: number, status: number): void {
    const e = this.entries.get(id);
    if (e) e.failedAs = status;
  }

  /**
   * The ids of `owner`'s requests not settled yet, its receives or the rest. A walk of the whole
   * table: it runs when an endpoint fails, and spares every request a per-endpoint set entry and
   * its clean-up.
   */
  unsettledOf(owner: object, receives: boolean): number[] {
    const ids: number[] = [];
    for (const [id, e] of this.entries) if (e.owner === owner && !e.settled && e.receive === receives) ids.push(id);
    return ids;
  }

  /**
   * How many of `owner`'s requests other than receives UCX still holds, settled early or not
   * (a send resolved at once is in UCX until its completion arrives). A walk of the whole table:
   * it runs only before a forced close (endpoint-quiesce.ts).
   */
  inFlightOf(owner: object): number {
    let n = 0;
    for (const e of this.entries.values()) if (e.owner === owner && !e.receive) n++;
    return n;
  }

  has(id: number): boolean {
    return this.entries.has(id);
  }

  /** Settle every entry with `status` and forget them all (the engine is gone). */
  abandonAll(status: number): void {
    for (const id of [...this.entries.keys()]) this.complete(id, status, 0, 0, 0);
  }
}
