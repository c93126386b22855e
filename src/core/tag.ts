/** Tags and tag masks: 64-bit in UCX; Numbers (up to 2^53) or BigInts here. */
import { invalidArgument } from "./errors.ts";
import { joinTag, splitTag } from "./engine/records.ts";

export type Tag = number | bigint;

/** The mask that matches only the exact tag. */
export const FULL_MASK: Tag = 0xffffffffffffffffn;

/** FULL_MASK's words: every receive without a mask passes it, and its BigInt path cost ~190 ns. */
const FULL_MASK_WORDS: readonly [number, number] = [0xffffffff, 0xffffffff];

export function tagWords(tag: Tag, what = "tag"): readonly [number, number] {
  if (typeof tag === "number") {
    if (!Number.isSafeInteger(tag) || tag < 0) throw invalidArgument(`${what} must be a non-negative safe integer or a BigInt, got ${tag}`);
    return splitTag(tag);
  }
  if (tag === FULL_MASK) return FULL_MASK_WORDS;
  if (typeof tag !== "bigint" || tag < 0n || tag > 0xffffffffffffffffn) {
    throw invalidArgument(`${what} must be a 64-bit unsigned value, got ${String(tag)}`);
  }
  return splitTag(tag);
}

export { joinTag };
