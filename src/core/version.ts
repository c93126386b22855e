/** The version of the UCX library actually loaded (not the headers ucx-ts was written against). */
import { ucx } from "./library.ts";
import { OutSlots } from "./out-slots.ts";

export interface UcxVersion {
  readonly major: number;
  readonly minor: number;
  readonly release: number;
  /** `ucp_get_version_string()`, e.g. `1.13.1`. */
  readonly text: string;
}

export function ucxVersion(): UcxVersion {
  return { ...ucxVersionNumbers(), text: ucx().cString(ucx().ucp_get_version_string()) ?? "" };
}

/** The numbers alone: no view of C memory (reading the text makes one; core/worker's test says why that matters). */
export function ucxVersionNumbers(): Omit<UcxVersion, "text"> {
  const out = new OutSlots(3);
  ucx().ucp_get_version(out.address(0), out.address(1), out.address(2));
  return { major: out.u32(0), minor: out.u32(1), release: out.u32(2) };
}
