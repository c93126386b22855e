/**
 * A map from request ids (u32 numbers that mostly grow one by one) to values, for the tables
 * the data path touches once or twice per operation. A Map with ever-new keys, a few added and
 * deleted per operation, rehashed its backing store every few operations: about 0.2 us per
 * entry's life and much of the small-message path's garbage (Node 20, 2026-11-26). Here an id
 * lives in slot `id & mask` of an array (one read per lookup); the rare id whose slot another
 * live id holds goes to a Map beside it. The slots double when they are half full, never shrink.
 */
const EMPTY = -1;

export class IdMap<V> {
  private slotIds: Float64Array;
  private slotValues: (V | undefined)[];
  private mask: number;
  private inSlots = 0;
  /** Ids whose slot was taken when they came. */
  private readonly overflow = new Map<number, V>();

  constructor(capacity = 64) {
    let n = 2;
    while (n < capacity) n *= 2;
    this.slotIds = new Float64Array(n).fill(EMPTY);
    this.slotValues = new Array<V | undefined>(n).fill(undefined);
    this.mask = n - 1;
  }

  get size(): number {
    return this.inSlots + this.overflow.size;
  }

  get(id: number): V | undefined {
    const i = id & this.mask;
    if (this.slotIds[i] === id) return this.slotValues[i];
    return this.overflow.size > 0 ? this.overflow.get(id) : undefined;
  }

  has(id: number): boolean {
    return this.slotIds[id & this.mask] === id || (this.overflow.size > 0 && this.overflow.has(id));
  }

  set(id: number, value: V): void {
    let i = id & this.mask;
    if (this.slotIds[i] === id) {
      this.slotValues[i] = value;
      return;
    }
    if (this.overflow.size > 0 && this.overflow.has(id)) {
      this.overflow.set(id, value);
      return;
    }
    if ((this.inSlots + 1) * 2 > this.slotIds.length) {
      this.grow();
      i = id & this.mask;
    }
    if (this.slotIds[i] === EMPTY) {
      this.slotIds[i] = id;
      this.slotValues[i] = value;
      this.inSlots++;
    } else this.overflow.set(id, value);
  }

  delete(id: number): boolean {
    const i = id & this.mask;
    if (this.slotIds[i] === id) {
      this.slotIds[i] = EMPTY;
      this.slotValues[i] = undefined;
      this.inSlots--;
      return true;
    }
    return this.overflow.size > 0 && this.overflow.delete(id);
  }

  clear(): void {
    this.slotIds.fill(EMPTY);
    this.slotValues.fill(undefined);
    this.inSlots = 0;
    this.overflow.clear();
  }

  /** The ids, ascending (the order requests were made in, but for a wrap of the ids). */
  keys(): number[] {
    const ids: number[] = [];
    for (let i = 0; i < this.slotIds.length; i++) if (this.slotIds[i] !== EMPTY) ids.push(this.slotIds[i]!);
    for (const id of this.overflow.keys()) ids.push(id);
    return ids.sort((a, b) => a - b);
  }

  /** The values, in the order of `keys()`. */
  values(): V[] {
    return this.keys().map((id) => this.get(id)!);
  }

  /** Twice the slots; an overflowed id whose slot is now free moves in. */
  private grow(): void {
    const oldIds = this.slotIds;
    const oldValues = this.slotValues;
    const n = oldIds.length * 2;
    this.slotIds = new Float64Array(n).fill(EMPTY);
    this.slotValues = new Array<V | undefined>(n).fill(undefined);
    this.mask = n - 1;
    this.inSlots = 0;
    const moved: [number, V][] = [...this.overflow];
    this.overflow.clear();
    for (let i = 0; i < oldIds.length; i++) if (oldIds[i] !== EMPTY) this.place(oldIds[i]!, oldValues[i]!);
    for (const [id, v] of moved) this.place(id, v);
  }

  private place(id: number, value: V): void {
    const i = id & this.mask;
    if (this.slotIds[i] === EMPTY) {
      this.slotIds[i] = id;
      this.slotValues[i] = value;
      this.inSlots++;
    } else this.overflow.set(id, value);
  }
}
