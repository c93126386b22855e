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

/**
 * Each predefined op's element expression, over A and B (the operands' elements). Stores into
 * a typed array wrap as C's fixed-width arithmetic does; 32-bit integer products use Math.imul
 * (a double's 53 bits cannot hold them), BigInt arrays' logical ops compare with 0n.
 */
const EXPRESSIONS: Record<PredefinedOpName, string> = {
  sum: "A + B",
  prod: "A * B",
  min: "A < B ? A : B",
  max: "A > B ? A : B",
  band: "A & B",
  bor: "A | B",
  bxor: "A ^ B",
  land: "A && B ? 1 : 0",
  lor: "A || B ? 1 : 0",
};
const BIGINT_EXPRESSIONS: Partial<Record<PredefinedOpName, string>> = {
  land: "A !== 0n && B !== 0n ? 1n : 0n",
  lor: "A !== 0n || B !== 0n ? 1n : 0n",
};
const IMUL_EXPRESSION = "Math.imul(A, B)";

/**
 * The loop of one (op, datatype), made once per pair. Why not one function per op shared by
 * every type: V8 keeps one set of type feedback per function source, so once a program reduced
 * two element types with the same op, the shared loop ran its element accesses megamorphic:
 * 4.3 ms for 65,536 doubles instead of 87 us (Node 20, 2026-11-26). Closures from one factory
 * share that feedback too; a source of their own per pair (the comment names it) does not. The
 * body is unrolled by 8 (Node 20: 47 us against 87 for the plain loop; Deno 39 against 41; Bun
 * 20 against 25, same measurement). Where a runtime refuses code from strings, one shared plain
 * loop per expression.
 */
const LOOPS = new Map<string, Loop>();
function loopFor(op: PredefinedOpName, datatype: Datatype): Loop {
  const key = `${op}/${datatype.name}`;
  let loop = LOOPS.get(key);
  if (loop) return loop;
  const expression =
    datatype.bigint ? (BIGINT_EXPRESSIONS[op] ?? EXPRESSIONS[op])
    : op === "prod" && datatype.size === 4 && datatype.integer ? IMUL_EXPRESSION
    : EXPRESSIONS[op];
  const at = (i: string) => `o[${i}] = ${expression.replaceAll("A", `a[${i}]`).replaceAll("B", `b[${i}]`)};`;
  const unrolled = Array.from({ length: 8 }, (_, k) => at(k === 0 ? "i" : `i + ${k}`)).join(" ");
  const body = `"use strict"; // ucx-ts ${key}\nlet i = 0;\nfor (; i + 8 <= n; i += 8) { ${unrolled} }\nfor (; i < n; i++) ${at("i")}`;
  try {
    loop = new Function("a", "b", "o", "n", body) as Loop;
  } catch {
    loop = fallbackLoop(expression);
  }
  LOOPS.set(key, loop);
  return loop;
}

/** Plain loops per expression, for a runtime without code from strings (shared feedback: slower with several types). */
function fallbackLoop(expression: string): Loop {
  switch (expression) {
    case EXPRESSIONS.sum: return (a, b, o, n) => { for (let i = 0; i < n; i++) o[i] = a[i] + b[i]; };
    case EXPRESSIONS.prod: return (a, b, o, n) => { for (let i = 0; i < n; i++) o[i] = a[i] * b[i]; };
    case EXPRESSIONS.min: return (a, b, o, n) => { for (let i = 0; i < n; i++) o[i] = a[i] < b[i] ? a[i] : b[i]; };
    case EXPRESSIONS.max: return (a, b, o, n) => { for (let i = 0; i < n; i++) o[i] = a[i] > b[i] ? a[i] : b[i]; };
    case EXPRESSIONS.band: return (a, b, o, n) => { for (let i = 0; i < n; i++) o[i] = a[i] & b[i]; };
    case EXPRESSIONS.bor: return (a, b, o, n) => { for (let i = 0; i < n; i++) o[i] = a[i] | b[i]; };
    case EXPRESSIONS.bxor: return (a, b, o, n) => { for (let i = 0; i < n; i++) o[i] = a[i] ^ b[i]; };
    case EXPRESSIONS.land: return (a, b, o, n) => { for (let i = 0; i < n; i++) o[i] = a[i] && b[i] ? 1 : 0; };
    case EXPRESSIONS.lor: return (a, b, o, n) => { for (let i = 0; i < n; i++) o[i] = a[i] || b[i] ? 1 : 0; };
    case BIGINT_EXPRESSIONS.land: return (a, b, o, n) => { for (let i = 0; i < n; i++) o[i] = a[i] !== 0n && b[i] !== 0n ? 1n : 0n; };
    case BIGINT_EXPRESSIONS.lor: return (a, b, o, n) => { for (let i = 0; i < n; i++) o[i] = a[i] !== 0n || b[i] !== 0n ? 1n : 0n; };
    default: return (a, b, o, n) => { for (let i = 0; i < n; i++) o[i] = Math.imul(a[i], b[i]); };
  }
}

/** The op for `datatype`; a bitwise op on floats is refused with UCX_TS_INVALID_ARGUMENT. */
export function resolveOp(op: OpLike, datatype: Datatype): ResolvedOp {
  if (typeof op === "object" && op !== null && typeof op.combine === "function") return op;
  if (typeof op !== "string" || !PREDEFINED_OPS.includes(op as PredefinedOpName)) {
    throw new UcxError("UCX_TS_INVALID_ARGUMENT", `op must be one of ${PREDEFINED_OPS.join(", ")} or defineOp(...), got ${String(op)}`);
  }
  if (!datatype.integer && (op === "band" || op === "bor" || op === "bxor")) {
    throw new UcxError("UCX_TS_INVALID_ARGUMENT", `op ${op} is defined on integer datatypes only, not ${datatype.name}`);
  }
  const loop = loopFor(op as PredefinedOpName, datatype);
  return { name: op, commutative: true, combine: (a, b, o) => loop(a, b, o, o.length) };
}
