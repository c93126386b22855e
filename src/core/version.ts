/** The version of the UCX library actually loaded (not the headers ucx-ts was written against). */
import { ucx } from "./library.ts";

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

/** The numbers alone, as read when UCX was opened: no FFI call, no view of C memory (core/worker's test says why that matters). */
export function ucxVersionNumbers(): Omit<UcxVersion, "text"> {
  return ucx().version;
}
