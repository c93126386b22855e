/**
 * UCXX's multi-buffer header (`ucxx::Header`), byte for byte, so that `sendMulti`/`recvMulti`
 * talk to UCXX's `tagMultiSend`/`tagMultiRecv` (Python `send_multi`/`recv_multi`).
 *
 * One header is always 1,209 bytes, packed, little-endian, whatever it holds:
 *
 *   offset   0  next       u8         1 when another header follows, else 0
 *   offset   1  nframes    u64        frames described by this header (at most 100)
 *   offset   9  isCUDA     100 x i32  1 for device memory; unused slots 0 (ucx-ts: 16..30, below)
 *   offset 409  size       100 x u64  bytes of each frame; unused slots 0
 *
 * A batch of n frames is ceil(n / 100) headers (every one full but the last) and at least one:
 * zero frames travel as one header with nframes 0, which UCXX's receiver accepts (UCXX's own
 * sender sends nothing at all for zero frames, which no receiver can wait for). All headers go
 * first, then all frames in header order, each a tag message with the same tag.
 *
 * ucx-ts's staged device frames: where UCX cannot move GPU memory itself, ucx-ts's sender stages a
 * device frame through pinned host memory in chunks, each sent as it is copied out (copy engine
 * and network overlap). Such a frame has isCUDA = log2(chunk bytes), 16..30, and travels as
 * ceil(size / chunk) tag messages (at least one), in order. UCXX reads any nonzero isCUDA as
 * "device memory" and expects one message: it cannot take these frames, as it could not take a
 * device frame over a UCX without CUDA either. 0 and 1 keep UCXX's meaning.
 *
 * This module is plain data code with no UCX in it: it runs on the application thread
 * (encoding) and on the progress thread (decoding, before anything is allocated).
 */

/** Frames one header can describe: UCXX's `HeaderFramesSize`. */
export const FRAMES_PER_HEADER = 100;

const NEXT_OFFSET = 0;
const NFRAMES_OFFSET = 1;
const IS_CUDA_OFFSET = NFRAMES_OFFSET + 8;
const SIZE_OFFSET = IS_CUDA_OFFSET + 4 * FRAMES_PER_HEADER;

/** Bytes of one header on the wire (1,209). */
export const HEADER_BYTES = SIZE_OFFSET + 8 * FRAMES_PER_HEADER;

/** What a header says about one frame. */
export interface FrameDescription {
  /** Bytes of the frame. */
  readonly size: number;
  /** UCXX's isCUDA: the frame is device memory. */
  readonly device: boolean;
  /** A staged device frame (ucx-ts): sent in chunks of this many bytes (2^16..2^30), one message each. */
  readonly chunkBytes?: number;
}

const MIN_CHUNK_SHIFT = 16;
const MAX_CHUNK_SHIFT = 30;

/** Tag messages that carry frame `f` on the wire. */
export function messagesOf(f: FrameDescription): number {
  return f.chunkBytes ? Math.max(1, Math.ceil(f.size / f.chunkBytes)) : 1;
}

/** isCUDA as written for `f`. */
function isCudaOf(f: FrameDescription, index: number): number {
  if (!f.chunkBytes) return f.device ? 1 : 0;
  const shift = Math.log2(f.chunkBytes);
  if (!f.device || !Number.isInteger(shift) || shift < MIN_CHUNK_SHIFT || shift > MAX_CHUNK_SHIFT) {
    throw new RangeError(`frame ${index}: chunkBytes ${f.chunkBytes} must be a power of two from 2^16 to 2^30, on a device frame`);
  }
  return shift;
}

/** One decoded header. */
export interface DecodedHeader {
  /** Another header follows this one. */
  readonly next: boolean;
  readonly frames: readonly FrameDescription[];
}

/** Why bytes received as a header are not one; the message says what was wrong. */
export class HeaderFormatError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "HeaderFormatError";
  }
}

/** Headers needed for `frameCount` frames (at least one). */
export function headerCount(frameCount: number): number {
  return Math.max(1, Math.ceil(frameCount / FRAMES_PER_HEADER));
}

/** The headers of a batch, back to back: `headerCount(frames.length) * HEADER_BYTES` bytes. */
export function encodeHeaders(frames: readonly FrameDescription[]): Uint8Array {
  const count = headerCount(frames.length);
  const out = new Uint8Array(count * HEADER_BYTES);
  const view = new DataView(out.buffer);
  for (let h = 0; h < count; h++) {
    const base = h * HEADER_BYTES;
    const first = h * FRAMES_PER_HEADER;
    const n = Math.min(FRAMES_PER_HEADER, frames.length - first);
    view.setUint8(base + NEXT_OFFSET, h < count - 1 ? 1 : 0);
    view.setBigUint64(base + NFRAMES_OFFSET, BigInt(n), true);
    for (let i = 0; i < n; i++) {
      const f = frames[first + i]!;
      if (!Number.isSafeInteger(f.size) || f.size < 0) throw new RangeError(`frame ${first + i}: size ${f.size} is not a byte count`);
      view.setInt32(base + IS_CUDA_OFFSET + 4 * i, isCudaOf(f, first + i), true);
      view.setBigUint64(base + SIZE_OFFSET + 8 * i, BigInt(f.size), true);
    }
  }
  return out;
}

/**
 * Read one header from the `length` bytes received into `bytes`. Throws `HeaderFormatError` for
 * anything UCXX would not have sent: a message of another length, `next` other than 0 or 1,
 * more than 100 frames, an isCUDA other than 0, 1 or 16..30 (ucx-ts's staged device frames), a
 * size beyond 2^53.
 */
export function decodeHeader(bytes: Uint8Array, length: number = bytes.length): DecodedHeader {
  if (length !== HEADER_BYTES) {
    throw new HeaderFormatError(`a multi-buffer header is ${HEADER_BYTES} bytes; this message has ${length}`);
  }
  const view = new DataView(bytes.buffer, bytes.byteOffset, HEADER_BYTES);
  const next = view.getUint8(NEXT_OFFSET);
  if (next > 1) throw new HeaderFormatError(`header field 'next' is ${next}; it must be 0 or 1`);
  const nframes = view.getBigUint64(NFRAMES_OFFSET, true);
  if (nframes > BigInt(FRAMES_PER_HEADER)) {
    throw new HeaderFormatError(`header declares ${nframes} frames; one header holds at most ${FRAMES_PER_HEADER}`);
  }
  const frames: FrameDescription[] = [];
  for (let i = 0; i < Number(nframes); i++) {
    const isCuda = view.getInt32(IS_CUDA_OFFSET + 4 * i, true);
    const chunked = isCuda >= MIN_CHUNK_SHIFT && isCuda <= MAX_CHUNK_SHIFT;
    if (isCuda !== 0 && isCuda !== 1 && !chunked) {
      throw new HeaderFormatError(`frame ${i}: isCUDA is ${isCuda}; it must be 0 or 1 (or 16..30, ucx-ts's staged device frames)`);
    }
    const size = view.getBigUint64(SIZE_OFFSET + 8 * i, true);
    if (size > BigInt(Number.MAX_SAFE_INTEGER)) throw new HeaderFormatError(`frame ${i}: size ${size} is beyond 2^53 bytes`);
    frames.push(chunked ? { size: Number(size), device: true, chunkBytes: 2 ** isCuda } : { size: Number(size), device: isCuda === 1 });
  }
  return { next: next === 1, frames };
}
