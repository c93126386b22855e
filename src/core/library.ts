/**
 * The process-wide handle on UCX (one per thread: each worker thread binds its own, as
 * koffi's types are per isolate). Loading is lazy, so importing ucx-ts never fails; the first
 * call that needs UCX loads it and, if UCX is missing, throws a `UcxError` that says how to
 * install it.
 */
import {
  getEnv,
  LibraryLoadError,
  LIBRARY_FILES,
  openCudaRuntime,
  openUcx,
  type CudaRuntime,
  type Ucx,
} from "../ffi/index.ts";
import { UcxError } from "./errors.ts";

/** Environment variable naming the directory that holds libucp.so.0, libuct.so.0 and libucs.so.0. */
export const LIBDIR_ENV = "UCX_TS_LIBDIR";

export const INSTALL_HINT =
  "Install UCX with your system's package manager: `apt-get install libucx0` (Debian, Ubuntu), " +
  "`dnf install ucx` (Fedora, RHEL), or build UCX from source; then, if it is not on the loader " +
  `path, set ${LIBDIR_ENV} to the directory holding libucp.so.0.`;

let loaded: Ucx | undefined;

/** UCX, loaded on first use. Throws `UcxError` with code `UCX_TS_LIBRARY_NOT_FOUND`. */
export function ucx(): Ucx {
  if (loaded) return loaded;
  const libDir = getEnv(LIBDIR_ENV) || undefined;
  try {
    loaded = openUcx({ libDir });
  } catch (e) {
    if (!(e instanceof LibraryLoadError)) throw e;
    const where = libDir ? `in ${LIBDIR_ENV}=${libDir}` : "on the system loader path";
    const tried = e.attempts.map((a) => `  ${a.path}: ${a.reason}`).join("\n");
    throw new UcxError(
      "UCX_TS_LIBRARY_NOT_FOUND",
      `UCX library ${LIBRARY_FILES[e.library][0]} was not found ${where}.\n${INSTALL_HINT}\nTried:\n${tried}`,
      { cause: e },
    );
  }
  return loaded;
}

/** UCX's text for a status, if UCX is loaded; never loads it (used on error paths). */
export function describeStatus(status: number): string | null {
  return loaded ? loaded.cString(loaded.ucs_status_string(status)) : null;
}

/** Throw the `UcxError` for a failed UCX call unless `status` is UCS_OK. */
export function check(status: number, operation: string): void {
  if (status !== 0) throw UcxError.fromStatus(status, operation, describeStatus);
}

let cuda: CudaRuntime | null | undefined;

/**
 * libcudart, loaded lazily the first time GPU memory is involved. Returns null when the CUDA
 * runtime is not installed; hosts without CUDA never open it otherwise.
 */
export function cudaRuntime(): CudaRuntime | null {
  if (cuda === undefined) {
    try {
      cuda = openCudaRuntime();
    } catch (e) {
      if (!(e instanceof LibraryLoadError)) throw e;
      cuda = null;
    }
  }
  return cuda;
}
