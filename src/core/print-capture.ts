/**
 * UCX reports configuration and transport choices through `*_print_info(..., FILE *)`
 * functions. This runs one of them against an in-memory stream (`open_memstream`) and returns
 * what it printed.
 */
import type { Pointer } from "../ffi/index.ts";
import { UcxError } from "./errors.ts";
import { ucx } from "./library.ts";
import { OutSlots } from "./out-slots.ts";

const decoder = new TextDecoder();

export function capturePrint(print: (file: Pointer) => void): string {
  const u = ucx();
  const out = new OutSlots(2); // char *buffer; size_t size
  const file = u.open_memstream(out.address(0), out.address(1));
  if (file === 0) throw new UcxError("UCX_TS_CLOSED", "open_memstream failed: cannot capture UCX's report");
  try {
    print(file);
  } finally {
    u.fclose(file); // flushes and sets buffer/size
  }
  const buffer = out.pointer(0);
  const size = out.pointer(1);
  try {
    return size === 0 ? "" : decoder.decode(new Uint8Array(u.view(buffer, size)).slice());
  } finally {
    u.free(buffer);
  }
}
