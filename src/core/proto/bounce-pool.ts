/**
 * The bounce pool, application side: fixed-size chunks of one (Shared)ArrayBuffer that the
 * executor registers with UCX once (as memory BOUNCE_POOL_MEMORY, records.ts). A bounce send copies its bytes
 * into a free chunk and hands UCX the chunk; the chunk comes back when UCX reports the send
 * done. An empty pool is not an error: the send then goes zero-copy (send-path.ts).
 */
export class BouncePool {
  readonly bytes: Uint8Array;
  private readonly free: number[] = [];
  private base = 0;

  constructor(
    /** Shared with the progress thread in thread mode. */
    readonly buffer: ArrayBufferLike,
    readonly chunkSize: number,
  ) {
    this.bytes = new Uint8Array(buffer);
    const chunks = chunkSize > 0 ? Math.floor(buffer.byteLength / chunkSize) : 0;
    for (let i = chunks - 1; i >= 0; i--) this.free.push(i);
  }

  static create(chunkSize: number, chunks: number, shared: boolean): BouncePool {
    const size = chunkSize * chunks;
    return new BouncePool(shared ? new SharedArrayBuffer(size) : new ArrayBuffer(size), chunkSize);
  }

  /** The pool's address (taken once, on the application thread: the memory never moves). */
  attach(addressOf: (bytes: Uint8Array) => number): void {
    if (this.bytes.length > 0) this.base = addressOf(this.bytes);
  }

  get available(): number {
    return this.free.length;
  }

  /** Copy `bytes` into a free chunk: its number, or -1 when every chunk is in flight. */
  copyIn(bytes: Uint8Array): number {
    const chunk = this.free.pop();
    if (chunk === undefined) return -1;
    this.bytes.set(bytes, chunk * this.chunkSize);
    return chunk;
  }

  address(chunk: number): number {
    return this.base + chunk * this.chunkSize;
  }

  release(chunk: number): void {
    this.free.push(chunk);
  }
}
