/**
 * What the soak's coordinator (main.ts) and its peers (peer.ts) say to each other, on the
 * endpoint each peer makes to the coordinator's listener (scoped tags, so the user tag is 48 bits):
 * - INTRO, peer -> coordinator, once per connection: which slot it fills, and the memory the
 *   coordinator may put/get/atomic into (address, length, packed rkey);
 * - CONTROL, coordinator -> peer: one operation to take part in (its kind, id and sizes); its
 *   data travels on dataTag(id) and comes back on dataTag(id) + 1, or on the stream / as an AM.
 * Payloads are a pure function of (seed, id), so either side can check them.
 */
export const TAG = { INTRO: 1, CONTROL: 2 } as const;
/** Data tags: 2^32 + 2 * id (and + 1 for the echo), apart from the control tags. */
export const dataTag = (id: number): number => 2 ** 32 + 2 * id;

export type OpKind = "tag" | "request" | "stream" | "multi" | "am" | "rma" | "atomic";
/** "request": a tag echo through UcxRequests (recvRequest, sendRequest), the peer's side a "tag" one. */
export const OP_KINDS: readonly OpKind[] = ["tag", "request", "stream", "multi", "am", "rma", "atomic"];

/** Operations with GPU memory (DeviceBuffers), with --gpu (gpu.ts). */
export type GpuKind = "gpu-tag" | "gpu-am" | "gpu-multi";
export const GPU_KINDS: readonly GpuKind[] = ["gpu-tag", "gpu-am", "gpu-multi"];

export interface Control {
  op: "tag" | "stream" | "multi" | "am" | GpuKind | "stop";
  id: number;
  /** Bytes of each buffer (one for tag/stream/am, several for multi). */
  sizes: number[];
  /** tag: the messages come as one window (`sendMany`) and go back as one (`recvMany`, then `sendMany`). */
  window?: boolean;
  /** gpu-tag: the peer receives into (and echoes from) device memory, else host memory. */
  device?: boolean;
}

export interface Intro {
  slot: number;
  pid: number;
  address: number;
  length: number;
  rkey: string; // hex
}

/** The peer's memory: REGION bytes for put/get, then the 8-byte counter for atomics. */
export const REGION = 16 * 2 ** 20;
export const COUNTER_OFFSET = REGION;
export const MEMORY = REGION + 64;

const encoder = new TextEncoder();
const decoder = new TextDecoder();
export const encode = (v: unknown): Uint8Array => encoder.encode(JSON.stringify(v));
export const decode = <T>(b: Uint8Array): T => JSON.parse(decoder.decode(b)) as T;

/** Fill `out` with the bytes of payload `seed` (xorshift32, fast enough for 16 MiB). */
export function fillPayload(out: Uint8Array, seed: number): Uint8Array {
  let x = (seed * 2654435761) >>> 0 || 1;
  const words = out.length >>> 2;
  const w = new Uint32Array(out.buffer, out.byteOffset, out.byteOffset % 4 === 0 ? words : 0);
  const n = w.length;
  for (let i = 0; i < n; i++) {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    w[i] = x >>> 0;
  }
  for (let i = n * 4; i < out.length; i++) {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    out[i] = x & 255;
  }
  return out;
}

export function payload(size: number, seed: number): Uint8Array {
  return fillPayload(new Uint8Array(size), seed);
}

export function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  return Buffer.compare(Buffer.from(a.buffer, a.byteOffset, a.length), Buffer.from(b.buffer, b.byteOffset, b.length)) === 0;
}

export const toHex = (b: Uint8Array) => Buffer.from(b.buffer, b.byteOffset, b.length).toString("hex");
export const fromHex = (s: string) => new Uint8Array(Buffer.from(s, "hex"));
