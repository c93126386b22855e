/**
 * `DeviceBuffer`: GPU memory as ucx-ts sees it. Either allocated here (cudaMalloc, freed by
 * `free()`), or memory another library owns (`DeviceBuffer.fromPointer`: a CuPy/PyTorch-style
 * allocator in the same process), which ucx-ts never frees.
 *
 * Its memory type is asked of libcudart once, when the object is made (cudaPointerGetAttributes),
 * and kept: the object is the cache entry of its allocation. JavaScript memory (typed arrays,
 * ArrayBuffers) is always host memory, allocated by the JS engine, so it is never asked about.
 */
import { CUDA_MEMCPY, CUDA_MEMORY_TYPE, CUDA_POINTER_ATTRIBUTES as ATTR, getEnv, type CudaRuntime, type Pointer } from "../../ffi/index.ts";
import { asBytes, type BufferLike } from "../buffers.ts";
import { invalidArgument, UcxError } from "../errors.ts";
import { ucx } from "../library.ts";
import { OutSlots } from "../out-slots.ts";
import { cudaCheck, requireCuda } from "./runtime.ts";

/** Where a pointer's memory is, per cudaPointerGetAttributes. */
export type PointerMemory = "device" | "managed" | "host-pinned" | "host";

export interface PointerAttributes {
  readonly memory: PointerMemory;
  /** The GPU the memory belongs to (-1 for unregistered host memory). */
  readonly device: number;
}

/** Ask libcudart what `address` is. */
export function pointerAttributes(address: Pointer): PointerAttributes {
  const cuda = requireCuda("pointerAttributes");
  const attrs = new Uint8Array(ATTR.bufferBytes);
  cudaCheck(cuda, cuda.cudaPointerGetAttributes(ucx().addressOf(attrs), address), "cudaPointerGetAttributes");
  const view = new DataView(attrs.buffer);
  const type = view.getInt32(ATTR.type, true);
  const device = view.getInt32(ATTR.device, true);
  const memory: PointerMemory =
    type === CUDA_MEMORY_TYPE.device ? "device" : type === CUDA_MEMORY_TYPE.managed ? "managed" : type === CUDA_MEMORY_TYPE.host ? "host-pinned" : "host";
  return { memory, device: memory === "host" ? -1 : device };
}

/**
 * Memory `allocate` took and `free` gave back, in this process (buffers and bytes, 0-byte ones
 * included), and the most bytes held at once. The soak (scripts/soak/) checks that what is
 * outstanding comes back to zero after its faults; tests may read it too.
 */
const counts = { allocated: 0, allocatedBytes: 0, freed: 0, freedBytes: 0, peakBytes: 0 };

export interface DeviceMemoryStats {
  readonly allocated: number;
  readonly allocatedBytes: number;
  readonly freed: number;
  readonly freedBytes: number;
  /** Buffers allocated here and not yet freed, and their bytes. */
  readonly outstanding: number;
  readonly outstandingBytes: number;
  /** The most bytes outstanding at once. */
  readonly peakBytes: number;
}

/**
 * UCX_TS_DEBUG_DEVICE_BUFFERS=1: the allocation stack of every buffer `allocate` made and `free`
 * has not given back yet, for finding who holds GPU memory a program expected back (the soak
 * prints them when its wind-down finds some out). Off by default: a stack per allocation.
 */
let liveStacksChosen: Map<DeviceBuffer, string> | undefined | null = null;
/** Read at the first allocation (a program may set the variable after loading ucx-ts). */
function liveStacks(): Map<DeviceBuffer, string> | undefined {
  if (liveStacksChosen === null) liveStacksChosen = getEnv("UCX_TS_DEBUG_DEVICE_BUFFERS") === "1" ? new Map() : undefined;
  return liveStacksChosen;
}

/** With UCX_TS_DEBUG_DEVICE_BUFFERS=1, the allocation stacks of the buffers not freed yet; else empty. */
export function outstandingDeviceBufferStacks(): string[] {
  const live = liveStacks();
  return live ? [...live].map(([b, stack]) => `${b.size} B: ${stack}`) : [];
}

export function deviceMemoryStats(): DeviceMemoryStats {
  return { ...counts, outstanding: counts.allocated - counts.freed, outstandingBytes: counts.allocatedBytes - counts.freedBytes };
}

export class DeviceBuffer {
  #freed = false;
  /** Transfers using this memory now: `free()` waits for none (memory UCX uses must stay). */
  #inUse = 0;

  private constructor(
    private readonly cuda: CudaRuntime,
    /** The GPU address (a Number, like every pointer above src/ffi). */
    readonly address: Pointer,
    /** Bytes. */
    readonly size: number,
    /** The GPU it lives on. */
    readonly device: number,
    /** What cudaPointerGetAttributes said this memory is. */
    readonly memory: PointerMemory,
    /** Allocated by ucx-ts (freed by `free()`), or owned by another library. */
    readonly owned: boolean,
  ) {}

  /** Allocate `size` bytes on GPU `device` (default: the current one) with cudaMalloc. */
  static allocate(size: number, options: { device?: number } = {}): DeviceBuffer {
    if (!Number.isSafeInteger(size) || size < 0) throw invalidArgument(`DeviceBuffer.allocate: size must be a non-negative integer, got ${size}`);
    const cuda = requireCuda("DeviceBuffer.allocate");
    const out = new OutSlots(1);
    if (options.device !== undefined) {
      if (!Number.isInteger(options.device) || options.device < 0) throw invalidArgument(`DeviceBuffer.allocate: device must be a GPU index, got ${options.device}`);
      cudaCheck(cuda, cuda.cudaSetDevice(options.device), `cudaSetDevice(${options.device})`);
    }
    cudaCheck(cuda, cuda.cudaGetDevice(out.address(0)), "cudaGetDevice");
    const device = out.i32(0);
    // cudaMalloc of 0 bytes gives NULL: a 0-byte buffer has no address and nothing to copy.
    if (size > 0) cudaCheck(cuda, cuda.cudaMalloc(out.address(0), size), `cudaMalloc(${size})`);
    counts.allocated++;
    counts.allocatedBytes += size;
    counts.peakBytes = Math.max(counts.peakBytes, counts.allocatedBytes - counts.freedBytes);
    const buffer = new DeviceBuffer(cuda, size === 0 ? 0 : out.pointer(0), size, device, "device", true);
    liveStacks()?.set(buffer, new Error("allocated here").stack ?? "");
    return buffer;
  }

  /**
   * Wrap `length` bytes at `address`, memory another library allocated (the address as a Number
   * or BigInt, e.g. CuPy's `data.ptr`). What it is (device, managed, pinned or plain host memory)
   * is asked of libcudart now. ucx-ts never frees it: the owner must keep it alive until every
   * transfer using it has settled.
   */
  static fromPointer(address: number | bigint, length: number): DeviceBuffer {
    const cuda = requireCuda("DeviceBuffer.fromPointer");
    const a = typeof address === "bigint" ? Number(address) : address;
    if (!Number.isSafeInteger(a) || a <= 0) throw invalidArgument(`DeviceBuffer.fromPointer: address must be a non-NULL pointer, got ${address}`);
    if (!Number.isSafeInteger(length) || length < 0) throw invalidArgument(`DeviceBuffer.fromPointer: length must be a non-negative integer, got ${length}`);
    const attrs = pointerAttributes(a);
    // A range that leaves a device allocation would be caught by the first copy; checking the
    // last byte now gives the error where the mistake is.
    if (length > 0 && attrs.memory === "device" && pointerAttributes(a + length - 1).memory !== "device") {
      throw invalidArgument(`DeviceBuffer.fromPointer: ${length} bytes at 0x${a.toString(16)} run past the end of its device allocation`);
    }
    return new DeviceBuffer(cuda, a, length, attrs.device, attrs.memory, false);
  }

  /** True when the bytes are on a GPU (device or managed memory), false for host memory. */
  get isDevice(): boolean {
    return this.memory === "device" || this.memory === "managed";
  }

  get freed(): boolean {
    return this.#freed;
  }

  /** The cudaMemcpyKind for copies between this memory and host memory. */
  private kind(toDevice: boolean): number {
    if (!this.isDevice) return CUDA_MEMCPY.hostToHost;
    return toDevice ? CUDA_MEMCPY.hostToDevice : CUDA_MEMCPY.deviceToHost;
  }

  private range(offset: number, length: number, operation: string): void {
    this.assertLive(operation);
    if (!Number.isSafeInteger(offset) || offset < 0 || !Number.isSafeInteger(length) || length < 0 || offset + length > this.size) {
      throw invalidArgument(`${operation}: bytes ${offset}..${offset + length} are outside this ${this.size}-byte buffer`);
    }
  }

  /** @internal */
  assertLive(operation: string): void {
    if (this.#freed) throw new UcxError("UCX_TS_CLOSED", `${operation}: the DeviceBuffer was freed`);
  }

  /** Copy `source` (host memory) into this buffer at `offset` (synchronous cudaMemcpy). */
  copyFromHost(source: BufferLike, offset = 0): void {
    const bytes = asBytes(source, "source");
    this.range(offset, bytes.length, "copyFromHost");
    if (bytes.length === 0) return;
    cudaCheck(this.cuda, this.cuda.cudaMemcpy(this.address + offset, ucx().addressOf(bytes), bytes.length, this.kind(true)), "cudaMemcpy host to device");
  }

  /** Copy `length` bytes at `offset` into `target` (or a new Uint8Array), synchronously. */
  copyToHost(target?: Uint8Array, offset: number = 0, length?: number): Uint8Array {
    length ??= target ? target.length : this.size - offset;
    const out = target ?? new Uint8Array(length);
    if (out.length < length) throw invalidArgument(`copyToHost: the target holds ${out.length} bytes; ${length} were asked for`);
    this.range(offset, length, "copyToHost");
    if (length === 0) return out;
    cudaCheck(this.cuda, this.cuda.cudaMemcpy(ucx().addressOf(out), this.address + offset, length, this.kind(false)), "cudaMemcpy device to host");
    return out;
  }

  /** @internal Held by a transfer until it settles: `free()` refuses meanwhile. */
  hold<T>(p: Promise<T>): Promise<T> {
    this.assertLive("transfer");
    this.#inUse++;
    const done = () => void this.#inUse--;
    p.then(done, done);
    return p;
  }

  /**
   * Free memory allocated by `allocate` (cudaFree). Refused while a transfer uses it; memory from
   * `fromPointer` is its owner's to free, so this only stops ucx-ts from using it. Idempotent.
   */
  free(): void {
    if (this.#freed) return;
    if (this.#inUse > 0) throw new UcxError("UCX_TS_INVALID_ARGUMENT", `DeviceBuffer.free: ${this.#inUse} transfer(s) still use this memory`);
    this.#freed = true;
    if (!this.owned) return;
    counts.freed++;
    counts.freedBytes += this.size;
    liveStacks()?.delete(this);
    if (this.address !== 0) cudaCheck(this.cuda, this.cuda.cudaFree(this.address), "cudaFree");
  }
}

export function isDeviceBuffer(x: unknown): x is DeviceBuffer {
  return x instanceof DeviceBuffer;
}
