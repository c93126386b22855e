/**
 * Reduction operations: the predefined ones (sum, prod, min, max, band, bor, bxor, land, lor)
 * and user-defined ones, behind one interface (the seed's "datatype & op": predefined and
 * user-defined handled alike, the user's function called where a predefined loop would run).
 * An op combines `out[i] = left[i] (op) right[i]`; `out` may be `left` or `right`. Whether it is
 * commutative decides which plans may run it (ppool.ts): a non-commutative op is always applied
 * in rank order, `x0 (op) x1 (op) ... (op) x(n-1)`.
 */
import { UcxError } from "../core/errors.ts";
import type { CollectiveArray, Datatype } from "./datatype.ts";

export type PredefinedOpName = "sum" | "prod" | "min" | "max" | "band" | "bor" | "bxor" | "land" | "lor";
export const PREDEFINED_OPS: readonly PredefinedOpName[] = ["sum", "prod", "min", "max", "band", "bor", "bxor", "land", "lor"];

/** `out[i] = left[i] (op) right[i]` for every i; the arrays have the same type and length. */
export type Combine = (left: CollectiveArray, right: CollectiveArray, out: CollectiveArray) => void;

export interface UserOp {
  readonly name: string;
  readonly commutative: boolean;
  readonly combine: Combine;
}

export type OpLike = PredefinedOpName | UserOp;

/** A user-defined op. Declare `commutative: false` when order matters: plans then reduce in rank order. */
export function defineOp(combine: Combine, options: { commutative: boolean; name?: string }): UserOp {
  if (typeof combine !== "function") throw new UcxError("UCX_TS_INVALID_ARGUMENT", "defineOp needs a function (left, right, out) => void");
  if (typeof options?.commutative !== "boolean") throw new UcxError("UCX_TS_INVALID_ARGUMENT", "defineOp needs { commutative: true | false }: the planner must know");
  return { name: options.name ?? "user", commutative: options.commutative, combine };
}

/** An op resolved for one datatype: what the reduce phases call. */
export interface ResolvedOp {
  readonly name: string;
  readonly commutative: boolean;
  readonly combine: Combine;
}

type Loop = (a: any, b: any, o: any, n: number) => void;

// Loops per op. Number arrays and BigInt arrays share them where JavaScript's operators work
// on both; stores into a typed array wrap as C's fixed-width arithmetic does.
const NUMBER_LOOPS: Record<PredefinedOpName, Loop> = {
  sum: (a, b, o, n) => { for (let i = 0; i < n; i++) o[i] = a[i] + b[i]; },
  prod: (a, b, o, n) => { for (let i = 0; i < n; i++) o[i] = a[i] * b[i]; },
  min: (a, b, o, n) => { for (let i = 0; i < n; i++) o[i] = a[i] < b[i] ? a[i] : b[i]; },
  max: (a, b, o, n) => { for (let i = 0; i < n; i++) o[i] = a[i] > b[i] ? a[i] : b[i]; },
  band: (a, b, o, n) => { for (let i = 0; i < n; i++) o[i] = a[i] & b[i]; },
  bor: (a, b, o, n) => { for (let i = 0; i < n; i++) o[i] = a[i] | b[i]; },
  bxor: (a, b, o, n) => { for (let i = 0; i < n; i++) o[i] = a[i] ^ b[i]; },
  land: (a, b, o, n) => { for (let i = 0; i < n; i++) o[i] = a[i] && b[i] ? 1 : 0; },
  lor: (a, b, o, n) => { for (let i = 0; i < n; i++) o[i] = a[i] || b[i] ? 1 : 0; },
};
// 32-bit integer products overflow a double's 53 bits: Math.imul gives C's wrapped product.
const IMUL: Loop = (a, b, o, n) => { for (let i = 0; i < n; i++) o[i] = Math.imul(a[i], b[i]); };
const BIGINT_LOGICAL: Partial<Record<PredefinedOpName, Loop>> = {
  land: (a, b, o, n) => { for (let i = 0; i < n; i++) o[i] = a[i] !== 0n && b[i] !== 0n ? 1n : 0n; },
  lor: (a, b, o, n) => { for (let i = 0; i < n; i++) o[i] = a[i] !== 0n || b[i] !== 0n ? 1n : 0n; },
};

/** The op for `datatype`; a bitwise op on floats is refused with UCX_TS_INVALID_ARGUMENT. */
export function resolveOp(op: OpLike, datatype: Datatype): ResolvedOp {
  if (typeof op === "object" && op !== null && typeof op.combine === "function") return op;
  if (typeof op !== "string" || !PREDEFINED_OPS.includes(op as PredefinedOpName)) {
    throw new UcxError("UCX_TS_INVALID_ARGUMENT", `op must be one of ${PREDEFINED_OPS.join(", ")} or defineOp(...), got ${String(op)}`);
  }
  if (!datatype.integer && (op === "band" || op === "bor" || op === "bxor")) {
    throw new UcxError("UCX_TS_INVALID_ARGUMENT", `op ${op} is defined on integer datatypes only, not ${datatype.name}`);
  }
  const loop =
    datatype.bigint ? (BIGINT_LOGICAL[op] ?? NUMBER_LOOPS[op])
    : op === "prod" && datatype.size === 4 && datatype.integer ? IMUL
    : NUMBER_LOOPS[op];
  return { name: op, commutative: true, combine: (a, b, o) => loop(a, b, o, o.length) };
}
