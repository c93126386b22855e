/**
 * The table of live requests on the application thread. Each entry holds the Promise's
 * settle function and a strong reference to every buffer UCX may still touch: an entry leaves
 * the table only when the completion record for it arrives, even when its Promise was settled
 * earlier (an endpoint error rejects at once, but UCX owns a cancelled receive's buffer until it
 * reports the cancel).
 */
import { enter, leave, Phase, PROFILING } from "./profile.ts";

export type Settle = (status: number, value: number, tagLo: number, tagHi: number) => void;

/**
 * One live request. The request path makes it (a subclass says how the request settles: its
 * Promise, or a callback of the caller's), the table fills in the rest: one object per request
 * where a Map entry, a settle closure and a wrapper per callback were made before.
 */
export abstract class RequestEntry {
  /** Set by `Requests.add`. */
  id = 0;
  settled = false;
  /** The endpoint the request waits on, if any (its failure settles the request early). */
  owner: object | undefined = undefined;
  /** A receive (tag, multi-buffer, stream, ...): its endpoint's failure lets it drain first. */
  receive = false;
  /**
   * Set when the request's endpoint failed: a completion with UCS_ERR_CANCELED (the cancel its
   * failure made) or UCS_ERR_NO_MESSAGE (nothing queued for it) reports this status instead.
   */
  failedAs = 0;
  /**
   * The Promise the application holds when it is not the request's own (a wrapper that retakes
   * a rejection's stack): marked handled when the worker's close fails the request (see `closing`).
   */
  exposed: Promise<unknown> | undefined = undefined;
  /** Set when an AbortSignal asked for the cancel: a UCS_ERR_CANCELED completion rejects with it (abort.ts). */
  abortReason: unknown = undefined;
  /**
   * The id of the direct tag request that carries this one (engine/direct-tags.ts: a receive
   * handed to UCX straight from its call, in polling and blocking modes), or 0 for the ring's.
   * A cancel goes there.
   */
  direct = 0;

  constructor(
    /** Buffers (and anything else) that must stay alive until UCX is done. */
    readonly keep: unknown,
    /** Runs when the completion arrives, settled early or not (takes a multi-receive's payload). */
    readonly onArrive: ((id: number, status: number) => void) | undefined,
  ) {}

  /** The request's outcome: settle its Promise or call its callback. */
  abstract settle(status: number, value: number, tagLo: number, tagHi: number): void;
  /** Rejects the request's Promise with a reason of the caller's (an AbortSignal's); none for callbacks. */
  abstract rejectWith(reason: unknown): boolean;
}

const UCS_ERR_NO_MESSAGE = -1;
const UCS_ERR_CANCELED = -16;

/** Request ids are u32 in the ring; ids at or above 2^31 are the executor's own. */
const MAX_ID = 0x7fffffff;

export class Requests {
  private nextId = 1;
  /**
   * The live entries by id, in slot `id & mask`: ids are handed out so that their slot is free
   * (one that is taken is skipped), so a lookup is one array read. A Map with ever-new keys,
   * two added and deleted per send+receive, rehashed its backing store every few operations:
   * 0.2 us per entry's life and most of the garbage of the small-message path (measured
   * 2026-11-26, Node 20). The table stays at most half full.
   */
  private slots: (RequestEntry | undefined)[] = new Array<RequestEntry | undefined>(64).fill(undefined);
  private mask = 63;
  private count = 0;
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

  private entry(id: number): RequestEntry | undefined {
    const e = this.slots[id & this.mask];
    return e !== undefined && e.id === id ? e : undefined;
  }

  /** `promise` is what the application holds for request `id` (see RequestEntry.exposed). */
  expose(id: number, promise: Promise<unknown>): void {
    const e = this.entry(id);
    if (e) e.exposed = promise;
  }

  get size(): number {
    return this.count;
  }

  /** Enter `e` in the table under a new id (returned, and set in `e.id`). */
  add(e: RequestEntry): number {
    if ((this.count + 1) * 2 > this.slots.length) this.grow();
    const slots = this.slots;
    const mask = this.mask;
    let id = this.nextId;
    while (slots[id & mask] !== undefined) id = id >= MAX_ID ? 1 : id + 1;
    this.nextId = id >= MAX_ID ? 1 : id + 1;
    e.id = id;
    slots[id & mask] = e;
    this.count++;
    return id;
  }

  /** Twice the slots: live ids keep distinct slots (they differed in the lower bits already). */
  private grow(): void {
    const slots = new Array<RequestEntry | undefined>(this.slots.length * 2).fill(undefined);
    const mask = slots.length - 1;
    for (const e of this.slots) if (e !== undefined) slots[e.id & mask] = e;
    this.slots = slots;
    this.mask = mask;
  }

  /** Put `e` in the place of request `id`'s entry, under the same id (RequestPath's in-place probe). */
  replace(id: number, e: RequestEntry): void {
    e.id = id;
    this.slots[id & this.mask] = e;
  }

  /** Drop request `id` without settling it or running its onArrive (a submission refused). */
  forget(id: number): void {
    const e = this.entry(id);
    if (e) this.remove(e);
  }

  private remove(e: RequestEntry): void {
    this.slots[e.id & this.mask] = undefined;
    this.count--;
  }

  /** The live entries in id order (the order they were made in, but for a wrap of the ids). */
  private live(): RequestEntry[] {
    const all: RequestEntry[] = [];
    for (const e of this.slots) if (e !== undefined) all.push(e);
    return all.sort((a, b) => a.id - b.id);
  }

  /**
   * The completion for `id` arrived: settle (if not already) and release its buffers. Returns
   * true when the entry had been settled early (its settle function did not run now).
   */
  complete(id: number, status: number, value: number, tagLo: number, tagHi: number): boolean {
    const e = this.entry(id);
    if (!e) return false;
    this.remove(e);
    if (e.failedAs !== 0 && (status === UCS_ERR_NO_MESSAGE || (status === UCS_ERR_CANCELED && e.abortReason === undefined))) status = e.failedAs;
    if (e.onArrive !== undefined) e.onArrive(id, status);
    if (e.settled) return true;
    e.settled = true;
    if (this.#closing && status !== 0) e.exposed?.catch(() => {});
    if (status === UCS_ERR_CANCELED && e.abortReason !== undefined && e.rejectWith(e.abortReason)) return false;
    if (!PROFILING) e.settle(status, value, tagLo, tagHi);
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
    const e = this.entry(id);
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
    const e = this.entry(id);
    if (!e || e.settled) return;
    e.abortReason = reason;
    if (!now) return;
    if (e.rejectWith(reason)) e.settled = true;
  }

  /** Record that request `id` waits on `owner` (an endpoint); `receive` for receives. */
  setOwner(id: number, owner: object, receive = false): void {
    const e = this.entry(id);
    if (e) {
      e.owner = owner;
      e.receive = receive;
    }
  }

  /** Request `id`'s endpoint failed: its cancel or a "nothing queued" reports `status` (see RequestEntry.failedAs). */
  failAs(id: number, status: number): void {
    const e = this.entry(id);
    if (e) e.failedAs = status;
  }

  /**
   * The ids of `owner`'s requests not settled yet, its receives or the rest. A walk of the whole
   * table: it runs when an endpoint fails, and spares every request a per-endpoint set entry and
   * its clean-up.
   */
  unsettledOf(owner: object, receives: boolean): number[] {
    const ids: number[] = [];
    for (const e of this.live()) if (e.owner === owner && !e.settled && e.receive === receives) ids.push(e.id);
    return ids;
  }

  /**
   * How many of `owner`'s requests other than receives UCX still holds, settled early or not
   * (a send resolved at once is in UCX until its completion arrives). A walk of the whole table:
   * it runs only before a forced close (endpoint-quiesce.ts).
   */
  inFlightOf(owner: object): number {
    let n = 0;
    for (const e of this.slots) if (e !== undefined && e.owner === owner && !e.receive) n++;
    return n;
  }

  has(id: number): boolean {
    return this.entry(id) !== undefined;
  }

  /** The direct tag request carrying request `id` (RequestEntry.direct), or 0. */
  directOf(id: number): number {
    return this.entry(id)?.direct ?? 0;
  }

  /** Settle every entry with `status` and forget them all (the engine is gone). */
  abandonAll(status: number): void {
    for (const e of this.live()) this.complete(e.id, status, 0, 0, 0);
  }
}
