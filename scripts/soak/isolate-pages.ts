/**
 * Which JS heaps this process's resident memory belongs to. A Node process of the soak runs
 * several V8 isolates, each with a heap of its own: the main thread's, a thread-mode worker's
 * progress thread (node:worker_threads) and, under `--import tsx`, module-loader threads. Only
 * the main one is what `node:v8` and `process.memoryUsage()` describe; the others' pages are
 * plain 256 KiB anonymous mappings to /proc, and a global `gc()` does not collect them. The
 * full-mix soak's RSS growth (2026-11-26, +7.75 MiB per 100k ops in 256 KiB mappings) lay in
 * the progress thread's heap: garbage V8 had not yet collected there (heap snapshots of that
 * thread, each a full GC, gave the pages back and showed no live object growing), so the report
 * needs that heap apart from the main one and from native memory.
 *
 * How: every V8 heap page (a "memory chunk", 256 KiB on Node 20, larger for large objects) is
 * aligned to 256 KiB and starts with a header whose first word is the chunk's size and whose
 * third is its isolate's `Heap*` (V8 11.x, Node 20's `BasicMemoryChunk`). Reading those words
 * at each 256 KiB boundary of the anonymous writable mappings (/proc/self/mem, which also reads
 * what is not yet touched without making it resident) groups the chunks by isolate, and
 * /proc/self/pagemap says how much of each is resident. The grouping is checked before it is
 * believed: the main isolate must be the group whose pages match what `node:v8` says the main
 * heap has committed; where none does (another V8 layout: Deno's newer V8) or where /proc cannot
 * be read, nothing is reported. Bun (JavaScriptCore) is skipped.
 */
import { closeSync, openSync, readFileSync, readSync } from "node:fs";
import process from "node:process";
import v8 from "node:v8";
import { runtime } from "../../src/ffi/index.ts";

const CHUNK = 256 * 1024;
const PAGE = 4096;

export interface IsolatePages {
  /** Resident MiB of the main isolate's pages (normal and large). */
  mainMiB: number;
  /** Resident MiB of every other isolate's pages together (progress thread, loader threads). */
  othersMiB: number;
  /** How many other isolates hold pages. */
  others: number;
}

interface Chunk {
  address: number;
  size: number;
  heap: bigint;
}

function anonymousWritable(): [number, number][] {
  const out: [number, number][] = [];
  for (const line of readFileSync("/proc/self/maps", "utf8").split("\n")) {
    const m = /^([0-9a-f]+)-([0-9a-f]+) rw\S+ \S+ \S+ 0\s*$/.exec(line);
    if (m) out.push([parseInt(m[1]!, 16), parseInt(m[2]!, 16)]);
  }
  return out;
}

function chunks(mem: number): Chunk[] {
  const found: Chunk[] = [];
  const header = Buffer.alloc(24);
  for (const [start, end] of anonymousWritable()) {
    for (let a = Math.ceil(start / CHUNK) * CHUNK; a + header.length <= end; a += CHUNK) {
      try {
        if (readSync(mem, header, 0, header.length, a) !== header.length) continue;
      } catch {
        continue;
      }
      const size = header.readBigUInt64LE(0);
      const heap = header.readBigUInt64LE(16);
      if (size >= BigInt(CHUNK) && size < 1n << 32n && size % BigInt(PAGE) === 0n && heap !== 0n) found.push({ address: a, size: Number(size), heap });
    }
  }
  return found;
}

function residentBytes(pagemap: number, c: Chunk, buf: Buffer): number {
  const pages = c.size / PAGE;
  const b = buf.length >= pages * 8 ? buf : Buffer.alloc(pages * 8);
  if (readSync(pagemap, b, 0, pages * 8, (c.address / PAGE) * 8) !== pages * 8) return 0;
  let n = 0;
  for (let i = 0; i < pages; i++) if ((b[i * 8 + 7]! & 0x80) !== 0) n++; // bit 63: present
  return n * PAGE;
}

/** The main isolate's committed normal pages, per node:v8 (large-object spaces apart). */
function mainCommittedNormal(): number {
  return v8
    .getHeapSpaceStatistics()
    .filter((s) => !/large_object|read_only/.test(s.space_name))
    .reduce((sum, s) => sum + s.space_size, 0);
}

/** Resident memory of the main isolate's heap and of the other isolates' heaps; undefined where it cannot be told. */
export function isolatePages(): IsolatePages | undefined {
  if (runtime === "bun" || process.platform !== "linux") return undefined;
  let mem: number | undefined;
  let pagemap: number | undefined;
  try {
    mem = openSync("/proc/self/mem", "r");
    pagemap = openSync("/proc/self/pagemap", "r");
    const byHeap = new Map<bigint, Chunk[]>();
    for (const c of chunks(mem)) byHeap.set(c.heap, [...(byHeap.get(c.heap) ?? []), c]);
    // The main isolate: the group whose normal pages come closest to what node:v8 says is committed,
    // and within a quarter of it (or 1 MiB); else the layout is not the one assumed here.
    const committed = mainCommittedNormal();
    let main: bigint | undefined;
    let best = Infinity;
    for (const [heap, cs] of byHeap) {
      const normal = cs.filter((c) => c.size === CHUNK).length * CHUNK;
      const off = Math.abs(normal - committed);
      if (off < best) [best, main] = [off, heap];
    }
    if (main === undefined || best > Math.max(committed / 4, 2 ** 20)) return undefined;
    const buf = Buffer.alloc((CHUNK / PAGE) * 8);
    let mainBytes = 0;
    let othersBytes = 0;
    let others = 0;
    for (const [heap, cs] of byHeap) {
      // A lone chunk-like header elsewhere is not an isolate: a heap has several pages.
      if (heap !== main && cs.length < 4) continue;
      const bytes = cs.reduce((s, c) => s + residentBytes(pagemap!, c, buf), 0);
      if (heap === main) mainBytes = bytes;
      else {
        othersBytes += bytes;
        others++;
      }
    }
    return { mainMiB: mainBytes / 2 ** 20, othersMiB: othersBytes / 2 ** 20, others };
  } catch {
    return undefined;
  } finally {
    if (mem !== undefined) closeSync(mem);
    if (pagemap !== undefined) closeSync(pagemap);
  }
}
