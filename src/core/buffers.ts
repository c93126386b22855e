/**
 * What counts as a buffer: any ArrayBufferView (typed arrays, DataView, Buffer), an ArrayBuffer
 * or a SharedArrayBuffer. Each is seen as the bytes it covers, without copying.
 *
 * While a transfer is in flight, its memory belongs to UCX: do not detach it (postMessage with
 * transfer, `ArrayBuffer.prototype.transfer`), resize it (resizable ArrayBuffers) or reuse it.
 * ucx-ts holds a strong reference to every buffer until UCX is done with it, and refuses
 * detached and resizable buffers up front.
 */
import { invalidArgument } from "./errors.ts";

export type BufferLike = ArrayBufferView | ArrayBuffer | SharedArrayBuffer;

export function asBytes(buffer: BufferLike, what = "buffer"): Uint8Array {
  let bytes: Uint8Array;
  try {
    // A Uint8Array is used as it is (no new view per operation); other views get a byte view.
    if (buffer instanceof Uint8Array) bytes = buffer;
    else if (ArrayBuffer.isView(buffer)) bytes = new Uint8Array(buffer.buffer, buffer.byteOffset, buffer.byteLength);
    else if (buffer instanceof ArrayBuffer || isShared(buffer)) bytes = new Uint8Array(buffer);
    else throw invalidArgument(`${what} must be an ArrayBufferView, ArrayBuffer or SharedArrayBuffer`);
  } catch (e) {
    // V8 throws a TypeError for a DataView, or a view constructed, over a detached buffer.
    if (e instanceof TypeError) throw detached(what);
    throw e;
  }
  const backing = bytes.buffer as ArrayBuffer & { detached?: boolean; resizable?: boolean; growable?: boolean };
  if (backing.detached === true || (bytes.byteLength === 0 && isDetached(backing))) throw detached(what);
  if (backing.resizable === true || backing.growable === true) {
    throw invalidArgument(`${what} is resizable: UCX needs memory that cannot move or shrink while in flight`);
  }
  return bytes;
}

function detached(what: string) {
  return invalidArgument(`${what} is detached (transferred) and cannot be used`);
}

/**
 * Node 20's V8 has no `ArrayBuffer.prototype.detached`; a detached buffer reads as 0 bytes
 * there, like an empty one, but refuses to have a view made on it. Only 0-byte buffers come
 * here, so the probe costs nothing on the transfer path.
 */
function isDetached(b: ArrayBufferLike): boolean {
  if (b.byteLength !== 0) return false;
  try {
    new Uint8Array(b, 0, 0);
    return false;
  } catch {
    return true;
  }
}

function isShared(b: unknown): b is SharedArrayBuffer {
  return typeof SharedArrayBuffer !== "undefined" && b instanceof SharedArrayBuffer;
}

/** Byte-for-byte equality (not for secrets: it stops at the first difference; auth.ts compares MACs in constant time). */
export function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  return a.length === b.length && a.every((v, i) => v === b[i]);
}
