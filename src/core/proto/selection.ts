/**
 * The selection engine of UCX protocols v2, protocol-agnostic: given candidate protocols, each
 * with a size range and a cost line, build the array of <maxSize, protocol> that picks the
 * cheapest protocol for every message size from 0 to the limit, by walking the intersections
 * of the cost lines. Protocols that win nowhere do not appear; the last entry reaches the limit.
 *
 * Ties: when two lines give the same time at a size, the one with the smaller slope wins (it
 * stays better for larger sizes, so the table has fewer entries); equal lines: the first
 * candidate wins.
 */
import { timeAt, type Cost } from "./cost.ts";

/** Largest message size the tables cover (sizes are exact integers in a Number below it). */
export const MAX_SIZE = Number.MAX_SAFE_INTEGER;

export interface Candidate<P> {
  readonly protocol: P;
  readonly cost: Cost;
  /** Smallest and largest size the protocol serves (inclusive). */
  readonly minSize: number;
  readonly maxSize: number;
  /** A forced protocol wins wherever its range reaches, whatever its cost. */
  readonly forced?: boolean;
}

export interface Selection<P> {
  /** The entry serves sizes from the previous entry's maxSize + 1 up to this one, inclusive. */
  readonly maxSize: number;
  readonly protocol: P;
  readonly cost: Cost;
  readonly forced: boolean;
}

/** No candidate serves `size`: the protocols leave a hole (e.g. all of them disabled). */
export class SelectionGapError extends Error {
  constructor(readonly size: number) {
    super(`no protocol serves messages of ${size} bytes`);
    this.name = "SelectionGapError";
  }
}

function serves(c: Candidate<unknown>, size: number): boolean {
  return c.minSize <= size && size <= c.maxSize;
}

/** Is `a` better than `b` at `size`? (forced first, then time, then slope, then order). */
function better(a: Candidate<unknown>, ai: number, b: Candidate<unknown>, bi: number, size: number): boolean {
  if (!!a.forced !== !!b.forced) return !!a.forced;
  const ta = timeAt(a.cost, size);
  const tb = timeAt(b.cost, size);
  if (ta !== tb) return ta < tb;
  if (a.cost.m !== b.cost.m) return a.cost.m < b.cost.m;
  return ai < bi;
}

/**
 * The first size after `from` at which `other` becomes better than `best` (both serving), or
 * Infinity if it never does on lines alone.
 */
function overtakes(best: Candidate<unknown>, other: Candidate<unknown>, from: number): number {
  if (!!best.forced !== !!other.forced) return best.forced ? Infinity : from + 1;
  const dm = best.cost.m - other.cost.m;
  if (dm <= 0) return Infinity; // other is not cheaper per byte: it never catches up
  // other.c + other.m * s <= best.c + best.m * s  <=>  s >= (other.c - best.c) / dm; a tie goes to
  // the smaller slope, which is other's.
  const s = Math.ceil((other.cost.c - best.cost.c) / dm);
  return s > from ? s : from + 1;
}

export function buildTable<P>(candidates: readonly Candidate<P>[], limit = MAX_SIZE): Selection<P>[] {
  const out: Selection<P>[] = [];
  let x = 0;
  while (x <= limit) {
    let bi = -1;
    for (let i = 0; i < candidates.length; i++) {
      const c = candidates[i]!;
      if (serves(c, x) && (bi < 0 || better(c, i, candidates[bi]!, bi, x))) bi = i;
    }
    if (bi < 0) throw new SelectionGapError(x);
    const best = candidates[bi]!;
    // The entry ends where the best one's range ends, where another protocol's range begins
    // (it may be better there), or where another line crosses below.
    let end = Math.min(best.maxSize, limit);
    for (let i = 0; i < candidates.length; i++) {
      if (i === bi) continue;
      const c = candidates[i]!;
      if (c.minSize > x && c.minSize - 1 < end) end = c.minSize - 1;
      if (c.maxSize > x) {
        const s = overtakes(best, c, x);
        const from = Math.max(s, c.minSize);
        if (from <= c.maxSize && from - 1 < end) end = from - 1;
      }
    }
    const last = out[out.length - 1];
    if (last && last.protocol === best.protocol) out[out.length - 1] = { ...last, maxSize: end };
    else out.push({ maxSize: end, protocol: best.protocol, cost: best.cost, forced: !!best.forced });
    if (end >= limit) break;
    x = end + 1;
  }
  return out;
}

/** The entry serving `size` (first whose maxSize >= size). */
export function lookup<P>(table: readonly Selection<P>[], size: number): Selection<P> {
  let i = 0;
  while (i < table.length - 1 && size > table[i]!.maxSize) i++;
  return table[i]!;
}
