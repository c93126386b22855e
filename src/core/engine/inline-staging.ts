/**
 * Where the executor keeps an inline send's bytes while UCX holds them. The record's slot in the
 * submission ring is reused as soon as the record is consumed, but UCX may keep the address of
 * a send it could not complete at once (no send resources): so the bytes are first copied here
 * (at most INLINE_CAPACITY, one typed-array copy) and the chunk is freed when UCX is done.
 * Chunks come from arenas allocated once and reused; more arenas when many sends wait.
 */
import { INLINE_CAPACITY } from "./records.ts";

const CHUNKS_PER_ARENA = 64;

export class InlineStaging {
  private readonly arenas: Uint8Array[] = [];
  private readonly bases: number[] = [];
  /** Free chunk numbers (arena * CHUNKS_PER_ARENA + index). */
  private readonly free: number[] = [];

  constructor(private readonly addressOf: (bytes: Uint8Array) => number) {}

  /** Copy `bytes` into a free chunk; returns the chunk number. */
  stage(bytes: Uint8Array): number {
    if (this.free.length === 0) this.grow();
    const chunk = this.free.pop()!;
    this.arenas[(chunk / CHUNKS_PER_ARENA) | 0]!.set(bytes, (chunk % CHUNKS_PER_ARENA) * INLINE_CAPACITY);
    return chunk;
  }

  address(chunk: number): number {
    return this.bases[(chunk / CHUNKS_PER_ARENA) | 0]! + (chunk % CHUNKS_PER_ARENA) * INLINE_CAPACITY;
  }

  release(chunk: number): void {
    this.free.push(chunk);
  }

  private grow(): void {
    const arena = new Uint8Array(new ArrayBuffer(CHUNKS_PER_ARENA * INLINE_CAPACITY));
    const n = this.arenas.length;
    this.arenas.push(arena);
    this.bases.push(this.addressOf(arena));
    for (let i = CHUNKS_PER_ARENA - 1; i >= 0; i--) this.free.push(n * CHUNKS_PER_ARENA + i);
  }
}
