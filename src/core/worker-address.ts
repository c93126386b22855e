/**
 * Worker addresses that cross process boundaries (files, environment, rendezvous, the listener's
 * hello): checked here before UCX sees them, because UCX's address unpacking trusts its input
 * and aborts the process on malformed bytes (see ../shared/design/ffi-facts.md, "Hostile bytes").
 *
 * `worker.address()` hands out an envelope around UCX's bytes:
 *
 *   0  magic     4 bytes "UWA1"
 *   4  length    u32  length of UCX's address that follows
 *   8  crc32     u32  CRC-32 of UCX's address
 *  12  reserved  u32  (0)
 *  16  UCX's packed worker address (ucp_worker_get_address)
 *
 * so that a truncated or corrupted copy is refused with a clear error. `connect()` also takes a
 * plain UCX address (what UCXX and UCX's C examples hand around): no checksum protects it, so
 * only its structure is checked (ucx-address-format.ts, which says what a crafted address can
 * still do). The magic cannot be mistaken for a plain address: UCX's first byte has the address
 * version (0 or 1) in its low nibble, and "U" (0x55) has 5.
 */
import process from "node:process";
import { crc32 } from "./crc32.ts";
import { UCS_STATUS } from "../ffi/index.ts";
import { invalidArgument, UcxError } from "./errors.ts";
import { checkTransportLengths, checkUcxAddressStructure } from "./ucx-address-format.ts";

const MAGIC = [0x55, 0x57, 0x41, 0x31]; // "UWA1"
const HEADER = 16;
/**
 * Zero bytes after the address given to UCX: a transport reads its own struct's size from an
 * address whatever length the packed address claims, so a short one reads these, not whatever
 * memory follows the buffer. UCX's transport addresses are far smaller than this.
 */
const PADDING = 256;

/** Wrap UCX's packed worker address in ucx-ts's envelope (what `worker.address()` returns). */
export function wrapWorkerAddress(ucxAddress: Uint8Array): Uint8Array {
  const out = new Uint8Array(HEADER + ucxAddress.length);
  out.set(MAGIC, 0);
  const view = new DataView(out.buffer);
  view.setUint32(4, ucxAddress.length, true);
  view.setUint32(8, crc32(ucxAddress), true);
  out.set(ucxAddress, HEADER);
  return out;
}

/** Whether `bytes` claims to be an envelope (its magic): then it must be a whole, intact one. */
export function isWorkerAddressEnvelope(bytes: Uint8Array): boolean {
  return bytes.length >= MAGIC.length && MAGIC.every((m, i) => bytes[i] === m);
}

/**
 * UCX's address inside an envelope. Throws `UCS_ERR_INVALID_ADDR` when the envelope is
 * truncated, longer than it says, or its checksum does not match.
 */
export function unwrapWorkerAddress(envelope: Uint8Array): Uint8Array {
  if (!isWorkerAddressEnvelope(envelope)) throw invalidAddress("not a ucx-ts worker address (no 'UWA1' magic)");
  if (envelope.length < HEADER) throw invalidAddress(`truncated worker address: ${envelope.length} bytes, the header alone is ${HEADER}`);
  const view = new DataView(envelope.buffer, envelope.byteOffset, envelope.byteLength);
  const length = view.getUint32(4, true);
  if (envelope.length !== HEADER + length) {
    throw invalidAddress(`worker address of ${envelope.length} bytes, its header says ${HEADER + length}: truncated or extended in transit`);
  }
  // Outside the checksum, so held to its one value: a flipped bit there is corruption too.
  if (view.getUint32(12, true) !== 0) throw invalidAddress("worker address header's reserved bytes are not zero: corrupted in transit");
  const ucx = envelope.subarray(HEADER);
  if (crc32(ucx) !== view.getUint32(8, true)) throw invalidAddress("worker address checksum mismatch: corrupted in transit");
  return ucx;
}

/**
 * Throws a typed error (`UcxError`) unless `address` is a worker address UCX can unpack without
 * harm: an intact envelope from `worker.address()`, or a plain UCX address whose structure
 * holds. Returns the bytes to hand to `ucp_ep_create` (the raw UCX address, copied, followed
 * by zero padding that UCX never reads unless a transport address is shorter than it should be).
 * `local`, the connecting worker's own plain UCX address, adds the check that no transport
 * address UCX would use is empty where this worker's is not (see checkTransportLengths):
 * without it a crafted address with a transport address cut to 0 bytes still segfaults UCX,
 * so every caller that has a worker at hand (connect, the listener's hello) should pass it.
 */
export function checkWorkerAddress(address: Uint8Array, local?: Uint8Array): Uint8Array {
  if (address.length === 0) throw invalidArgument("peer address is empty");
  const enveloped = isWorkerAddressEnvelope(address);
  const ucx = enveloped ? unwrapWorkerAddress(address) : address;
  // In unified mode the format leaves lengths out (ucx-address-format.ts): an intact envelope,
  // which a UCX worker produced, is then all that can be checked; a plain address is refused.
  if (!enveloped || !unifiedMode()) {
    try {
      const transports = checkUcxAddressStructure(ucx);
      if (local) checkTransportLengths(transports, checkUcxAddressStructure(local));
    } catch (e) {
      if (!enveloped && unifiedMode()) {
        throw invalidAddress("UCX_UNIFIED_MODE is on: only worker addresses from ucx-ts (with their checksum) are accepted");
      }
      throw e;
    }
  }
  const padded = new Uint8Array(ucx.length + PADDING);
  padded.set(ucx);
  return padded;
}

function unifiedMode(): boolean {
  const value = process.env.UCX_UNIFIED_MODE?.toLowerCase();
  return value === "y" || value === "yes" || value === "on" || value === "1";
}

function invalidAddress(message: string): UcxError {
  return new UcxError("UCS_ERR_INVALID_ADDR", message, { status: UCS_STATUS.UCS_ERR_INVALID_ADDR });
}
