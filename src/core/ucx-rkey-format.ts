/**
 * A structural check of UCX's packed remote key (what `ucp_rkey_pack` writes and
 * `ucp_ep_rkey_unpack` reads, src/ucp/core/ucp_rkey.c, the same in UCX 1.13 and 1.16):
 *
 *   md_map    u64  one bit per memory domain of the owner that has a key in here
 *   mem_type  u8   ucs_memory_type_t of the memory
 *   then, for each bit of md_map from the lowest: size u8, that MD's key (size bytes)
 *   then, only for memory on a known system device: sys_dev u8 and 3-byte distances
 *
 * `ucp_ep_rkey_unpack` is given no length: it walks md_map's bits and the sizes it finds,
 * and indexes a name table with mem_type (an out-of-range one reads past it). This check
 * refuses a mem_type UCX 1.13 does not know (1.16 knows more types; a key of those would come
 * from device memory ucx-ts does not register) and requires the per-MD keys to fit the buffer,
 * leaving at most the system-device tail, which `ucp_ep_rkey_unpack` does not read.
 *
 * What it cannot check (a crafted key, not a corrupted one, can still): each MD's key is opaque
 * here, and its transport reads as many bytes as its own format whatever size byte precedes
 * it. The caller hands UCX a copy followed by zero padding (memory.ts), so a short one reads
 * zeros, not foreign memory; but a well-formed crafted key still names whatever remote memory
 * (a shared-memory segment, a process for CMA) it likes. Take keys only from peers you trust.
 */
import { UCS_STATUS } from "../ffi/index.ts";
import { UcxError } from "./errors.ts";

/** UCS_MEMORY_TYPE_LAST in UCX 1.13: host, cuda, cuda-managed, rocm, rocm-managed. */
const MEMORY_TYPES = 5;
/** sizeof(ucp_rkey_packed_distance_t): sys_dev, latency, bandwidth (one byte each). */
const DISTANCE_BYTES = 3;

function malformed(why: string): UcxError {
  return new UcxError("UCS_ERR_INVALID_PARAM", `malformed UCX remote key: ${why}`, { status: UCS_STATUS.UCS_ERR_INVALID_PARAM });
}

/** Throws `UCS_ERR_INVALID_PARAM` unless `rkey` is a packed UCX remote key in full. */
export function checkUcxRkeyStructure(rkey: Uint8Array): void {
  if (rkey.length < 9) throw malformed(`${rkey.length} bytes, the md map and memory type alone are 9`);
  const view = new DataView(rkey.buffer, rkey.byteOffset, rkey.byteLength);
  let mdMap = view.getBigUint64(0, true);
  if (mdMap === 0n) throw malformed("no memory domain in its md map");
  const memoryType = rkey[8]!;
  if (memoryType >= MEMORY_TYPES) throw malformed(`unknown memory type ${memoryType}`);
  let at = 9;
  for (let md = 0; mdMap !== 0n; md++, mdMap >>= 1n) {
    if ((mdMap & 1n) === 0n) continue;
    if (at >= rkey.length) throw malformed(`the key of md ${md} is missing (${rkey.length} bytes)`);
    const size = rkey[at]!;
    at += 1 + size;
    if (at > rkey.length) throw malformed(`the key of md ${md} (${size} bytes) runs past the end (${rkey.length} bytes)`);
  }
  const tail = rkey.length - at;
  if (tail !== 0 && (tail - 1) % DISTANCE_BYTES !== 0) throw malformed(`${tail} bytes after the last md's key`);
}
