/**
 * The contract every runtime backend fulfils. A backend turns the declarative tables
 * (`symbols.ts`) into plain JavaScript functions taking and returning Numbers, and gives the
 * few memory primitives the layers above need: the address of JavaScript memory, and a view of
 * C memory. It knows nothing about UCX.
 */
import type { SymbolDef } from "./symbols.ts";
import type { CType, Pointer } from "./types.ts";
import type { RuntimeName } from "./runtime.ts";

/** Anything whose bytes can be handed to C. */
export type BufferSource = ArrayBufferView | ArrayBuffer | SharedArrayBuffer;

// deno-lint-ignore no-explicit-any
export type NativeFunction = (...args: any[]) => any;

export interface OpenedLibrary {
  readonly path: string;
  /** One callable per symbol asked for, under the symbol's name. */
  readonly functions: Record<string, NativeFunction>;
  close(): void;
}

export interface Backend {
  readonly runtime: RuntimeName;
  /** Human name of the FFI in use: `koffi`, `Deno.dlopen`, `bun:ffi`. */
  readonly name: string;
  /**
   * True when a callback may be called by C on a thread other than its creator's, provided the
   * creator's event loop is free (awaiting, not blocked) to run it: koffi and Deno. Bun's plain
   * JSCallback kills the process, and its `threadsafe` one defers every call, even on its own
   * thread, to a later turn (measured 2026-11-23 with qsort: 0 calls seen when qsort returned).
   */
  readonly callbacksFromOtherThreads: boolean;
  /**
   * Open a shared library by path or soname and bind the given symbols; throws the runtime's
   * own error when the library or a symbol is missing.
   */
  open(path: string, symbols: Readonly<Record<string, SymbolDef>>): OpenedLibrary;
  /**
   * Address of the first byte of JavaScript memory. The address keeps nothing alive: the
   * caller must hold `buffer` until C is done with it (ffi-facts.md: a collected buffer was
   * written by UCX after GC freed it). Zero-length memory gives NULL.
   */
  addressOf(buffer: BufferSource): Pointer;
  /** An ArrayBuffer over C memory, without copying. Valid only while the C memory is. */
  view(address: Pointer, byteLength: number): ArrayBuffer;
  /**
   * Detach an ArrayBuffer made by `view()` so that no JavaScript can reach the C memory any
   * more (before that memory is freed). False where the runtime cannot: koffi's views on Node
   * are not detachable (structuredClone copies them instead).
   */
  detachView(buffer: ArrayBuffer): boolean;
  /**
   * A C function pointer that calls `fn`. It must be called on the thread that created it
   * (UCX calls ours from inside `ucp_worker_progress` on the thread that owns the worker);
   * pointer arguments arrive as Numbers. `close()` frees it: only once C can no longer call it.
   *
   * Called from another thread (measured 2026-11-23: C on the main thread calling, through
   * qsort, a callback made on a node:worker_threads thread): koffi runs it on the owner's event
   * loop and waits, but if the owner is blocked (Atomics.wait) it does NOT run and the call
   * returns 0; Deno runs it and returns its value even with the owner blocked; Bun's
   * `threadsafe` JSCallback queues it and returns at once (the result is lost), a plain one
   * kills the process. Hence UCX is only ever progressed by the thread that made the callbacks.
   */
  callback(signature: CallbackDef, fn: NativeFunction): NativeCallback;
  /**
   * A JavaScript function calling the C function at `address` (a function pointer read from C
   * memory, such as an entry of UCT's ops table, whose calls are static inlines in uct.h).
   * Arguments and results follow the same rules as the functions of `open()`.
   */
  functionAt(address: Pointer, signature: CallbackDef): NativeFunction;
}

export interface CallbackDef {
  readonly args: readonly CType[];
  readonly result: CType;
}

export interface NativeCallback {
  readonly address: Pointer;
  close(): void;
}
