/**
 * The ops table of one UCT interface, bound to JavaScript functions on first use: the calls
 * uct.h makes as static inlines (`iface->ops.ep_am_short(...)`), see src/ffi/uct-ops.ts.
 */
import { layouts, uctOps, type NativeFunction, type Pointer, type UctOpName } from "../../ffi/index.ts";
import { ucx } from "../library.ts";
import { readPointer } from "./native-memory.ts";

export type UctOps = { readonly [K in UctOpName]: NativeFunction };

export function bindOps(iface: Pointer): UctOps {
  const bound = new Map<string, NativeFunction>();
  return new Proxy({} as UctOps, {
    get(_, name: string) {
      let fn = bound.get(name);
      if (!fn) {
        const def = uctOps[name as UctOpName];
        const field = layouts.uct_iface_t.fields[def.field];
        fn = ucx().functionAt(readPointer(iface + field.offset), def);
        bound.set(name, fn);
      }
      return fn;
    },
  });
}
