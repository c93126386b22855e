/**
 * Deno backend: `Deno.dlopen`. Deno returns every 64-bit integer (and `isize` pointers) as a
 * BigInt, so results of those types are turned into Numbers here, and takes 64-bit arguments on
 * its fast path only as BigInts, so Numbers given to them are turned into BigInts here
 * (deno-int64.ts has the measurements); `cstr` arguments go as NUL-terminated byte buffers.
 */
import type { Backend, BufferSource, CallbackDef, NativeCallback, NativeFunction, OpenedLibrary } from "../backend.ts";
import type { SymbolDef } from "../symbols.ts";
import type { CType } from "../types.ts";
import { cstringArgs, withCStrings } from "./cstring.ts";
import { numbersIn, signedNumberOf, unsignedNumberOf } from "./deno-int64.ts";

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
    return (view) => signedNumberOf(memcpy(view, view, 0n) as bigint) as number;
  } catch {
    return undefined;
  }
}

/**
 * A Deno FFI function as the layers above see one: Numbers in (made BigInts where Deno's fast
 * path wants them), strings for `cstr`, Numbers out (a BigInt only for a 64-bit integer beyond
 * 2^53).
 */
function numbersInAndOut(fn: NativeFunction, args: readonly CType[], result: CType): NativeFunction {
  const out = result === "ptr" || result === "i64" ? signedNumberOf : result === "u64" || result === "usize" ? unsignedNumberOf : undefined;
  return withCStrings(numbersIn(fn, args.map((t) => DENO_TYPE[t]), out), cstringArgs(args));
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
        functions[name] = numbersInAndOut(lib.symbols[name]!, def.args, def.result);
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
      return numbersInAndOut(fp.call.bind(fp) as NativeFunction, signature.args, signature.result);
    },
  };
}
