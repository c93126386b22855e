/**
 * A worker's registered memory (RMA): `memMap` registrations, their remote keys packed for
 * peers, the unmap, and the count of operations in flight on each registration (an unmap waits
 * for them). memory.ts holds the handle and the packed key's format.
 */
import { backend } from "../../ffi/index.ts";
import { asBytes, type BufferLike } from "../buffers.ts";
import { submission } from "../engine/engine.ts";
import { Op } from "../engine/records.ts";
import { invalidArgument } from "../errors.ts";
import { MemoryHandle, packKey, type MemMapOptions } from "../memory.ts";
import { allocateForMemMap, checkMemMapSize } from "../memory-limits.ts";
import { addressOf, type RequestPath } from "./request-path.ts";

export class RegisteredMemory {
  private readonly handles = new Map<number, MemoryHandle>();
  /** Registered memory by its ArrayBuffer: an operation whose local buffer is one holds its handle. */
  private readonly byBuffer = new WeakMap<ArrayBufferLike, MemoryHandle>();
  /** What a handle asks of the worker (memory.ts): its key packed, its unmap. */
  private readonly owner = {
    packRkey: async (h: MemoryHandle): Promise<Uint8Array> =>
      packKey(h.address, h.length, await this.path.copyOut({ op: Op.RkeyPack, target: h.id }, 1024, "ucp_rkey_pack")),
    unmap: async (h: MemoryHandle): Promise<void> => {
      h.detach((b) => backend().detachView(b));
      try {
        if (!this.path.closed) await this.settled(this.path.request(submission({ op: Op.MemUnmap, target: h.id }), h.bytes, "ucp_mem_unmap", () => undefined).promise);
      } finally {
        this.handles.delete(h.id);
        this.byBuffer.delete(h.bytes.buffer);
      }
    },
  };

  constructor(
    private readonly path: RequestPath,
    private readonly settled: <T>(p: Promise<T>) => Promise<T>,
  ) {}

  async memMap(memory: number | BufferLike, options: MemMapOptions): Promise<MemoryHandle> {
    let bytes: Uint8Array | undefined;
    let length: number;
    if (typeof memory === "number") {
      if (!Number.isSafeInteger(memory) || memory < 1) throw invalidArgument(`memMap needs a size of at least 1 byte, got ${memory}`);
      length = memory;
      const allocator = options.allocator === "ucx" ? "ucx" : "js";
      checkMemMapSize(memory, allocator);
      if (allocator === "js") bytes = allocateForMemMap(memory);
    } else {
      if (options.allocator === "ucx") throw invalidArgument("memMap: allocator 'ucx' is for a size, not for a buffer of yours");
      bytes = asBytes(memory, "memory");
      length = bytes.length;
    }
    if (length === 0) throw invalidArgument("memMap: cannot register zero bytes");
    const id = this.path.newObjectId();
    const given = bytes ? addressOf(bytes) : 0;
    const address = await this.settled(
      this.path.request(submission({ op: Op.MemMap, target: id, address: given, length }), bytes ?? null, "ucp_mem_map", (a) => a).promise,
    );
    // UCX's memory: a view of it, which unmap() detaches so that it cannot outlive the memory.
    bytes ??= new Uint8Array(backend().view(address, length));
    const handle = new MemoryHandle(this.owner, id, bytes, address, options.allocator === "ucx");
    this.handles.set(id, handle);
    this.byBuffer.set(bytes.buffer, handle);
    return handle;
  }

  /** The registration id of the user's buffer `buffer` (the send path sends with its handle). */
  registrationOf(buffer: ArrayBufferLike): number | undefined {
    return this.byBuffer.get(buffer)?.id;
  }

  /** Count `promise` against the memory handle `bytes` belongs to, if any. */
  hold<T>(bytes: Uint8Array, promise: Promise<T>): Promise<T> {
    const h = this.byBuffer.get(bytes.buffer);
    return h ? h.inFlight.hold(promise) : promise;
  }

  /** The worker is closing: UCX frees the memory it allocated, so no view may reach it after. */
  detachAll(): void {
    for (const h of this.handles.values()) h.detach((b) => backend().detachView(b));
  }
}
