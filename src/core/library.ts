/**
 * The process-wide handle on UCX (one per thread: each worker thread binds its own, as
 * koffi's types are per isolate). Loading is lazy, so importing ucx-ts never fails; the first
 * call that needs UCX loads it and, if UCX is missing, throws a `UcxError` that says how to
 * install it.
 */
import process from "node:process";
import {
  getEnv,
  LibraryLoadError,
  LIBRARY_FILES,
  openCudaRuntime,
  openUcx,
  type CudaRuntime,
  type Ucx,
  symbols,
} from "../ffi/index.ts";
import { rememberDescriptorsBeforeUcx } from "./close-on-exec.ts";
import { UcxError } from "./errors.ts";
import { PROFILING, profileFunctions } from "./profile.ts";

/** Environment variable naming the directory that holds libucp.so.0, libuct.so.0 and libucs.so.0. */
export const LIBDIR_ENV = "UCX_TS_LIBDIR";

export const INSTALL_HINT =
  "Install UCX with your system's package manager: `apt-get install libucx0` (Debian, Ubuntu), " +
  "`dnf install ucx` (Fedora, RHEL), or build UCX from source; then, if it is not on the loader " +
  `path, set ${LIBDIR_ENV} to the directory holding libucp.so.0.`;

/**
 * UCX settings ucx-ts chooses when the user has not: name -> [value, why].
 *
 * UCX_MEM_EVENTS=no: libucm's memory-event hooks patch brk/sbrk/mmap/munmap inside the running
 * process, and a JavaScript runtime has many threads (V8's compiler and GC helpers, libuv's pool)
 * calling those functions while the patching happens. With them on, about one process start in
 * 25 (demo runs, two-process tests, CI) died with SIGSEGV in libc's memcpy under V8's compiler,
 * at an address just below the top of the brk heap, or hung in UCX's signal handler; in 180 runs
 * with them off, none did. What they buy is UCX's registration cache for RDMA and GPU memory
 * (without it UCX registers per transfer, or asks the driver for a pointer's memory type),
 * which a user on InfiniBand or GPUs can turn back on with UCX_MEM_EVENTS=yes.
 */
export const UCX_DEFAULTS: Readonly<Record<string, readonly [value: string, why: string]>> = {
  UCX_MEM_EVENTS: ["no", "UCX's memory hooks crash JavaScript runtimes now and then; set UCX_MEM_EVENTS=yes to use them"],
};

/** One UCX setting ucx-ts applied before loading UCX, and whether it was the user's or ours. */
export interface UcxSetting {
  readonly name: string;
  readonly value: string;
  readonly source: "user" | "ucx-ts default";
  readonly why?: string;
}

let applied: readonly UcxSetting[] | undefined;

/**
 * The settings of `UCX_DEFAULTS` as they apply in this process (the user's value wins). Once
 * UCX is loaded, the answer is what was decided then: afterwards the runtime's environment
 * holds our own defaults too (Node and Deno read the C environment) and would look like the
 * user's.
 */
export function ucxSettings(): readonly UcxSetting[] {
  if (applied) return applied;
  return Object.entries({ ...UCX_DEFAULTS, ...conditionalDefaults(), ...programDefaults }).map(([name, [value, why]]): UcxSetting => {
    const user = getEnv(name);
    return user !== undefined ? { name, value: user, source: "user" } : { name, value, source: "ucx-ts default", why };
  });
}

/**
 * UCX warns about every `UCX_*` variable it does not know, so ucx-ts's own `UCX_TS_*` settings
 * (UCX_TS_LIBDIR, UCX_TS_PROTO_*) would each print "UCX WARN unused env variable". When one is
 * set, and the user has not chosen, that warning is turned off.
 */
function conditionalDefaults(): Record<string, readonly [string, string]> {
  const ours = Object.keys(process.env).filter((k) => k.startsWith("UCX_TS_"));
  if (ours.length === 0) return {};
  return { UCX_WARN_UNUSED_ENV_VARS: ["n", `UCX would warn that ${ours.join(", ")} ${ours.length > 1 ? "are" : "is"} unused (they are ucx-ts's)`] };
}

/** Defaults a program built on ucx-ts adds before UCX loads (the CLI quiets UCX's warnings). */
const programDefaults: Record<string, readonly [string, string]> = {};

/**
 * Adds a default UCX setting, applied when UCX loads unless the user set the variable. For
 * programs (the CLI), not libraries: it changes every worker in the process. Throws once UCX is
 * loaded, since libucs reads its global options only then.
 */
export function preferUcxDefault(name: string, value: string, why: string): void {
  if (loaded) throw new UcxError("UCX_TS_UNSUPPORTED", `${name} must be chosen before UCX is loaded`);
  programDefaults[name] = [value, why];
}

let loaded: Ucx | undefined;

/** UCX, loaded on first use. Throws `UcxError` with code `UCX_TS_LIBRARY_NOT_FOUND`. */
export function ucx(): Ucx {
  if (loaded) return loaded;
  rememberDescriptorsBeforeUcx(); // what is open now is the program's, not UCX's (close-on-exec.ts)
  const libDir = getEnv(LIBDIR_ENV) || undefined;
  try {
    const settings = ucxSettings();
    loaded = openUcx({ libDir, environment: Object.fromEntries(settings.map((s) => [s.name, s.value])) });
    // UCX_TS_PROFILE=1: every C call counted and timed (profile.ts); otherwise the bare functions.
    if (PROFILING) loaded = profileFunctions(loaded, Object.keys(symbols));
    applied = settings;
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

/**
 * UCX's texts by status, read once each: reading one takes a view of UCX's memory, which holds
 * ~200 B of malloc until the isolate's next full collection (engine/part-batch.ts, copyIn), and
 * a worker whose peers keep failing asks for the same few texts over and over.
 */
const statusTexts = new Map<number, string | null>();

/** UCX's text for a status, if UCX is loaded; never loads it (used on error paths). */
export function describeStatus(status: number): string | null {
  if (!loaded) return null;
  let text = statusTexts.get(status);
  if (text === undefined) statusTexts.set(status, (text = loaded.cString(loaded.ucs_status_string(status))));
  return text;
}

/** Throw the `UcxError` for a failed UCX call unless `status` is UCS_OK. */
export function check(status: number, operation: string): void {
  if (status !== 0) throw UcxError.fromStatus(status, operation, describeStatus);
}

let cuda: CudaRuntime | null | undefined;
let cudaFailure: string | undefined;

/** Environment variable naming the libcudart file to load (else its sonames on the loader path). */
export const CUDART_ENV = "UCX_TS_CUDART";

/**
 * libcudart, loaded lazily the first time GPU memory is involved. Returns null when the CUDA
 * runtime is not installed (`cudaLoadFailure()` says why); hosts without CUDA never open it
 * otherwise.
 */
export function cudaRuntime(): CudaRuntime | null {
  if (cuda === undefined) {
    const path = getEnv(CUDART_ENV) || undefined;
    try {
      cuda = openCudaRuntime(path);
    } catch (e) {
      if (!(e instanceof LibraryLoadError)) throw e;
      cuda = null;
      const where = path ? `${CUDART_ENV}=${path}` : "the loader path";
      cudaFailure = `libcudart could not be loaded from ${where}: ${e.attempts.map((a) => `${a.path}: ${a.reason}`).join("; ")}`;
    }
  }
  return cuda;
}

/** Why `cudaRuntime()` returned null. */
export function cudaLoadFailure(): string | undefined {
  return cudaFailure;
}
