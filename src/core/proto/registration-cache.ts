/**
 * The registration cache of the `zcopy-reg` protocol, application side: the send buffers
 * registered with UCX (`ucp_mem_map`, run by the executor), by their ArrayBuffer, so that a
 * buffer sent again is not registered again and its sends pass the memory handle (UCX then
 * skips its own per-send registration, which it does on RDMA transports when its own cache is
 * off, as ucx-ts's default UCX_MEM_EVENTS=no makes it).
 *
 * - A whole ArrayBuffer is registered (a later send of another part of it hits), if it is at
 *   most `maxRegistration` bytes; bigger ones are not registered (the send goes plain zcopy).
 * - A buffer the user registered with `worker.memMap` is used as it is.
 * - Registrations no send is using are unmapped, oldest use first, when all of them together
 *   pass `maxBytes`, and when their ArrayBuffer is garbage-collected (FinalizationRegistry).
 * - A registration UCX refuses is remembered as failed: that buffer goes plain zcopy.
 */
export interface RegistrationHost {
  /** A fresh memory id (the worker's object ids). */
  nextId(): number;
  /** Register `length` bytes at `address` as memory `id`; `onFail` runs if UCX refuses. */
  map(id: number, address: number, length: number, keep: Uint8Array, onFail: () => void): void;
  /** Unregister memory `id` (nothing if the worker is closed). */
  unmap(id: number): void;
  /** The id of the user's own registration of this ArrayBuffer, if any. */
  userRegistration(buffer: ArrayBufferLike): number | undefined;
  addressOf(bytes: Uint8Array): number;
}

export interface RegistrationLimits {
  /** Most bytes registered by the cache at once (default 1 GiB). */
  readonly maxBytes: number;
  /** Largest ArrayBuffer the cache registers (default 256 MiB). */
  readonly maxRegistration: number;
}

export const DEFAULT_REGISTRATION_LIMITS: RegistrationLimits = { maxBytes: 2 ** 30, maxRegistration: 256 * 2 ** 20 };

interface Entry {
  readonly id: number;
  readonly length: number;
  /** Sends in flight that use it: it is not unmapped while any is. */
  users: number;
  failed: boolean;
  evicted: boolean;
}

export class RegistrationCache {
  private readonly byBuffer = new WeakMap<ArrayBufferLike, Entry>();
  /** Live entries, least recently used first (a Map keeps insertion order). */
  private readonly lru = new Map<number, Entry>();
  private bytes = 0;
  /** What the cache did, for tests and `worker.registrationStats`. */
  readonly stats = { maps: 0, unmaps: 0, hits: 0, failed: 0 };
  private readonly collected = new FinalizationRegistry<Entry>((e) => this.drop(e));

  constructor(
    private readonly host: RegistrationHost,
    readonly limits: RegistrationLimits = DEFAULT_REGISTRATION_LIMITS,
  ) {}

  /** Bytes registered by the cache now. */
  get registeredBytes(): number {
    return this.bytes;
  }

  /**
   * The memory id to send `bytes` with, counted as in use until `release`; 0 when the buffer
   * is not to be registered (too big, refused before): send it plain.
   */
  acquire(bytes: Uint8Array): number {
    const buffer = bytes.buffer;
    const user = this.host.userRegistration(buffer);
    if (user !== undefined) return user;
    let e = this.byBuffer.get(buffer);
    if (e && !e.evicted) {
      if (e.failed) return 0;
      this.stats.hits++;
      this.lru.delete(e.id);
      this.lru.set(e.id, e);
    } else {
      if (buffer.byteLength === 0 || buffer.byteLength > this.limits.maxRegistration) return 0;
      e = { id: this.host.nextId(), length: buffer.byteLength, users: 0, failed: false, evicted: false };
      const entry = e;
      const whole = new Uint8Array(buffer);
      this.host.map(entry.id, this.host.addressOf(whole), whole.length, whole, () => {
        // Remembered as failed (this buffer then goes plain), no longer counted as registered.
        entry.failed = true;
        this.stats.failed++;
        if (this.lru.delete(entry.id)) this.bytes -= entry.length;
      });
      this.stats.maps++;
      this.byBuffer.set(buffer, e);
      this.lru.set(e.id, e);
      this.bytes += e.length;
      this.collected.register(buffer, e);
      this.evict();
    }
    e.users++;
    return e.id;
  }

  /** A send that used memory `id` is done. */
  release(id: number): void {
    const e = this.lru.get(id);
    if (e && e.users > 0) e.users--;
    if (this.bytes > this.limits.maxBytes) this.evict();
  }

  /** Unmap registrations nobody uses, oldest use first, until the total fits. */
  private evict(): void {
    for (const e of this.lru.values()) {
      if (this.bytes <= this.limits.maxBytes) return;
      if (e.users > 0) continue;
      this.drop(e);
    }
  }

  /** Unmap `e` (evicted, or its buffer collected). */
  private drop(e: Entry): void {
    if (e.evicted) return;
    e.evicted = true;
    if (this.lru.delete(e.id)) this.bytes -= e.length;
    if (!e.failed) {
      this.host.unmap(e.id);
      this.stats.unmaps++;
    }
  }
}
