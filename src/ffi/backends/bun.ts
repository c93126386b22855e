/**
 * Bun backend: `bun:ffi`. Pointers and 64-bit results use Bun's `*_fast` types, which give a
 * Number whenever the value fits (always, for user-space addresses and status pointers).
 */
import { createRequire } from "node:module";
import type { Backend, BufferSource, CallbackDef, NativeCallback, NativeFunction, OpenedLibrary } from "../backend.ts";
import type { SymbolDef } from "../symbols.ts";
import type { CType } from "../types.ts";
import { cstringArgs, withCStrings } from "./cstring.ts";

const BUN_ARG: Record<CType, string> = {
  void: "void",
  i8: "i8",
  u8: "u8",
  i16: "i16",
  u16: "u16",
  i32: "i32",
  u32: "u32",
  i64: "i64",
  u64: "u64",
  usize: "u64",
  f64: "f64",
  ptr: "i64",
  cstr: "ptr",
  status: "i8",
};

const BUN_RESULT: Record<CType, string> = {
  ...BUN_ARG,
  i64: "i64_fast",
  u64: "u64_fast",
  usize: "u64_fast",
  ptr: "i64_fast",
};

interface BunFfi {
  dlopen(path: string, defs: Record<string, { args: string[]; returns: string }>): {
    symbols: Record<string, (...a: unknown[]) => unknown>;
    close(): void;
  };
  ptr(view: ArrayBufferView): number;
  toArrayBuffer(ptr: number, offset: number, len: number): ArrayBuffer;
  CFunction(def: { ptr: number; args: string[]; returns: string }): NativeFunction;
  JSCallback: new (fn: NativeFunction, def: { args: string[]; returns: string }) => { ptr: number; close(): void };
}

export function createBunBackend(): Backend {
  // `bun:ffi` exists only under Bun; requiring it here keeps the other runtimes from seeing it.
  const ffi = createRequire(import.meta.url)("bun:ffi") as BunFfi;

  return {
    runtime: "bun",
    name: "bun:ffi",
    callbacksFromOtherThreads: false,
    open(path: string, symbols: Readonly<Record<string, SymbolDef>>): OpenedLibrary {
      const defs: Record<string, { args: string[]; returns: string }> = {};
      for (const [name, def] of Object.entries(symbols)) {
        defs[name] = { args: def.args.map((t) => BUN_ARG[t]), returns: BUN_RESULT[def.result] };
      }
      const lib = ffi.dlopen(path, defs);
      const functions: Record<string, NativeFunction> = {};
      for (const [name, def] of Object.entries(symbols)) {
        functions[name] = withCStrings(lib.symbols[name]!, cstringArgs(def.args));
      }
      return { path, functions, close: () => lib.close() };
    },
    addressOf(buffer: BufferSource): number {
      const view = ArrayBuffer.isView(buffer) ? buffer : new Uint8Array(buffer);
      if (view.byteLength === 0) return 0;
      // A typed array made with `new Uint8Array(n)` keeps its bytes in JSC's fast storage until
      // its `.buffer` is first asked for, which moves them: ptr() taken before that points at
      // memory the array no longer uses (seen with Bun 1.4: registered memory that JS writes
      // never reached). Asking for `.buffer` first pins the bytes where they will stay.
      void view.buffer;
      return ffi.ptr(view);
    },
    view(address: number, byteLength: number): ArrayBuffer {
      if (byteLength === 0) return new ArrayBuffer(0);
      return ffi.toArrayBuffer(address, 0, byteLength);
    },
    detachView(buffer: ArrayBuffer): boolean {
      // Transferring detaches the original (measured: no copy of the external memory here).
      structuredClone(buffer, { transfer: [buffer] });
      return buffer.byteLength === 0;
    },
    callback(signature: CallbackDef, fn: NativeFunction): NativeCallback {
      // Pointer arguments are declared i64 and may arrive as BigInt: pass them on as Numbers.
      const wrapped = (...a: unknown[]) => fn(...a.map((v) => (typeof v === "bigint" ? Number(v) : v)));
      const cb = new ffi.JSCallback(wrapped, { args: signature.args.map((t) => BUN_ARG[t]), returns: BUN_ARG[signature.result] });
      return { address: cb.ptr, close: () => cb.close() };
    },
    functionAt(address: number, signature: CallbackDef): NativeFunction {
      return ffi.CFunction({ ptr: address, args: signature.args.map((t) => BUN_ARG[t]), returns: BUN_RESULT[signature.result] });
    },
  };
}
