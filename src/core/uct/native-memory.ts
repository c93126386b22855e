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

const addresses = new WeakMap<ArrayBufferView, Pointer>();

/**
 * `ucx().addressOf(view)`, remembered per view object: the data path passes the same buffers
 * again and again, and taking an address costs ~0.5 us through koffi. A view's memory does not
 * move once its address was taken (ffi-facts.md; Bun's addressOf pins it first), and a view
 * whose buffer was detached has length 0 and is asked again.
 */
export function addressOfView(view: ArrayBufferView): Pointer {
  if (view.byteLength === 0) return 0;
  let a = addresses.get(view);
  if (a === undefined) {
    a = ucx().addressOf(view);
    addresses.set(view, a);
  }
  return a;
}
