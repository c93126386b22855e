/**
 * The CUDA runtime's enums and the one struct ucx-ts reads, from cuda_runtime_api.h /
 * driver_types.h (CUDA 11 and later; the values have not changed since). CUDA's headers are not
 * on the machines that build ucx-ts, so these are not checked by scripts/check-layout.ts: each
 * value is the header's, written here by hand.
 */

/** enum cudaMemcpyKind */
export const CUDA_MEMCPY = { hostToHost: 0, hostToDevice: 1, deviceToHost: 2, deviceToDevice: 3, default: 4 } as const;

/** enum cudaMemoryType, as cudaPointerGetAttributes reports it (CUDA >= 11). */
export const CUDA_MEMORY_TYPE = { unregistered: 0, host: 1, device: 2, managed: 3 } as const;

/** enum cudaError values ucx-ts acts on (others are reported by name through cudaGetErrorString). */
export const CUDA_ERROR = { success: 0, invalidValue: 1, memoryAllocation: 2, noDevice: 100, invalidDevice: 101, notReady: 600 } as const;

/**
 * struct cudaPointerAttributes (CUDA >= 11): enum cudaMemoryType type; int device;
 * void *devicePointer; void *hostPointer; long reserved[8]. 88 bytes on LP64: cudart writes all
 * of it, reserved words included. (A 24-byte buffer, the struct without `reserved`, let the real
 * libcudart 13 overwrite 64 bytes of the heap: "malloc(): corrupted top size" on the first GPU
 * run, 2026-11-27.) `bufferBytes` is what callers allocate: the struct with room to spare, so a
 * later CUDA that grows it again cannot write past the buffer.
 */
export const CUDA_POINTER_ATTRIBUTES = { size: 88, bufferBytes: 256, type: 0, device: 4, devicePointer: 8, hostPointer: 16 } as const;

/** UCS memory type numbers (ucs_memory_type_t) used on the wire by UCXX's AM header. */
export const UCS_MEMORY_TYPE_HOST = 0;
export const UCS_MEMORY_TYPE_CUDA = 1;
