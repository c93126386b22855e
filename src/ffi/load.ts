/**
 * Opening the libraries: which backend, which files, and what went wrong when they are not
 * there. The result is one object with a typed function per symbol of `symbols.ts` and the
 * backend's memory primitives.
 */
import type { Backend, BufferSource, CallbackDef, NativeCallback, NativeFunction } from "./backend.ts";
import { createBunBackend } from "./backends/bun.ts";
import { createDenoBackend } from "./backends/deno.ts";
import { createKoffiBackend } from "./backends/koffi.ts";
import { layoutsFor, type LayoutDef, type LayoutName } from "./layouts.ts";
import { runtime } from "./runtime.ts";
import { Struct } from "./struct.ts";
import { cudaSymbols, symbols, type LibraryName, type SymbolDef, type SymbolTable } from "./symbols.ts";
import type { ArgValue, CType, Pointer, ResultValue } from "./types.ts";

/** The soname(s) tried for each library, in order. */
export const LIBRARY_FILES: Record<LibraryName, readonly string[]> = {
  ucs: ["libucs.so.0"],
  uct: ["libuct.so.0"],
  ucp: ["libucp.so.0"],
  c: ["libc.so.6"],
  cudart: ["libcudart.so", "libcudart.so.13", "libcudart.so.12", "libcudart.so.11.0"],
};

/**
 * Opening order: libc first (its setenv must run before UCX reads the environment), then UCX's
 * libraries in dependency order (ucp needs ucs and uct already mapped).
 */
const OPEN_ORDER: readonly LibraryName[] = ["c", "ucs", "uct", "ucp"];

type ArgsOf<A extends readonly CType[]> = { -readonly [I in keyof A]: ArgValue<A[I] & CType> };
type Fn<D extends SymbolDef> = (...args: ArgsOf<D["args"]>) => ResultValue<D["result"]>;

export type Functions<T extends SymbolTable> = { readonly [K in keyof T]: Fn<T[K]> };

/** Everything ucx-ts calls in C, bound for the current runtime. */
export interface Ucx extends Functions<typeof symbols> {
  readonly backend: Backend;
  /** Which file each library was opened from. */
  readonly libraryPaths: Readonly<Partial<Record<LibraryName, string>>>;
  /** `ucp_get_version` of the UCX loaded, read once when it is opened. */
  readonly version: { readonly major: number; readonly minor: number; readonly release: number };
  /** The struct layouts of the UCX loaded (layouts.ts: `layoutsFor` its version). */
  readonly layouts: Readonly<Record<LayoutName, LayoutDef>>;
  addressOf(buffer: BufferSource): Pointer;
  view(address: Pointer, byteLength: number): ArrayBuffer;
  /** A zeroed struct in JavaScript memory. */
  struct<N extends LayoutName>(name: N): Struct<N>;
  /** A struct living in C memory at `address` (element `index` of an array of them). */
  structAt<N extends LayoutName>(name: N, address: Pointer, index?: number): Struct<N>;
  /** A NUL-terminated C string at `address` (null for NULL). */
  cString(address: Pointer): string | null;
  /** A C function pointer calling `fn` (see `Backend.callback`). */
  callback(signature: CallbackDef, fn: NativeFunction): NativeCallback;
  /** A callable for the C function pointer at `address` (see `Backend.functionAt`). */
  functionAt(address: Pointer, signature: CallbackDef): NativeFunction;
}

export type CudaRuntime = Functions<typeof cudaSymbols> & { readonly path: string };

/** One place a library was looked for, and why it was not usable. */
export interface LoadAttempt {
  readonly path: string;
  readonly reason: string;
}

/** Raised when a library cannot be opened; `src/core` turns it into a `UcxError`. */
export class LibraryLoadError extends Error {
  constructor(
    readonly library: LibraryName,
    readonly attempts: readonly LoadAttempt[],
  ) {
    super(`cannot load ${library}: ` + attempts.map((a) => `${a.path}: ${a.reason}`).join("; "));
    this.name = "LibraryLoadError";
  }
}

let backendInstance: Backend | undefined;

/** The backend for this runtime, created once per thread. */
export function backend(): Backend {
  if (!backendInstance) {
    backendInstance =
      runtime === "deno" ? createDenoBackend() : runtime === "bun" ? createBunBackend() : createKoffiBackend();
  }
  return backendInstance;
}

function symbolsOf(table: SymbolTable, lib: LibraryName): Record<string, SymbolDef> {
  return Object.fromEntries(Object.entries(table).filter(([, d]) => d.lib === lib));
}

function candidates(lib: LibraryName, libDir: string | undefined): string[] {
  // An explicit directory is authoritative for UCX's own libraries: falling back to the
  // system copy would hide a misconfiguration (and makes the empty-directory test mean
  // something). libc and libcudart always come from the system loader path.
  const dir = lib === "c" || lib === "cudart" ? undefined : libDir;
  return LIBRARY_FILES[lib].map((f) => (dir ? `${dir.replace(/\/+$/, "")}/${f}` : f));
}

function openOne(b: Backend, table: SymbolTable, lib: LibraryName, libDir: string | undefined) {
  const attempts: LoadAttempt[] = [];
  for (const path of candidates(lib, libDir)) {
    try {
      return b.open(path, symbolsOf(table, lib));
    } catch (e) {
      attempts.push({ path, reason: e instanceof Error ? e.message : String(e) });
    }
  }
  throw new LibraryLoadError(lib, attempts);
}

export interface OpenOptions {
  /** Directory holding libucs/libuct/libucp; unset means the system loader path. */
  readonly libDir?: string;
  /**
   * Variables put into the C environment (setenv) after libc is open and before libucs is:
   * libucs parses its global options (UCX_MEM_*, UCX_LOG_LEVEL...) in a constructor that runs
   * when the library is mapped, and reads them with getenv, which does not see Bun's
   * `process.env`. Setting them here is the one way that works the same on all three runtimes.
   */
  readonly environment?: Readonly<Record<string, string>>;
}

/** Open UCX (and libc) and bind every symbol of the table. Throws `LibraryLoadError`. */
export function openUcx(options: OpenOptions = {}): Ucx {
  const b = backend();
  const functions: Record<string, unknown> = {};
  const libraryPaths: Partial<Record<LibraryName, string>> = {};
  for (const lib of OPEN_ORDER) {
    const opened = openOne(b, symbols, lib, options.libDir);
    Object.assign(functions, opened.functions);
    libraryPaths[lib] = opened.path;
    if (lib === "c") {
      const setenv = functions.setenv as (name: string, value: string, overwrite: number) => number;
      for (const [name, value] of Object.entries(options.environment ?? {})) setenv(name, value, 1);
    }
  }
  const decoder = new TextDecoder();
  const strlen = functions.strlen as (p: Pointer) => number;
  const version = new Uint32Array(3);
  const getVersion = functions.ucp_get_version as (major: Pointer, minor: Pointer, release: Pointer) => void;
  const at = b.addressOf(version);
  getVersion(at, at + 4, at + 8);
  const layouts = layoutsFor(version[0]!, version[1]!);
  return {
    ...(functions as unknown as Functions<typeof symbols>),
    backend: b,
    libraryPaths,
    version: { major: version[0]!, minor: version[1]!, release: version[2]! },
    layouts,
    addressOf: (buffer) => b.addressOf(buffer),
    view: (address, byteLength) => b.view(address, byteLength),
    struct: (name) => new Struct(name, undefined, 0, layouts[name]),
    structAt: (name, address, index = 0) => new Struct(name, b.view(address + index * layouts[name].size, layouts[name].size), 0, layouts[name]),
    callback: (signature, fn) => b.callback(signature, fn),
    functionAt: (address, signature) => b.functionAt(address, signature),
    cString: (address) => (address === 0 ? null : decoder.decode(new Uint8Array(b.view(address, strlen(address))))),
  };
}

/** The libc functions of the table, bound without UCX. */
export type Libc = Functions<{ readonly [K in keyof typeof symbols as (typeof symbols)[K]["lib"] extends "c" ? K : never]: (typeof symbols)[K] }>;

/**
 * libc alone, for work that must not load UCX on this thread (the close-on-exec sweep runs on
 * the application thread, where in thread mode UCX is never loaded). Throws `LibraryLoadError`.
 */
export function openLibc(): Libc {
  return openOne(backend(), symbols, "c", undefined).functions as unknown as Libc;
}

/**
 * Open libcudart, if present: from `path` when given (UCX_TS_CUDART, which is then the only
 * place looked at), else by its sonames on the loader path. Throws `LibraryLoadError`.
 */
export function openCudaRuntime(path?: string): CudaRuntime {
  const b = backend();
  if (path) {
    try {
      const opened = b.open(path, symbolsOf(cudaSymbols, "cudart"));
      return { ...(opened.functions as unknown as Functions<typeof cudaSymbols>), path: opened.path };
    } catch (e) {
      throw new LibraryLoadError("cudart", [{ path, reason: e instanceof Error ? e.message : String(e) }]);
    }
  }
  const opened = openOne(b, cudaSymbols, "cudart", undefined);
  return { ...(opened.functions as unknown as Functions<typeof cudaSymbols>), path: opened.path };
}
