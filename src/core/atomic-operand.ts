/**
 * Operands of atomic operations: a 32- or 64-bit word in UCX. A value that does not fit is
 * refused like an out-of-range tag (tag.ts), not silently wrapped: `2n ** 64n` would otherwise
 * add 0. Negative values down to -2^(bits-1) are taken as their two's complement (so `add` of
 * -1 decrements), which is what C's unsigned arithmetic on the same word does.
 */
import { invalidArgument } from "./errors.ts";

/** The operand's bits as an unsigned BigInt of `bits` bits; throws UCX_TS_INVALID_ARGUMENT. */
export function atomicOperand(value: number | bigint, bits: 32 | 64, what: string): bigint {
  if (typeof value === "number") {
    if (!Number.isSafeInteger(value)) throw invalidArgument(`atomic: ${what} must be a safe integer or a BigInt, got ${value}`);
    value = BigInt(value);
  } else if (typeof value !== "bigint") {
    throw invalidArgument(`atomic: ${what} must be a number or a BigInt, got ${typeof value}`);
  }
  const width = BigInt(bits);
  if (value < -(1n << (width - 1n)) || value >= 1n << width) {
    throw invalidArgument(`atomic: ${what} ${value} does not fit in ${bits} bits (-2^${bits - 1} .. 2^${bits}-1)`);
  }
  return BigInt.asUintN(bits, value);
}
