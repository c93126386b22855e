/**
 * Whether GPU memory can be used here, and the checked way to call libcudart. libcudart is opened
 * on first use (library.ts, UCX_TS_CUDART); a host without it, or without a device, gets GPU
 * features that say why they are unavailable and everything else unchanged.
 */
import { CUDA_ERROR, type CudaRuntime } from "../../ffi/index.ts";
import { UcxError } from "../errors.ts";
import { cudaLoadFailure, cudaRuntime, ucx } from "../library.ts";
import { OutSlots } from "../out-slots.ts";

export interface CudaAvailability {
  readonly available: boolean;
  /** Why GPU memory cannot be used, when it cannot. */
  readonly reason?: string;
  readonly deviceCount: number;
  /** The libcudart file in use. */
  readonly library?: string;
}

let availability: CudaAvailability | undefined;

/** Is there a CUDA runtime with at least one device? Asked once per process. */
export function cudaAvailability(): CudaAvailability {
  if (availability) return availability;
  const cuda = cudaRuntime();
  if (!cuda) return (availability = { available: false, reason: cudaLoadFailure() ?? "libcudart not found", deviceCount: 0 });
  const out = new OutSlots(1);
  const status = cuda.cudaGetDeviceCount(out.address(0));
  if (status !== CUDA_ERROR.success) {
    return (availability = { available: false, reason: `cudaGetDeviceCount: ${errorText(cuda, status)}`, deviceCount: 0, library: cuda.path });
  }
  const count = out.i32(0);
  return (availability = count > 0
    ? { available: true, deviceCount: count, library: cuda.path }
    : { available: false, reason: "cudaGetDeviceCount found no device", deviceCount: 0, library: cuda.path });
}

/** libcudart with a usable device, or the typed error saying why not. */
export function requireCuda(operation: string): CudaRuntime {
  const a = cudaAvailability();
  if (!a.available) {
    throw new UcxError(a.library ? "UCX_TS_CUDA_UNAVAILABLE" : "UCX_TS_CUDA_NOT_FOUND", `${operation} needs a GPU: ${a.reason}`);
  }
  return cudaRuntime()!;
}

function errorText(cuda: CudaRuntime, status: number): string {
  return `${ucx().cString(cuda.cudaGetErrorString(status)) ?? "unknown error"} (cudaError ${status})`;
}

/** Throw UCX_TS_CUDA_ERROR unless `status` is cudaSuccess. */
export function cudaCheck(cuda: CudaRuntime, status: number, operation: string): void {
  if (status === CUDA_ERROR.success) return;
  const text = errorText(cuda, status);
  throw new UcxError("UCX_TS_CUDA_ERROR", `${operation} failed: ${text}`, { status, statusText: text });
}
