/**
 * Node backend: koffi. Pointers are declared `intptr_t`, which koffi hands back as plain
 * Numbers (ffi-facts.md: ~60 ns a call cheaper than BigInt pointers); a `ucs_status_ptr_t`
 * holding an error comes back as a small negative Number.
 */
import { createRequire } from "node:module";
import type { Backend, BufferSource, CallbackDef, NativeCallback, NativeFunction, OpenedLibrary } from "../backend.ts";
import type { SymbolDef } from "../symbols.ts";
import type { CType } from "../types.ts";

const KOFFI_TYPE: Record<CType, string> = {
  void: "void",
  i8: "int8_t",
  u8: "uint8_t",
  i16: "int16_t",
  u16: "uint16_t",
  i32: "int32_t",
  u32: "uint32_t",
  i64: "int64_t",
  u64: "uint64_t",
  usize: "size_t",
  f64: "double",
  ptr: "intptr_t",
  cstr: "const char *",
  status: "int8_t",
};

interface Koffi {
  load(path: string): { func(name: string, result: string, args: string[]): (...a: unknown[]) => unknown; unload(): void };
  address(value: unknown): bigint;
  view(ptr: number, len: number): ArrayBuffer;
  proto(result: string, args: string[]): unknown;
  pointer(type: unknown): unknown;
  register(fn: NativeFunction, type: unknown): unknown;
  decode(ptr: number, type: unknown): NativeFunction;
  unregister(cb: unknown): void;
}

export function createKoffiBackend(): Backend {
  // koffi is a CommonJS package with a prebuilt binary; a synchronous require keeps loading
  // synchronous, and the import stays inside this file.
  const koffi = createRequire(import.meta.url)("koffi") as Koffi;
  // koffi never frees a type: a prototype made per callback cost ~6.5 KiB of heap per Worker
  // create/close cycle, for good (measured 2026-11-25, 300 cycles). One per signature instead.
  const protos = new Map<string, unknown>();
  const protoOf = (signature: CallbackDef): unknown => {
    const result = KOFFI_TYPE[signature.result];
    const args = signature.args.map((t) => KOFFI_TYPE[t]);
    const key = `${result}(${args.join(",")})`;
    let type = protos.get(key);
    // An anonymous prototype: named koffi types are global per thread and may not repeat.
    if (type === undefined) protos.set(key, (type = koffi.proto(result, args)));
    return type;
  };
  const pointers = new Map<unknown, unknown>();
  const pointerTo = (proto: unknown): unknown => {
    let type = pointers.get(proto);
    if (type === undefined) pointers.set(proto, (type = koffi.pointer(proto)));
    return type;
  };

  return {
    runtime: "node",
    name: "koffi",
    callbacksFromOtherThreads: true,
    open(path: string, symbols: Readonly<Record<string, SymbolDef>>): OpenedLibrary {
      const lib = koffi.load(path);
      const functions: Record<string, NativeFunction> = {};
      for (const [name, def] of Object.entries(symbols)) {
        functions[name] = lib.func(name, KOFFI_TYPE[def.result], def.args.map((t) => KOFFI_TYPE[t]));
      }
      return {
        path,
        functions,
        close() {
          lib.unload();
        },
      };
    },
    addressOf(buffer: BufferSource): number {
      const view = ArrayBuffer.isView(buffer) ? buffer : new Uint8Array(buffer);
      if (view.byteLength === 0) return 0;
      // koffi refuses a bare SharedArrayBuffer but takes views of one.
      return Number(koffi.address(view));
    },
    view(address: number, byteLength: number): ArrayBuffer {
      return koffi.view(address, byteLength);
    },
    detachView(): boolean {
      return false;
    },
    callback(signature: CallbackDef, fn: NativeFunction): NativeCallback {
      const cb = koffi.register(fn, pointerTo(protoOf(signature)));
      return { address: Number(koffi.address(cb)), close: () => koffi.unregister(cb) };
    },
    functionAt(address: number, signature: CallbackDef): NativeFunction {
      // Decoding a function pointer with a prototype type gives a callable (koffi 3).
      return koffi.decode(address, protoOf(signature));
    },
  };
}
