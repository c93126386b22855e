/**
 * The FFI layer's public face. Above this folder, code imports from here only, and never
 * `koffi`, `Deno` or `bun:ffi`.
 */
export type { Pointer, CType } from "./types.ts";
export { NULL, C_SIZE } from "./types.ts";
export type { Backend, BufferSource, CallbackDef, NativeCallback, NativeFunction } from "./backend.ts";
export { symbols, cudaSymbols, callbackTypes, type LibraryName, type SymbolDef } from "./symbols.ts";
export { layouts, type LayoutName, type LayoutDef, type FieldDef } from "./layouts.ts";
export { uctOps, uctInlineCalls, type UctOpName, type UctOpDef } from "./uct-ops.ts";
export { Struct } from "./struct.ts";
export { UCS_STATUS, UCX_CONSTANTS, LIBC_CONSTANTS, MEMORY_TYPE_NAMES, DEVICE_TYPE_NAMES, ptrIsError, type UcsStatusName } from "./constants.ts";
export { CUDA_MEMCPY, CUDA_MEMORY_TYPE, CUDA_ERROR, CUDA_POINTER_ATTRIBUTES, UCS_MEMORY_TYPE_HOST, UCS_MEMORY_TYPE_CUDA } from "./cuda-constants.ts";
export { runtime, runtimeVersion, getEnv, platform, type RuntimeName } from "./runtime.ts";
export {
  openUcx,
  openLibc,
  openCudaRuntime,
  backend,
  LibraryLoadError,
  LIBRARY_FILES,
  type Ucx,
  type Libc,
  type CudaRuntime,
  type LoadAttempt,
  type OpenOptions,
} from "./load.ts";
