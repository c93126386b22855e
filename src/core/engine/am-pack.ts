/**
 * Small eager active messages of one progress call, packed (issue 21, the AM message rate): each
 * one's data and header are copied (one memcpy where UCX put the header right after the data,
 * as it does for an eager message) into one staging area and described by four u32s in an
 * index. After the call the lot goes to the application as ONE payload (the area's used part
 * and the index, two ArrayBuffers) and one completion record, where one message each cost an
 * ArrayBuffer, a payload object, a record and a payload-table entry of its own: a window of 256
 * 8-byte messages arrives in a handful of progress calls.
 *
 * The application reads the messages back with `unpackActiveMessages`, as views of the one data
 * buffer, in arrival order. UCXX's plain header (14 zero bytes: host memory, no callback, no user
 * header), which nearly every message carries, is not copied: its index entry says so.
 *
 * Layout. Data buffer: for each message in order, its data, then its header unless plain.
 * Index (u32 each): endpoint id, AM id, data length, header length (PLAIN_HEADER_MARK: plain).
 */
import type { Pointer, Ucx } from "../../ffi/index.ts";
import { AM_POOL_MIN_BYTES } from "./am-buffer-pool.ts";

/** Bytes of the staging area: a message that would not fit starts the next pack. */
const PACK_BYTES = 64 * 1024;
/** Messages one pack describes at most. */
const PACK_MESSAGES = 1024;
/** u32 words per message in the index. */
export const PACK_ENTRY_WORDS = 4;
/** The header-length word of a message whose header was UCXX's plain one (not carried). */
export const PLAIN_HEADER_MARK = 0xffffffff;
/** UCXX's plain header for host memory: 14 zero bytes. */
const PLAIN_HEADER_BYTES = 14;

/** One message taken out of a pack that held only it. */
export interface PackedOne {
  readonly endpoint: number;
  readonly amId: number;
  readonly buffer: ArrayBuffer;
  readonly header: Uint8Array;
}

export class AmPack {
  private readonly area = new Uint8Array(PACK_BYTES);
  private readonly areaAddress: number;
  private readonly index = new Uint32Array(PACK_MESSAGES * PACK_ENTRY_WORDS);
  private fill = 0;
  /** Messages packed since the last take. */
  count = 0;

  constructor(private readonly u: Ucx) {
    this.areaAddress = u.addressOf(this.area);
  }

  /**
   * Pack one eager message (inside UCX's callback: its memory is valid only now). False when it
   * is not small (from AM_POOL_MIN_BYTES: such data goes into a buffer of its own or reused
   * memory). `flush` is called first when the pack is full; it must take the pack.
   */
  add(endpoint: number, amId: number, header: Pointer, headerLength: number, data: Pointer, length: number, flush: () => void): boolean {
    const total = length + headerLength;
    if (length >= AM_POOL_MIN_BYTES || total > PACK_BYTES) return false;
    if (this.fill + total > PACK_BYTES || this.count === PACK_MESSAGES) flush();
    const at = this.fill;
    const to = this.areaAddress + at;
    if (headerLength === 0 || (header as number) === (data as number) + length) {
      if (total > 0) this.u.memcpy(to, data, total);
    } else {
      if (length > 0) this.u.memcpy(to, data, length);
      this.u.memcpy(to + length, header, headerLength);
    }
    const plain = amId === 0 && headerLength === PLAIN_HEADER_BYTES && isZero(this.area, at + length, at + total);
    const i = this.count * PACK_ENTRY_WORDS;
    const x = this.index;
    x[i] = endpoint;
    x[i + 1] = amId;
    x[i + 2] = length;
    x[i + 3] = plain ? PLAIN_HEADER_MARK : headerLength;
    this.fill = plain ? at + length : at + total;
    this.count++;
    return true;
  }

  /** The pack as [data, index] (ArrayBuffers of their own), emptied. */
  take(): ArrayBuffer[] {
    const out = [this.area.slice(0, this.fill).buffer as ArrayBuffer, this.index.slice(0, this.count * PACK_ENTRY_WORDS).buffer as ArrayBuffer];
    this.fill = 0;
    this.count = 0;
    return out;
  }

  /** The pack's only message (count 1), emptied; a plain header is handed on as `plain`. */
  takeOne(plain: Uint8Array): PackedOne {
    const x = this.index;
    const length = x[2]!;
    const headerLength = x[3]!;
    const buffer = this.area.slice(0, length).buffer as ArrayBuffer;
    const header = headerLength === PLAIN_HEADER_MARK ? plain : headerLength === 0 ? new Uint8Array(0) : this.area.slice(length, length + headerLength);
    this.fill = 0;
    this.count = 0;
    return { endpoint: x[0]!, amId: x[1]!, buffer, header };
  }
}

function isZero(bytes: Uint8Array, from: number, to: number): boolean {
  for (let i = from; i < to; i++) if (bytes[i] !== 0) return false;
  return true;
}

/**
 * Read a pack on the application side: `each` gets every message in arrival order, its data and
 * header as views of the one data buffer (a plain header as `plain`).
 */
export function unpackActiveMessages(
  buffers: readonly ArrayBuffer[],
  plain: Uint8Array,
  each: (endpoint: number, amId: number, data: Uint8Array, header: Uint8Array) => void,
): void {
  const data = buffers[0]!;
  const x = new Uint32Array(buffers[1]!);
  for (let i = 0, at = 0; i < x.length; i += PACK_ENTRY_WORDS) {
    const length = x[i + 2]!;
    const headerLength = x[i + 3]!;
    const bytes = new Uint8Array(data, at, length);
    at += length;
    let header = plain;
    if (headerLength !== PLAIN_HEADER_MARK) {
      header = new Uint8Array(data, at, headerLength);
      at += headerLength;
    }
    each(x[i]!, x[i + 1]!, bytes, header);
  }
}
