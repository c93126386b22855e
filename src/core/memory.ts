/**
 * Remote memory access: `MemoryHandle` (memory of this process registered with UCX, which peers
 * may read and write) and `RemoteKey` (a peer's registered memory, as this endpoint may reach it).
 *
 * The memory behind a handle is a JavaScript ArrayBuffer that ucx-ts allocates (or the caller's
 * buffer), registered with `ucp_mem_map`: JS reads and writes it as plain bytes, the garbage
 * collector cannot free it while the handle holds it, and no view can outlive it (ucx-ts never
 * hands out views of memory UCX allocated, which would dangle after unmapping).
 *
 * What `packRkey()` returns travels to the peer by any means (a tag message, a file); it is
 * ucx-ts's own small format around UCX's packed key:
 *
 *   0  magic     4 bytes "URK2"
 *   4  size      u32  size of UCX's packed key at 32
 *   8  address   u64  where the memory starts in the owner's address space
 *  16  length    u64  its size in bytes
 *  24  crc32     u32  CRC-32 of bytes 0..23 and of UCX's key
 *  28  reserved  u32  (0)
 *  32  rkey      UCX's packed remote key (ucp_rkey_pack), `size` bytes
 *
 * UCX unpacks a key without knowing its length and trusts every byte (a corrupted one can
 * crash the process): the size and checksum catch truncation and corruption in transit, and
 * ucx-rkey-format.ts checks the structure of UCX's part before UCX sees it.
 */
import { UCS_STATUS } from "../ffi/index.ts";
import { crc32 } from "./crc32.ts";
import { invalidArgument, UcxError } from "./errors.ts";
import { checkUcxRkeyStructure } from "./ucx-rkey-format.ts";

const MAGIC = [0x55, 0x52, 0x4b, 0x32]; // "URK2"
const PREFIX = 32;
/** Zero bytes after the key given to UCX (see ucx-rkey-format.ts: a short MD key reads these). */
const PADDING = 256;

/**
 * A packed key, split into its parts; `rkey` is UCX's key, copied and zero-padded for
 * `ucp_ep_rkey_unpack`. Throws `UCX_TS_INVALID_ARGUMENT` for what is not a packed key at all,
 * `UCS_ERR_INVALID_PARAM` for one that is truncated, corrupted or malformed.
 */
export function parsePackedKey(bytes: Uint8Array): { address: number; length: number; rkey: Uint8Array } {
  if (bytes.length < MAGIC.length || MAGIC.some((m, i) => bytes[i] !== m)) {
    const old = bytes.length >= 4 && bytes[3] === 0x31 && MAGIC.slice(0, 3).every((m, i) => bytes[i] === m);
    throw invalidArgument(
      old
        ? "a remote key in the older 'URK1' format (no checksum): pack it again with this version's MemoryHandle.packRkey()"
        : "not a packed remote key (expected what MemoryHandle.packRkey() returns)",
    );
  }
  if (bytes.length < PREFIX) throw corrupt(`truncated: ${bytes.length} bytes, the header alone is ${PREFIX}`);
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const size = view.getUint32(4, true);
  if (bytes.length !== PREFIX + size) throw corrupt(`${bytes.length} bytes, its header says ${PREFIX + size}: truncated or extended`);
  // Outside the checksum, so held to its one value: a flipped bit there is corruption too.
  if (view.getUint32(28, true) !== 0) throw corrupt("reserved header bytes are not zero: corrupted in transit");
  const ucx = bytes.subarray(PREFIX);
  if (crc32(bytes.subarray(0, 24), ucx) !== view.getUint32(24, true)) throw corrupt("checksum mismatch: corrupted in transit");
  checkUcxRkeyStructure(ucx);
  const address = view.getBigUint64(8, true);
  const length = view.getBigUint64(16, true);
  if (address > BigInt(Number.MAX_SAFE_INTEGER) || length > BigInt(Number.MAX_SAFE_INTEGER)) {
    throw corrupt("address or length beyond 2^53");
  }
  const rkey = new Uint8Array(ucx.length + PADDING);
  rkey.set(ucx);
  return { address: Number(address), length: Number(length), rkey };
}

function corrupt(why: string): UcxError {
  return new UcxError("UCS_ERR_INVALID_PARAM", `packed remote key: ${why}`, { status: UCS_STATUS.UCS_ERR_INVALID_PARAM });
}

export interface MemMapOptions {
  /**
   * Who allocates memory asked for by size: "js" (default) an ordinary ArrayBuffer, registered;
   * "ucx" UCX itself (UCP_MEM_MAP_ALLOCATE), which lets shared-memory transports reach it
   * directly (ucx_perftest's put_bw measures such memory). Its `bytes` are a view of UCX's
   * memory that `unmap()` detaches: keep no other view of it.
   * A size beyond physical memory, and for "ucx" beyond the free space of /dev/shm (where UCX's
   * posix allocator puts it), is refused with UCS_ERR_NO_MEMORY before UCX sees it.
   */
  readonly allocator?: "js" | "ucx";
}

export function packKey(address: number, length: number, rkey: Uint8Array): Uint8Array {
  const out = new Uint8Array(PREFIX + rkey.length);
  out.set(MAGIC, 0);
  const view = new DataView(out.buffer);
  view.setUint32(4, rkey.length, true);
  view.setBigUint64(8, BigInt(address), true);
  view.setBigUint64(16, BigInt(length), true);
  out.set(rkey, PREFIX);
  view.setUint32(24, crc32(out.subarray(0, 24), rkey), true);
  return out;
}

/** Operations in flight that use a handle's or a key's memory: unmapping waits for none. */
export class InFlight {
  private count = 0;

  /** Count `promise` in until it settles. */
  hold<T>(promise: Promise<T>): Promise<T> {
    this.count++;
    const release = () => void this.count--;
    promise.then(release, release);
    return promise;
  }

  assertIdle(what: string): void {
    if (this.count > 0) {
      throw new UcxError("UCS_ERR_BUSY", `${what}: ${this.count} operation(s) using it are still in flight`, { status: -15 });
    }
  }
}

/** Registered memory of this process. */
export class MemoryHandle {
  /** @internal */
  readonly inFlight = new InFlight();
  #released = false;

  /** @internal Made by `Worker.memMap`. */
  constructor(
    private readonly owner: { packRkey(h: MemoryHandle): Promise<Uint8Array>; unmap(h: MemoryHandle): Promise<void> },
    /** @internal */ readonly id: number,
    /** The registered bytes: read and write them freely (peers may too). */
    readonly bytes: Uint8Array,
    /** Where the bytes are in this process's address space (what a peer's put/get address). */
    readonly address: number,
    /** UCX allocated the memory: `bytes` is a view that unmap() detaches. */
    readonly ucxAllocated = false,
  ) {}

  get length(): number {
    return this.bytes.length;
  }

  get released(): boolean {
    return this.#released;
  }

  /** The key a peer needs to reach this memory (`ep.unpackRkey(key)` on its side). */
  packRkey(): Promise<Uint8Array> {
    if (this.#released) throw new UcxError("UCX_TS_CLOSED", "the memory handle is unmapped");
    return this.owner.packRkey(this);
  }

  /**
   * Unregister the memory. Refused (UCS_ERR_BUSY) while this process has operations in flight
   * that use it; peers holding its key must stop using it first (UCX cannot tell).
   */
  async unmap(): Promise<void> {
    if (this.#released) return;
    this.inFlight.assertIdle("cannot unmap the memory");
    this.#released = true;
    await this.owner.unmap(this);
  }

  /**
   * @internal For memory UCX allocated: detach `bytes` before UCX frees it, where the runtime
   * can (Deno, Bun); on Node the view cannot be detached and must simply not be used after.
   */
  detach(detachView: (b: ArrayBuffer) => boolean): boolean {
    return this.ucxAllocated && detachView(this.bytes.buffer as ArrayBuffer);
  }
}

/** A peer's registered memory, reachable through one endpoint. */
export class RemoteKey {
  /** @internal */
  readonly inFlight = new InFlight();
  #released = false;

  /** @internal Made by `Endpoint.unpackRkey`. */
  constructor(
    private readonly owner: { destroyRkey(k: RemoteKey): Promise<void> },
    /** @internal */ readonly id: number,
    /** The endpoint the key was unpacked for: it works on that endpoint only. */
    readonly endpointId: number,
    /** Start of the remote memory in the peer's address space. */
    readonly address: number,
    /** Its size in bytes. */
    readonly length: number,
  ) {}

  get released(): boolean {
    return this.#released;
  }

  /** @internal Refuse a use that falls outside the remote memory or follows `destroy()`. */
  check(remoteAddress: number, length: number, operation: string): void {
    if (this.#released) throw new UcxError("UCX_TS_CLOSED", `${operation}: the remote key was destroyed`);
    if (!Number.isSafeInteger(remoteAddress) || !Number.isSafeInteger(length) || length < 0) {
      throw invalidArgument(`${operation}: remote address and length must be integers`);
    }
    if (remoteAddress < this.address || remoteAddress + length > this.address + this.length) {
      throw new UcxError(
        "UCS_ERR_OUT_OF_RANGE",
        `${operation}: [${remoteAddress}, ${remoteAddress + length}) is outside the remote memory [${this.address}, ${this.address + this.length})`,
        { status: -19 },
      );
    }
  }

  /** Release the key. Refused (UCS_ERR_BUSY) while operations using it are in flight. */
  async destroy(): Promise<void> {
    if (this.#released) return;
    this.inFlight.assertIdle("cannot destroy the remote key");
    this.#released = true;
    await this.owner.destroyRkey(this);
  }
}
