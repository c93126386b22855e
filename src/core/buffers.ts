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
  // A Uint8Array is used as it is (no new view per operation); other views get a byte view.
  if (buffer instanceof Uint8Array) bytes = buffer;
  else if (ArrayBuffer.isView(buffer)) bytes = new Uint8Array(buffer.buffer, buffer.byteOffset, buffer.byteLength);
  else if (buffer instanceof ArrayBuffer || isShared(buffer)) bytes = new Uint8Array(buffer);
  else throw invalidArgument(`${what} must be an ArrayBufferView, ArrayBuffer or SharedArrayBuffer`);
  const backing = bytes.buffer as ArrayBuffer & { detached?: boolean; resizable?: boolean; growable?: boolean };
  if (backing.detached === true) throw invalidArgument(`${what} is detached (transferred) and cannot be used`);
  if (backing.resizable === true || backing.growable === true) {
    throw invalidArgument(`${what} is resizable: UCX needs memory that cannot move or shrink while in flight`);
  }
  return bytes;
}

function isShared(b: unknown): b is SharedArrayBuffer {
  return typeof SharedArrayBuffer !== "undefined" && b instanceof SharedArrayBuffer;
}
