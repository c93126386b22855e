/** Reading C memory that UCT hands out by address (pointers stored in its structs). */
import type { Pointer } from "../../ffi/index.ts";
import { ucx } from "../library.ts";

/** The pointer stored at `address` (8 bytes, little-endian). */
export function readPointer(address: Pointer): Pointer {
  const v = new DataView(ucx().view(address, 8));
  return v.getUint32(0, true) + v.getUint32(4, true) * 2 ** 32;
}

/** A copy of `length` bytes of C memory. */
export function copyOut(address: Pointer, length: number): Uint8Array {
  if (length === 0) return new Uint8Array(0);
  return new Uint8Array(ucx().view(address, length).slice(0));
}

/** A NUL-terminated copy of `s` in JavaScript memory, for `const char *` struct fields. */
export function cStringBytes(s: string): Uint8Array {
  const b = new TextEncoder().encode(s);
  const out = new Uint8Array(new ArrayBuffer(b.length + 1));
  out.set(b);
  return out;
}
