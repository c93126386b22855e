/**
 * The ops table of one UCT interface, bound to JavaScript functions on first use: the calls
 * uct.h makes as static inlines (`iface->ops.ep_am_short(...)`), see src/ffi/uct-ops.ts.
 */
import { uctOps, type NativeFunction, type Pointer, type UctOpName } from "../../ffi/index.ts";
import { ucx } from "../library.ts";
import { readPointer } from "./native-memory.ts";

export type UctOps = { readonly [K in UctOpName]: NativeFunction };

export function bindOps(iface: Pointer): UctOps {
  // Each op is bound on first use (koffi builds a prototype per binding: binding all 24 at open
  // would cost every interface for ops it never calls), then stored as a plain data property
  // so the data path pays a property load, not a lookup.
  const ops = {} as Record<string, NativeFunction>;
  for (const name of Object.keys(uctOps) as UctOpName[]) {
    Object.defineProperty(ops, name, {
      configurable: true,
      enumerable: true,
      get() {
        const def = uctOps[name];
        const field = ucx().layouts.uct_iface_t.fields[def.field]!;
        const fn = ucx().functionAt(readPointer(iface + field.offset), def);
        Object.defineProperty(ops, name, { value: fn, writable: false, enumerable: true });
        return fn;
      },
    });
  }
  return ops as UctOps;
}
