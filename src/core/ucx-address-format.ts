/**
 * A structural check of UCX's packed worker address (what `ucp_worker_get_address` returns and
 * `ucp_ep_create` unpacks with `ucp_address_unpack`, src/ucp/wireup/address.c). UCX reads that
 * format without knowing its length: a header nibble it does not know is an abort
 * (`ucs_assertv_always` on the address version), and every length, count and flag it reads
 * moves its cursor with no bound. This walk reads the same fields in the same order as
 * `ucp_address_unpack` does in UCX 1.13 and 1.16 (their walk is the same; 1.16 only gives some
 * fields new meanings), checks each against the buffer, and requires the walk to end exactly
 * at the buffer's end, so that nothing UCX would trust points outside the bytes it is given.
 *
 * What it assumes and cannot check (a crafted address, not a corrupted one, can still):
 * - UCX's non-unified mode (the default). With UCX_UNIFIED_MODE=y the iface attributes are
 *   5 bytes and the address lengths come from the local transports instead: the walk refuses
 *   such addresses, so ucx-ts checks only the envelope's checksum there (worker-address.ts).
 * - Transport addresses (device, iface) are opaque here: a transport reads as many bytes as
 *   its own struct, whatever length the address claims. The caller hands UCX a copy followed
 *   by zero padding (worker-address.ts), so a short one reads zeros, not foreign memory; but
 *   a well-formed crafted address still names whatever peer it likes: a TCP host and port, a
 *   shared-memory segment id, a process id for CMA. An address is a capability: take it only
 *   from peers you trust.
 * - The system-device byte is handed on unchecked (UCX looks it up in its topology table).
 */
import { UCS_STATUS } from "../ffi/index.ts";
import { invalidArgument, UcxError } from "./errors.ts";

/** ucp_object_version_t: UCP_OBJECT_VERSION_V1 = 0, V2 = 1 (src/ucp/core/ucp_types.h). */
const VERSION_V1 = 0;
const VERSION_V2 = 1;

// Header flags (UCP_ADDRESS_HEADER_FLAG_*).
const HEADER_DEBUG_INFO = 0x1;
const HEADER_WORKER_UUID = 0x2;
const HEADER_CLIENT_ID = 0x4;

// Per-byte flags and masks (UCP_ADDRESS_FLAG_*, UCP_ADDRESS_*_LEN_MASK, address.c).
const FLAG_LAST = 0x80;
const FLAG_HAS_EP_ADDR = 0x40;
const DEVICE_NUM_PATHS = 0x40;
const DEVICE_SYS_DEVICE = 0x20;
const DEVICE_LEN_MASK = 0x1f;
const IFACE_LEN_MASK = 0x3f;
const MD_EMPTY_DEV = 0x80;
const MD_MASK_V1 = 0x1f;
const MD_MASK_V2 = 0x7f;
/** UCP_NULL_RESOURCE where the first device would start: an address with no devices. */
const NULL_RESOURCE = 0xff;
/** UCP_MAX_RESOURCES: the transport addresses UCX has room for (it checks; so do we). */
const MAX_RESOURCES = 128;
/** ucp_md_map_t is 64 bits: a larger md index would shift past it. */
const MAX_MD_INDEX = 63;
/** sizeof(ucp_address_packed_iface_attr_t) (v1) and ucp_address_v2_packed_iface_attr_t (v2). */
const IFACE_ATTR_V1 = 16;
const IFACE_ATTR_V2 = 8;

function malformed(why: string, offset: number): UcxError {
  return new UcxError("UCS_ERR_INVALID_ADDR", `malformed UCX worker address: ${why} (at byte ${offset})`, { status: UCS_STATUS.UCS_ERR_INVALID_ADDR });
}

/** One transport address found in a packed worker address. */
export interface TransportAddress {
  /** UCX's 16-bit checksum of the transport's name: how UCX matches it to its own transports. */
  readonly nameChecksum: number;
  readonly deviceLength: number;
  readonly ifaceLength: number;
}

/**
 * Throws `UCS_ERR_INVALID_ADDR` unless `address` is a packed UCX worker address in full.
 * Returns its transport addresses (for `checkTransportLengths`).
 */
export function checkUcxAddressStructure(address: Uint8Array): TransportAddress[] {
  const found: TransportAddress[] = [];
  if (address.length === 0) throw invalidArgument("peer address is empty");
  let at = 0;
  const need = (n: number, what: string) => {
    if (at + n > address.length) throw malformed(`${what} runs past the end (${address.length} bytes)`, at);
  };
  const byte = (what: string): number => {
    need(1, what);
    return address[at++]!;
  };
  // A byte whose low bits are a value, extended by a whole next byte in v2 when they are all set
  // (ucp_address_unpack_byte_extended).
  const extended = (first: number, mask: number, version: number, what: string): number => {
    const value = first & mask;
    return version !== VERSION_V1 && value === mask ? byte(`${what} (extension byte)`) : value;
  };

  const header = byte("header");
  const version = header & 0x0f;
  if (version !== VERSION_V1 && version !== VERSION_V2) {
    throw malformed(`unknown address version ${version} (UCX knows 0 and 1)`, 0);
  }
  const flags = version === VERSION_V1 ? header >> 4 : byte("header flags");
  // ucp_ep_create unpacks with the worker-uuid flag, so a v1 address always carries the uuid.
  if (version === VERSION_V1 || flags & HEADER_WORKER_UUID) {
    need(8, "worker uuid");
    at += 8;
  }
  if (flags & HEADER_CLIENT_ID) {
    need(8, "client id");
    at += 8;
  }
  if (flags & HEADER_DEBUG_INFO) {
    const nameLength = byte("worker name length");
    need(nameLength, "worker name");
    at += nameLength;
  }
  if (byte("first device") === NULL_RESOURCE) return end(at);
  at--;

  let transports = 0;
  let devices = 0;
  for (let lastDevice = false; !lastDevice; ) {
    if (++devices > MAX_RESOURCES) throw malformed(`more than ${MAX_RESOURCES} devices`, at);
    const mdByte = byte("md index");
    const emptyDevice = (mdByte & MD_EMPTY_DEV) !== 0;
    const mdIndex = extended(mdByte, version === VERSION_V1 ? MD_MASK_V1 : MD_MASK_V2, version, "md index");
    if (mdIndex > MAX_MD_INDEX) throw malformed(`md index ${mdIndex} is beyond UCX's 64 memory domains`, at - 1);
    const deviceByte = byte("device address length");
    lastDevice = (deviceByte & FLAG_LAST) !== 0;
    const deviceLength = extended(deviceByte, DEVICE_LEN_MASK, version, "device address length");
    if (deviceByte & DEVICE_NUM_PATHS) {
      // UCX divides a device's bandwidth among its paths.
      if (byte("number of paths") === 0) throw malformed("a device with 0 paths", at - 1);
    }
    if (deviceByte & DEVICE_SYS_DEVICE) byte("system device");
    need(deviceLength, "device address");
    at += deviceLength;

    for (let lastTransport = emptyDevice; !lastTransport; ) {
      if (++transports > MAX_RESOURCES) throw malformed(`more than ${MAX_RESOURCES} transport addresses`, at);
      need(2, "transport name checksum");
      const nameChecksum = address[at]! | (address[at + 1]! << 8);
      at += 2;
      const attrLength = version === VERSION_V1 ? IFACE_ATTR_V1 : IFACE_ATTR_V2;
      need(attrLength, "interface attributes");
      at += attrLength;
      const ifaceByte = byte("interface address length");
      lastTransport = (ifaceByte & FLAG_LAST) !== 0;
      const ifaceLength = extended(ifaceByte, IFACE_LEN_MASK, version, "interface address length");
      need(ifaceLength, "interface address");
      at += ifaceLength;
      found.push({ nameChecksum, deviceLength, ifaceLength });
      // ucp_worker_get_address packs no endpoint addresses (they exist only in wireup messages
      // for an endpoint): one here is not an address a worker gave out.
      if (ifaceByte & FLAG_HAS_EP_ADDR) throw malformed("endpoint addresses in a worker address", at);
    }
  }
  return end(at);

  function end(offset: number): TransportAddress[] {
    if (offset !== address.length) throw malformed(`${address.length - offset} bytes after the last device`, offset);
    return found;
  }
}

/**
 * UCX hands a transport a NULL device or interface address when its length is 0, and a
 * transport that has one dereferences it (a bit flip that zeroed a length segfaulted in
 * ucp_wireup_is_reachable here). Which transports have empty addresses (self's device) is
 * known from this worker's own address: a peer's address for one of the same transports
 * must not be empty where ours is not. Transports this worker lacks are never used for it.
 */
export function checkTransportLengths(peer: readonly TransportAddress[], local: readonly TransportAddress[]): void {
  const nonEmpty = new Map<number, { device: boolean; iface: boolean }>();
  for (const t of local) {
    const seen = nonEmpty.get(t.nameChecksum) ?? { device: false, iface: false };
    nonEmpty.set(t.nameChecksum, { device: seen.device || t.deviceLength > 0, iface: seen.iface || t.ifaceLength > 0 });
  }
  for (const t of peer) {
    const ours = nonEmpty.get(t.nameChecksum);
    if (!ours) continue;
    if ((ours.device && t.deviceLength === 0) || (ours.iface && t.ifaceLength === 0)) {
      throw new UcxError(
        "UCS_ERR_INVALID_ADDR",
        `malformed UCX worker address: an empty ${t.deviceLength === 0 ? "device" : "interface"} address for transport 0x${t.nameChecksum.toString(16)}, whose addresses are not empty here`,
        { status: UCS_STATUS.UCS_ERR_INVALID_ADDR },
      );
    }
  }
}

/**
 * The worker uuid a packed address carries, as hex: the key UCX's endpoint pairing keeps per peer
 * (hello/pairing.ts). An address without one (a v2 address packed without the uuid flag) gives
 * "": all such peers share one key, as they would share UCX's uuid 0.
 */
export function workerUuid(address: Uint8Array): string {
  const version = (address[0] ?? 0) & 0x0f;
  const flags = version === VERSION_V1 ? (address[0] ?? 0) >> 4 : (address[1] ?? 0);
  const at = version === VERSION_V1 ? 1 : 2;
  if (version !== VERSION_V1 && !(flags & HEADER_WORKER_UUID)) return "";
  let hex = "";
  for (const b of address.subarray(at, at + 8)) hex += b.toString(16).padStart(2, "0");
  return hex;
}
