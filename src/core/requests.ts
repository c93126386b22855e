/**
 * The table of live requests on the application thread. Each entry holds the Promise's
 * settle function and a strong reference to every buffer UCX may still touch: an entry leaves
 * the table only when the completion record for it arrives, even when its Promise was settled
 * earlier (an endpoint error rejects at once, but UCX owns a cancelled receive's buffer until it
 * reports the cancel).
 */
export type Settle = (status: number, value: number, tagLo: number, tagHi: number) => void;

interface Entry {
  settle: Settle;
  /** Runs when the completion arrives, settled early or not (takes a multi-receive's payload). */
  onArrive: Settle | undefined;
  /** Buffers (and anything else) that must stay alive until UCX is done. */
  keep: unknown;
  settled: boolean;
  /** The endpoint the request waits on, if any (its failure settles the request early). */
  owner: object | undefined;
}

/** Request ids are u32 in the ring; ids at or above 2^31 are the executor's own. */
const MAX_ID = 0x7fffffff;

export class Requests {
  private nextId = 1;
  private readonly entries = new Map<number, Entry>();

  get size(): number {
    return this.entries.size;
  }

  add(settle: Settle, keep: unknown, onArrive?: Settle): number {
    let id = this.nextId;
    while (this.entries.has(id)) id = id >= MAX_ID ? 1 : id + 1;
    this.nextId = id >= MAX_ID ? 1 : id + 1;
    this.entries.set(id, { settle, keep, settled: false, onArrive, owner: undefined });
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
    e.onArrive?.(status, value, tagLo, tagHi);
    if (e.settled) return true;
    e.settled = true;
    e.settle(status, value, tagLo, tagHi);
    return false;
  }

  /** Settle now with `status`, keeping the buffers until the completion arrives. */
  settleEarly(id: number, status: number): void {
    const e = this.entries.get(id);
    if (!e || e.settled) return;
    e.settled = true;
    e.settle(status, 0, 0, 0);
  }

  /** Record that request `id` waits on `owner` (an endpoint). */
  setOwner(id: number, owner: object): void {
    const e = this.entries.get(id);
    if (e) e.owner = owner;
  }

  /**
   * The ids of `owner`'s requests not settled yet. A walk of the whole table: it runs when an
   * endpoint fails, and spares every request a per-endpoint set entry and its clean-up.
   */
  unsettledOf(owner: object): number[] {
    const ids: number[] = [];
    for (const [id, e] of this.entries) if (e.owner === owner && !e.settled) ids.push(id);
    return ids;
  }

  has(id: number): boolean {
    return this.entries.has(id);
  }

  /** Settle every entry with `status` and forget them all (the engine is gone). */
  abandonAll(status: number): void {
    for (const id of [...this.entries.keys()]) this.complete(id, status, 0, 0, 0);
  }
}
