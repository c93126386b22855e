/** Tags and tag masks: 64-bit in UCX; Numbers (up to 2^53) or BigInts here. */
import { invalidArgument, type UcxError } from "./errors.ts";
import { joinTag, splitTag } from "./engine/records.ts";

export type Tag = number | bigint;

/** The mask that matches only the exact tag. */
export const FULL_MASK: Tag = 0xffffffffffffffffn;

/** FULL_MASK's words: every receive without a mask passes it, and its BigInt path cost ~190 ns. */
const FULL_MASK_WORDS: readonly [number, number] = [0xffffffff, 0xffffffff];

export function tagWords(tag: Tag, what = "tag"): readonly [number, number] {
  if (tag === FULL_MASK) return FULL_MASK_WORDS;
  checkTag(tag, what);
  return splitTag(tag);
}

/** A bad tag (or mask) throws UCX_TS_INVALID_ARGUMENT, before anything is posted. */
function checkTag(tag: Tag, what: string): void {
  if (typeof tag === "number") {
    if (!Number.isSafeInteger(tag) || tag < 0) throw invalidArgument(`${what} must be a non-negative safe integer or a BigInt, got ${tag}`);
  } else if (typeof tag !== "bigint" || tag < 0n || tag > 0xffffffffffffffffn) {
    throw invalidArgument(`${what} must be a 64-bit unsigned value, got ${String(tag)}`);
  }
}

// --- words written in place ------------------------------------------------------------------
//
// The operations of every message (a send, a receive) write their tag and mask words straight
// into their submission (engine.ts), not through an array per call: each array was ~64 B of
// garbage on Node, two per send+receive. `TagFields` is what a Submission has of them.

export interface TagFields {
  tagLo: number;
  tagHi: number;
  maskLo: number;
  maskHi: number;
}

const TWO32 = 4294967296;

/** The low word of a checked tag. */
function low(tag: Tag): number {
  return typeof tag === "number" ? tag >>> 0 : Number(tag & 0xffffffffn);
}

/** The high word of a checked tag. */
function high(tag: Tag): number {
  return typeof tag === "number" ? Math.floor(tag / TWO32) >>> 0 : Number(tag >> 32n);
}

/** `s.tagLo`, `s.tagHi` = `tag`'s words; with `scope` (a scoped endpoint's) as scopedTagWords makes them. */
export function putTag(s: TagFields, tag: Tag, scope?: number): void {
  checkTag(tag, "tag");
  const hi = high(tag);
  if (scope === undefined) s.tagHi = hi;
  else {
    if (hi > 0xffff) throw scopedTagTooLarge(tag);
    s.tagHi = ((scope << 16) | hi) >>> 0;
  }
  s.tagLo = low(tag);
}

/** `s.maskLo`, `s.maskHi` = `mask`'s words; `scoped`: as scopedMaskWords makes them. */
export function putMask(s: TagFields, mask: Tag, scoped = false): void {
  if (mask === FULL_MASK) {
    s.maskLo = 0xffffffff;
    s.maskHi = 0xffffffff;
    return;
  }
  checkTag(mask, "tag mask");
  s.maskLo = low(mask);
  s.maskHi = scoped ? (0xffff0000 | high(mask)) >>> 0 : high(mask);
}

export { joinTag };

// --- scoped endpoints -------------------------------------------------------------------------
//
// An endpoint made through the hello (hello/scopes.ts) sends with its peer's receive scope in the
// top 16 bits of the UCX tag and receives with its own scope matched exactly there, so that its
// receives take only its peer's messages although UCX matches tags worker-wide. Its user tags
// have 48 bits: they fit a JavaScript Number exactly.

/** Bits of a user tag on a scoped endpoint. */
export const SCOPED_TAG_BITS = 48;
/** The largest user tag on a scoped endpoint, and the mask of a user tag's bits (2^48 - 1). */
export const USER_TAG_MASK = 2 ** SCOPED_TAG_BITS - 1;

/** The UCX tag words for user tag `tag` sent to (or received in) receive scope `scope`. */
export function scopedTagWords(scope: number, tag: Tag): readonly [number, number] {
  putTag(scratch, tag, scope); // the scope's encoding is putTag's alone
  return [scratch.tagLo, scratch.tagHi];
}

/** Where the array-returning forms below let putTag / putMask write (used at once, never kept). */
const scratch: TagFields = { tagLo: 0, tagHi: 0, maskLo: 0, maskHi: 0 };

function scopedTagTooLarge(tag: Tag): UcxError {
  return invalidArgument(
    `tag ${String(tag)} does not fit 48 bits: on an endpoint made through the hello (listen / connect by host and port) the top 16 bits of the UCX tag carry the receive scope`,
  );
}

/** The UCX mask words of a scoped receive: the scope bits always match, the user's mask below them. */
export function scopedMaskWords(mask: Tag): readonly [number, number] {
  putMask(scratch, mask, true);
  return [scratch.maskLo, scratch.maskHi];
}

/** Every message of receive scope `scope`: its UCX tag and mask, as a probe of the whole scope takes them. */
export function wholeScope(scope: number): { readonly tag: Tag; readonly mask: Tag } {
  return { tag: joinTag(...scopedTagWords(scope, 0)), mask: joinTag(...scopedMaskWords(0)) };
}

/** The user's tag of a scoped message: the UCX tag without its scope bits (always a Number). */
export function unscopedTag(lo: number, hi: number): number {
  return (hi & 0xffff) * 2 ** 32 + lo;
}
