/**
 * Pinned (page-locked) host memory for staging: the copy engine copies asynchronously only to and
 * from pinned pages, and pinning is slow (the driver locks every page), so buffers are kept and
 * reused. Sizes are rounded up to a power of two (at least 64 KiB) and each size keeps its free
 * buffers; past `MAX_CACHED_BYTES` in all, a released buffer is freed instead of kept.
 */
import type { Pointer } from "../../ffi/index.ts";
import { ucx } from "../library.ts";
import { OutSlots } from "../out-slots.ts";
import { cudaCheck, requireCuda } from "./runtime.ts";

const MIN_BYTES = 64 * 1024;
/** Pinned memory kept for reuse, in all: enough for triple-buffered pipelines and a few whole messages. */
export const MAX_CACHED_BYTES = 512 * 1024 * 1024;

export interface PinnedBuffer {
  readonly address: Pointer;
  /** Capacity (a power of two). */
  readonly capacity: number;
  /** The whole buffer as JavaScript bytes (a view of the C memory, no copy). */
  readonly bytes: Uint8Array;
}

const free = new Map<number, PinnedBuffer[]>();
let cached = 0;
/** Buffers (and their bytes) handed out and not yet given back, and the most bytes out at once. */
let outstanding = 0;
let outstandingBytes = 0;
let peakBytes = 0;
/** Pinned memory this pool holds from CUDA (cudaMallocHost less cudaFreeHost): handed out or kept. */
let pinnedBytes = 0;

/**
 * Pinned memory handed out now, and the most at once since `resetPinnedPeak`. Tests check that a
 * pipeline staged through its few slots (not a whole frame) and gave every slot back, also when
 * it failed.
 */
export function pinnedStats(): { outstanding: number; outstandingBytes: number; peakBytes: number; cachedBytes: number; pinnedBytes: number } {
  return { outstanding, outstandingBytes, peakBytes, cachedBytes: cached, pinnedBytes };
}

export function resetPinnedPeak(): void {
  peakBytes = outstandingBytes;
}

function handOut(b: PinnedBuffer): PinnedBuffer {
  outstanding++;
  outstandingBytes += b.capacity;
  peakBytes = Math.max(peakBytes, outstandingBytes);
  return b;
}

function sizeClass(size: number): number {
  let c = MIN_BYTES;
  while (c < size) c *= 2;
  return c;
}

/** A pinned buffer of at least `size` bytes; give it back with `releasePinned`. */
export function acquirePinned(size: number): PinnedBuffer {
  const capacity = sizeClass(size);
  const kept = free.get(capacity)?.pop();
  if (kept) {
    cached -= capacity;
    return handOut(kept);
  }
  const cuda = requireCuda("staging through pinned memory");
  const out = new OutSlots(1);
  cudaCheck(cuda, cuda.cudaMallocHost(out.address(0), capacity), `cudaMallocHost(${capacity})`);
  const address = out.pointer(0);
  pinnedBytes += capacity;
  return handOut({ address, capacity, bytes: new Uint8Array(ucx().view(address, capacity)) });
}

/** Return `b` for reuse (or free it when the cache is full). No one may use `b` afterwards. */
export function releasePinned(b: PinnedBuffer): void {
  outstanding--;
  outstandingBytes -= b.capacity;
  if (cached + b.capacity <= MAX_CACHED_BYTES) {
    cached += b.capacity;
    let list = free.get(b.capacity);
    if (!list) free.set(b.capacity, (list = []));
    list.push(b);
    return;
  }
  const cuda = requireCuda("staging through pinned memory");
  cuda.cudaFreeHost(b.address);
  pinnedBytes -= b.capacity;
}
