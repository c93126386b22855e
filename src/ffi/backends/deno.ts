/**
 * Deno backend: `Deno.dlopen`. Deno returns every 64-bit integer (and `isize` pointers) as a
 * BigInt, so results of those types are turned into Numbers here; `cstr` arguments go as
 * NUL-terminated byte buffers.
 */
import type { Backend, BufferSource, CallbackDef, NativeCallback, NativeFunction, OpenedLibrary } from "../backend.ts";
import type { SymbolDef } from "../symbols.ts";
import type { CType } from "../types.ts";
import { cstringArgs, toNumberIfSafe, withCStrings } from "./cstring.ts";

const DENO_TYPE: Record<CType, string> = {
  void: "void",
  i8: "i8",
  u8: "u8",
  i16: "i16",
  u16: "u16",
  i32: "i32",
  u32: "u32",
  i64: "i64",
  u64: "u64",
  usize: "usize",
  f64: "f64",
  ptr: "isize",
  cstr: "buffer",
  status: "i8",
};

// Only the slice of the Deno namespace this file uses.
interface DenoFfi {
  dlopen(path: string, defs: Record<string, { parameters: string[]; result: string }>): {
    symbols: Record<string, (...a: unknown[]) => unknown>;
    close(): void;
  };
  UnsafePointer: { of(b: BufferSource): unknown; value(p: unknown): bigint | number; create(v: bigint): unknown };
  UnsafePointerView: { getArrayBuffer(p: unknown, len: number): ArrayBuffer };
  UnsafeFnPointer: new (
    p: unknown,
    def: { parameters: string[]; result: string },
  ) => { call(...a: unknown[]): unknown };
  UnsafeCallback: new (
    def: { parameters: string[]; result: string },
    fn: NativeFunction,
  ) => { pointer: unknown; close(): void };
}

/**
 * The address of a view through `memcpy(view, view, 0)`, which returns its first argument: a
 * `buffer` parameter is passed by Deno's fast-call path as the view's data pointer. 0.03-0.06 us
 * against 1.8-4.7 us for `UnsafePointer.value(UnsafePointer.of(view))` (measured 2026-11-25, Deno
 * 2.9.6): taken once or twice per operation (a receive's buffer, a zero-copy send's), that was
 * most of Deno's FFI floor and a third of its polling round trip. The size goes as a BigInt: a
 * 64-bit parameter given a Number leaves the fast path (0.06 against 0.007 us a call, measured).
 * Undefined where libc cannot be opened under that name (the slow way is then used).
 */
function fastAddressOf(D: DenoFfi): ((view: ArrayBufferView) => number) | undefined {
  try {
    const memcpy = D.dlopen("libc.so.6", { memcpy: { parameters: ["buffer", "buffer", "usize"], result: "usize" } }).symbols.memcpy!;
    return (view) => Number(memcpy(view, view, 0n) as bigint);
  } catch {
    return undefined;
  }
}

export function createDenoBackend(): Backend {
  const D = (globalThis as unknown as { Deno: DenoFfi }).Deno;
  const fastAddress = fastAddressOf(D);

  return {
    runtime: "deno",
    name: "Deno.dlopen",
    callbacksFromOtherThreads: true,
    open(path: string, symbols: Readonly<Record<string, SymbolDef>>): OpenedLibrary {
      const defs: Record<string, { parameters: string[]; result: string }> = {};
      for (const [name, def] of Object.entries(symbols)) {
        defs[name] = { parameters: def.args.map((t) => DENO_TYPE[t]), result: DENO_TYPE[def.result] };
      }
      const lib = D.dlopen(path, defs);
      const functions: Record<string, NativeFunction> = {};
      for (const [name, def] of Object.entries(symbols)) {
        const fn = withCStrings(lib.symbols[name]!, cstringArgs(def.args));
        if (def.result === "ptr") functions[name] = (...a: unknown[]) => Number(fn(...a) as bigint);
        else if (def.result === "i64" || def.result === "u64" || def.result === "usize") {
          functions[name] = (...a: unknown[]) => toNumberIfSafe(fn(...a) as bigint);
        } else functions[name] = fn;
      }
      return { path, functions, close: () => lib.close() };
    },
    addressOf(buffer: BufferSource): number {
      const view = ArrayBuffer.isView(buffer) ? buffer : new Uint8Array(buffer);
      if (view.byteLength === 0) return 0;
      if (fastAddress) return fastAddress(view);
      return Number(D.UnsafePointer.value(D.UnsafePointer.of(view)));
    },
    view(address: number, byteLength: number): ArrayBuffer {
      if (byteLength === 0) return new ArrayBuffer(0);
      return D.UnsafePointerView.getArrayBuffer(D.UnsafePointer.create(BigInt(address)), byteLength);
    },
    detachView(buffer: ArrayBuffer): boolean {
      // Transferring detaches the original (measured: no copy of the external memory here).
      structuredClone(buffer, { transfer: [buffer] });
      return buffer.byteLength === 0;
    },
    callback(signature: CallbackDef, fn: NativeFunction): NativeCallback {
      // `isize` pointer arguments arrive as BigInt: hand them on as Numbers like every result.
      const wrapped = (...a: unknown[]) => fn(...a.map((v) => (typeof v === "bigint" ? Number(v) : v)));
      const cb = new D.UnsafeCallback(
        { parameters: signature.args.map((t) => DENO_TYPE[t]), result: DENO_TYPE[signature.result] },
        wrapped,
      );
      return { address: Number(D.UnsafePointer.value(cb.pointer)), close: () => cb.close() };
    },
    functionAt(address: number, signature: CallbackDef): NativeFunction {
      const fp = new D.UnsafeFnPointer(D.UnsafePointer.create(BigInt(address)), {
        parameters: signature.args.map((t) => DENO_TYPE[t]),
        result: DENO_TYPE[signature.result],
      });
      // A bound call, not a rest-parameter wrapper: the spread doubled the cost of a call
      // (measured: ~1.8 us for UnsafeFnPointer.call itself, ~3.4 us through `(...a) => fp.call(...a)`).
      const call = fp.call.bind(fp) as NativeFunction;
      const r = signature.result;
      if (r === "ptr") return (...a: unknown[]) => Number(call(...a) as bigint);
      if (r === "i64" || r === "u64" || r === "usize") return (...a: unknown[]) => toNumberIfSafe(call(...a) as bigint);
      return call;
    },
  };
}
