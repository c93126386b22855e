/**
 * glibc's per-thread caches without UCX or ucx-ts: bare Node makes and drops random-size
 * Uint8Arrays (0-4 KiB, the soak's small band), and every 1,000 pairs reads malloc in use after
 * a full GC and malloc_trim (samples.ts). With the caches on, freed chunks of up to 1,032 B that
 * land in a thread's cache (up to 7 of each of 64 sizes; V8 frees array buffers on its own
 * threads too) stay counted as in use; with GLIBC_TUNABLES=glibc.malloc.tcache_count=0 they go
 * back to malloc's bins. Prints KiB in use at each reading (allocator.ts says why it matters).
 *
 *   node --expose-gc --import tsx scripts/soak/tcache-fill.ts [pairs=30000]
 */
import process from "node:process";
import { openLibc } from "../../src/ffi/index.ts";
import { mallocInUse } from "./samples.ts";
import { seededRandom } from "./random.ts";

const c = openLibc();
const rand = seededRandom(64);
const keep: Uint8Array[] = [];
const readings: string[] = [];
const gc = (globalThis as { gc?: () => void }).gc;
if (!gc) throw new Error("run with --expose-gc");
for (let i = 1; i <= Number(process.argv[2] ?? 30000); i++) {
  keep.push(new Uint8Array(Math.floor(rand() * 4096)), new Uint8Array(Math.floor(rand() * 4096)));
  if (keep.length > 8) keep.splice(0, 2);
  if (i % 1000 === 0) {
    await new Promise((r) => setTimeout(r, 20));
    gc();
    await new Promise((r) => setTimeout(r, 20)); // V8 frees array buffers after the GC, on its threads
    c.malloc_trim(0);
    readings.push(`${i}:${Math.round(mallocInUse(c) / 1024)}`);
  }
}
console.log(`${process.env.GLIBC_TUNABLES ?? "thread caches on"}: KiB in use at pairs made ${readings.join(" ")}`);
