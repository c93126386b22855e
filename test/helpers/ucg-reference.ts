/**
 * The plain sequential computation the collectives are checked against: test data as a
 * function of (case, rank, element), and each op folded over the ranks in rank order, written
 * independently of src/ucg/op.ts (BigInt arithmetic wrapped with asIntN/asUintN, no typed-array
 * tricks), so that a bug there cannot hide in both.
 */
import type { CollectiveArray, DatatypeName } from "../../src/ucg/index.ts";

export const INT_BITS: Partial<Record<DatatypeName, [bits: number, signed: boolean]>> = {
  int8: [8, true], int16: [16, true], int32: [32, true], int64: [64, true],
  uint8: [8, false], uint16: [16, false], uint32: [32, false], uint64: [64, false],
};

/** A seeded xorshift32 generator in [0, 1): the ucg tests' samples (same seed, same sample). */
export function rng(s: number): () => number {
  let x = s >>> 0 || 1;
  return () => {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    return (x >>> 0) / 2 ** 32;
  };
}

/** Deterministic small values (exact in float32 sums and products of 8), some zeros for land/lor. */
export function value(seed: number, rank: number, i: number, dtype: DatatypeName, op: string): number {
  let x = (seed * 7919 + rank * 104729 + i * 31337) >>> 0;
  x = (x ^ (x >>> 13)) * 1274126177;
  x = (x ^ (x >>> 16)) >>> 0;
  if (op === "prod") return 1 + (x % 3) - (INT_BITS[dtype]?.[1] === false || !INT_BITS[dtype] ? 0 : x % 7 === 0 ? 2 : 0);
  if (op === "land" || op === "lor") return x % 4 === 0 ? 0 : 1 + (x % 5);
  if (!INT_BITS[dtype]) return (x % 201) - 100;
  return x % 251;
}

export function fill(a: CollectiveArray, f: (i: number) => number): void {
  if (a instanceof BigInt64Array || a instanceof BigUint64Array) for (let i = 0; i < a.length; i++) a[i] = BigInt(f(i));
  else for (let i = 0; i < a.length; i++) a[i] = f(i);
}

function wrap(v: bigint, dtype: DatatypeName): bigint {
  const [bits, signed] = INT_BITS[dtype]!;
  return signed ? BigInt.asIntN(bits, v) : BigInt.asUintN(bits, v);
}

/** x (op) y on plain values: BigInt for integer types, Number for floats (rounded to float32 where the type is). */
export function combine(op: string, x: bigint | number, y: bigint | number, dtype: DatatypeName): bigint | number {
  if (INT_BITS[dtype]) {
    const a = BigInt(x);
    const b = BigInt(y);
    switch (op) {
      case "sum": return wrap(a + b, dtype);
      case "prod": return wrap(a * b, dtype);
      case "min": return a < b ? a : b;
      case "max": return a > b ? a : b;
      case "band": return wrap(a & b, dtype);
      case "bor": return wrap(a | b, dtype);
      case "bxor": return wrap(a ^ b, dtype);
      case "land": return a !== 0n && b !== 0n ? 1n : 0n;
      case "lor": return a !== 0n || b !== 0n ? 1n : 0n;
    }
  } else {
    const a = Number(x);
    const b = Number(y);
    const r = (v: number) => (dtype === "float32" ? Math.fround(v) : v);
    switch (op) {
      case "sum": return r(a + b);
      case "prod": return r(a * b);
      case "min": return Math.min(a, b);
      case "max": return Math.max(a, b);
      case "land": return a !== 0 && b !== 0 ? 1 : 0;
      case "lor": return a !== 0 || b !== 0 ? 1 : 0;
    }
  }
  throw new Error(`no reference for ${op} on ${dtype}`);
}

/** x (op) y on Numbers; the caller's typed store wraps the result to the type. */
function plain(op: string, a: number, b: number): number {
  switch (op) {
    case "sum": return a + b;
    case "prod": return Math.abs(a * b) < 2 ** 53 ? a * b : Number(BigInt.asIntN(32, BigInt(a) * BigInt(b))) // only 32-bit types get here (64-bit ones go through BigInt);
    case "min": return Math.min(a, b);
    case "max": return Math.max(a, b);
    case "band": return a & b;
    case "bor": return a | b;
    case "bxor": return a ^ b;
    case "land": return a !== 0 && b !== 0 ? 1 : 0;
    case "lor": return a !== 0 || b !== 0 ? 1 : 0;
  }
  throw new Error(`no reference for ${op}`);
}

/** Reads element i of a typed array as the reference's kind of value. */
export function at(a: CollectiveArray, i: number, dtype: DatatypeName): bigint | number {
  const v = a[i]!;
  return INT_BITS[dtype] ? BigInt(v) : Number(v);
}

/**
 * The non-commutative test op, element by element as ops are (op.ts: out[i] = left[i] op right[i],
 * so a plan may cut the vector anywhere): each int32 packs an affine map x -> a x + b mod 2^16
 * (a, odd, in the high 16 bits, b in the low 16), and combining composes left then right.
 * Associative, not commutative, so a result in any order but rank order differs.
 */
function affineElement(l: number, r: number): number {
  const a1 = l >>> 16, b1 = l & 0xffff, a2 = r >>> 16, b2 = r & 0xffff;
  return ((Math.imul(a2, a1) & 0xffff) << 16) | ((Math.imul(a2, b1) + b2) & 0xffff);
}
export function affineCompose(left: ArrayLike<number>, right: ArrayLike<number>, out: { [i: number]: number; length: number }): void {
  for (let i = 0; i < out.length; i++) out[i] = affineElement(left[i]!, right[i]!);
}

// --- cases: the inputs and the expected result of one collective call ---------------------

import { DATATYPES, defineOp, type CollType, type OpLike } from "../../src/ucg/index.ts";

export interface Case {
  readonly coll: CollType;
  readonly dtype: DatatypeName;
  /** A predefined op's name, or "affine" (the non-commutative user op; int32). */
  readonly op: string;
  /** Elements per block, as the collective counts them (src/ucg/request.ts normalize). */
  readonly count: number;
  readonly root: number;
  readonly seed: number;
  readonly plan?: number;
}

export const AFFINE = defineOp((l, r, o) => affineCompose(l as Int32Array, r as Int32Array, o as Int32Array), { commutative: false, name: "affine" });

export function opOf(c: Case): OpLike {
  return c.op === "affine" ? AFFINE : (c.op as OpLike);
}

function data(c: Case, rank: number, n: number): CollectiveArray {
  const a = DATATYPES[c.dtype].create(n);
  if (c.op === "affine") fill(a, (i) => (((1 + 2 * ((rank + i + c.seed) % 5)) << 16) | ((rank * 131 + i * 7 + c.seed) % 1000)));
  else fill(a, (i) => value(c.seed, rank, i, c.dtype, c.op));
  return a;
}

/** What member `rank` passes in: the send buffer, or for bcast/scatter the root's data. */
export function sendOf(c: Case, size: number, rank: number): CollectiveArray | undefined {
  switch (c.coll) {
    case "barrier": return undefined;
    case "bcast": return rank === c.root ? data(c, rank, c.count) : DATATYPES[c.dtype].create(c.count);
    case "scatter": return rank === c.root ? data(c, rank, size * c.count) : undefined;
    case "alltoall":
    case "reduce_scatter": return data(c, rank, size * c.count);
    default: return data(c, rank, c.count);
  }
}

function fold(c: Case, size: number, index: (rank: number) => [CollectiveArray, number]): bigint | number {
  if (c.op === "affine") throw new Error("affine folds whole vectors (reduceVector)");
  let acc: bigint | number | undefined;
  for (let r = 0; r < size; r++) {
    const [a, i] = index(r);
    const v = at(a, i, c.dtype);
    acc = acc === undefined ? v : combine(c.op, acc, v, c.dtype);
  }
  return acc!;
}

function reduceVector(c: Case, size: number, offset: number, n: number): CollectiveArray {
  const out = DATATYPES[c.dtype].create(n);
  const inputs = Array.from({ length: size }, (_, r) => sendOf(c, size, r)!);
  if (c.op === "affine") {
    for (let i = 0; i < n; i++) {
      let acc = inputs[0]![offset + i] as number;
      for (let r = 1; r < size; r++) acc = affineElement(acc, inputs[r]![offset + i] as number);
      out[i] = acc;
    }
    return out;
  }
  // Element by element, rank by rank, each step stored through a 1-element array of the type
  // (C's wrap-around); BigInt arithmetic for 64-bit types, Numbers (exact: wrapped each step) else.
  const cell = DATATYPES[c.dtype].create(1) as unknown as { [i: number]: number | bigint };
  const big = c.dtype.endsWith("64") && INT_BITS[c.dtype] !== undefined;
  for (let i = 0; i < n; i++) {
    cell[0] = inputs[0]![offset + i]!;
    for (let r = 1; r < size; r++) {
      const x: number | bigint = cell[0]!;
      const y = inputs[r]![offset + i]!;
      cell[0] = big ? combine(c.op, x, y, c.dtype) : plain(c.op, x as number, y as number);
    }
    (out as unknown as { [i: number]: number | bigint })[i] = cell[0]!;
  }
  return out;
}

/** The result member `rank` must get (undefined where it gets none). */
export function expectedOf(c: Case, size: number, rank: number): CollectiveArray | undefined {
  const n = c.count;
  const d = DATATYPES[c.dtype];
  switch (c.coll) {
    case "barrier": return undefined;
    case "bcast": return data(c, c.root, n);
    case "reduce": return rank === c.root ? reduceVector(c, size, 0, n) : undefined;
    case "allreduce": return reduceVector(c, size, 0, n);
    case "reduce_scatter": return reduceVector(c, size, rank * n, n);
    case "gather":
    case "allgather": {
      if (c.coll === "gather" && rank !== c.root) return undefined;
      const out = d.create(size * n);
      for (let r = 0; r < size; r++) (out as Float64Array).set(data(c, r, n) as Float64Array, r * n);
      return out;
    }
    case "scatter": return (data(c, c.root, size * n) as Float64Array).slice(rank * n, (rank + 1) * n) as unknown as CollectiveArray;
    case "alltoall": {
      const out = d.create(size * n);
      for (let j = 0; j < size; j++) (out as Float64Array).set((data(c, j, size * n) as Float64Array).subarray(rank * n, (rank + 1) * n), j * n);
      return out;
    }
  }
}

/** The first difference between two arrays, or undefined. */
export function firstDifference(got: CollectiveArray | undefined, want: CollectiveArray | undefined): string | undefined {
  if (want === undefined) return got === undefined ? undefined : `expected no result, got ${got.length} elements`;
  if (got === undefined) return `expected ${want.length} elements, got no result`;
  if (got.length < want.length) return `expected ${want.length} elements, got ${got.length}`;
  for (let i = 0; i < want.length; i++) {
    if (got[i] !== want[i] && !(Number.isNaN(got[i]) && Number.isNaN(want[i]))) return `element ${i}: got ${got[i]}, expected ${want[i]}`;
  }
  return undefined;
}

export function describeCase(c: Case): string {
  return `${c.coll} ${c.dtype} ${c.coll === "reduce" || c.coll === "allreduce" || c.coll === "reduce_scatter" ? c.op + " " : ""}count ${c.count} root ${c.root}${c.plan !== undefined ? ` plan ${c.plan}` : ""}`;
}
