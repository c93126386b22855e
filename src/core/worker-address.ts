/**
 * Worker addresses that cross process boundaries (files, environment, rendezvous, the listener's
 * hello): checked here before UCX sees them, because UCX's address unpacking trusts its input
 * and aborts the process on malformed bytes (see ../shared/design/ffi-facts.md, "Hostile bytes").
 *
 * Placeholder interface agreed between the crash-proofing and the listener work; the checks
 * themselves are filled in by the crash-proofing change.
 */
import { invalidArgument } from "./errors.ts";

/**
 * Throws a typed error (`UcxError`) unless `address` is a worker address UCX can unpack without
 * harm. Returns the bytes to hand to `ucp_ep_create` (the raw UCX address).
 */
export function checkWorkerAddress(address: Uint8Array): Uint8Array {
  if (address.length === 0) throw invalidArgument("peer address is empty");
  return address;
}
