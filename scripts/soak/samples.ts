/**
 * Resource samples over a soak: RSS and open file descriptors of this process, against the
 * operations done so far, and their growth per 100k operations after warm-up (least-squares
 * slope, so one GC's timing does not decide it). UCX's own memory statistics (ucs memtrack) are
 * not built into Debian's libucx0 1.13 (no --enable-memtrack), so they are not sampled here.
 */
import { appendFileSync, readdirSync, readFileSync } from "node:fs";
import process from "node:process";
import v8 from "node:v8";
import { openLibc, runtime, type Libc } from "../../src/ffi/index.ts";
import { leastSquares } from "./regression.ts";
import { isolatePages } from "./isolate-pages.ts";

export interface Sample {
  seconds: number;
  ops: number;
  rssMiB: number;
  /**
   * RSS again right after `malloc_trim(0)`: glibc gives back the free memory it kept (the top of
   * each heap and whole free pages inside them). What trimming removes was retained by the
   * allocator, not in use; a leak shows here too.
   */
  trimmedRssMiB: number;
  /**
   * Bytes malloc has handed out and not had back (glibc's malloc_info after the trim: memory its
   * arenas took from the system less their free chunks, plus its mmapped blocks): UCX's and the
   * runtime's native allocations. A leak of malloc'd memory grows it; free memory glibc keeps,
   * fragmentation and memory mapped outside malloc (the JS heap's pages, UCX's own mmaps) do not.
   * -1 where it cannot be read.
   */
  mallocInUseMiB: number;
  /** The JS heap in use, and ArrayBuffer memory outside it: what of RSS the runtime accounts for. */
  heapMiB: number;
  arrayBuffersMiB: number;
  /**
   * The JS engine's heap pages that are resident but hold no live object (V8's physical heap size
   * less its used size): the young generation's semi-spaces and the old spaces' free pages, which
   * V8 grows and gives back by its own heuristics, by up to ~30 MiB on Node 20 (two semi-spaces of
   * up to 16 MiB each) whatever the application does. 0 where the runtime does not say (Bun's
   * JavaScriptCore has no such split).
   */
  v8FreeMiB: number;
  /** RSS after the trim less `v8FreeMiB`: what a leak of native or live JS memory grows. */
  rssLessV8FreeMiB: number;
  fds: number;
}

export function openFds(): number {
  try {
    return readdirSync("/proc/self/fd").length;
  } catch {
    return -1;
  }
}

/**
 * A full GC first where the runtime exposes one (`npm run soak` runs Node with --expose-gc; Bun
 * has Bun.gc): payloads of up to 16 MiB that are garbage but not yet collected made RSS swing by
 * tens of MiB between samples, which a ten-minute slope could not tell from growth. Garbage
 * left uncollected is not a leak; what a GC cannot free still shows.
 */
function collect(): void {
  const g = globalThis as { gc?: () => void; Bun?: { gc(full: boolean): void } };
  g.gc?.();
  g.Bun?.gc(true);
}

let libc: Libc | undefined;

/**
 * V8's resident-but-unused heap in bytes: `total_physical_size` (the pages each space has touched,
 * from-space included) less `used_heap_size`. 0 under Bun (its node:v8 gives JavaScriptCore
 * figures in which the "physical size" is a peak of malloc'd memory, 27 MiB against 0.26 MiB used in
 * an empty process) or where node:v8 cannot say.
 */
export function v8FreeBytes(): number {
  if (runtime === "bun") return 0;
  try {
    const h = v8.getHeapStatistics();
    const free = h.total_physical_size - h.used_heap_size;
    return Number.isFinite(free) && free > 0 && h.total_physical_size > 0 ? free : 0;
  } catch {
    return 0;
  }
}

/**
 * The size V8 gives its young generation now (new space, both semi-spaces), MiB; undefined under
 * Bun (JavaScriptCore has no semi-spaces) or where node:v8 cannot say. V8 grows it from 1 to 16
 * MiB a semi-space under allocation and shrinks it when allocation slows: the soak's at-rest RSS
 * moved by 10-20 MiB with it (2026-11-26), which `npm run soak` prevents by fixing it
 * (`--min-semi-space-size=1 --max-semi-space-size=1`); the report shows it at the first and last
 * reading.
 */
export function newSpaceMiB(): number | undefined {
  if (runtime === "bun") return undefined;
  try {
    const s = v8.getHeapSpaceStatistics().find((x) => x.space_name === "new_space");
    return s ? round(s.space_size / 2 ** 20) : undefined;
  } catch {
    return undefined;
  }
}

export function sample(started: number, ops: number): Sample {
  collect();
  const m = process.memoryUsage();
  (libc ??= openLibc()).malloc_trim(0);
  const trimmedRssMiB = process.memoryUsage.rss() / 2 ** 20;
  const v8FreeMiB = v8FreeBytes() / 2 ** 20;
  const mallocInUseMiB = mallocInUse(libc) / 2 ** 20;
  return {
    seconds: (Date.now() - started) / 1000,
    ops,
    rssMiB: m.rss / 2 ** 20,
    trimmedRssMiB,
    mallocInUseMiB,
    heapMiB: m.heapUsed / 2 ** 20,
    arrayBuffersMiB: m.arrayBuffers / 2 ** 20,
    v8FreeMiB,
    rssLessV8FreeMiB: trimmedRssMiB - v8FreeMiB,
    fds: openFds(),
  };
}

/**
 * A reading for a leak figure: `sample` three times, keeping each figure's least. With nothing of
 * its own in flight a process still showed, at a quarter of its readings, 3-42 MiB more RSS after
 * trim and malloc in use than at the readings before and after (soak and worker cycles alike,
 * 2026-11-26): memory another thread held for a moment. A leak stays in all three readings; such a
 * moment rarely spans them. `pause` runs between them (the soak lets 50 ms pass; the worker cycles,
 * which must not yield, pass nothing).
 */
export async function leastOfThree(started: number, ops: number, pause: () => Promise<void> | void = () => {}): Promise<Sample> {
  const readings: Sample[] = [];
  for (let i = 0; i < 3; i++) {
    if (i > 0) await pause();
    readings.push(sample(started, ops));
  }
  const last = readings[readings.length - 1]!;
  const least = (k: "trimmedRssMiB" | "mallocInUseMiB" | "rssLessV8FreeMiB" | "fds") => Math.min(...readings.map((r) => r[k]));
  return { ...last, trimmedRssMiB: least("trimmedRssMiB"), mallocInUseMiB: least("mallocInUseMiB"), rssLessV8FreeMiB: least("rssLessV8FreeMiB"), fds: least("fds") };
}

/**
 * malloc's bytes in use, from glibc's `malloc_info` XML written into an in-memory file: the
 * totals after the per-arena sections are `<total type="fast|rest|mmap" size=...>` (free chunks
 * in fast bins, free chunks elsewhere including each arena's top, mmapped blocks) and
 * `<system type="current" size=...>` (what the arenas took from the system). -1 if unreadable.
 */
export function mallocInUse(c: Libc): number {
  const fd = c.memfd_create("ucx-ts-malloc-info", 0);
  if (fd < 0) return -1;
  try {
    const writeFd = c.dup(fd); // fclose closes the stream's descriptor; ours stays open to read
    const file = c.fdopen(writeFd, "w");
    if (file === 0) {
      c.close(writeFd);
      return -1;
    }
    c.malloc_info(0, file);
    c.fclose(file);
    const xml = readFileSync(`/proc/self/fd/${fd}`, "utf8");
    // SOAK_MALLOC_XML=FILE: every reading's XML appended to FILE, to tell which arena (thread) moved.
    if (process.env.SOAK_MALLOC_XML) appendFileSync(process.env.SOAK_MALLOC_XML, xml + "\n<!-- reading -->\n");
    return parseMallocInfo(xml);
  } finally {
    c.close(fd);
  }
}

export function parseMallocInfo(xml: string): number {
  const total = (type: string) => Number(new RegExp(`<total type="${type}" count="\\d+" size="(\\d+)"/>\\s*(?:<total|<system)`).exec(xml.slice(xml.lastIndexOf("</heap>")))?.[1] ?? NaN);
  const system = Number(/<system type="current" size="(\d+)"\/>\s*<system type="max"[^>]*>\s*<aspace type="total"/.exec(xml.slice(xml.lastIndexOf("</heap>")))?.[1] ?? NaN);
  const inUse = system - total("fast") - total("rest") + total("mmap");
  return Number.isFinite(inUse) ? inUse : -1;
}

/**
 * Where this process's resident memory lies, by kind of mapping (MiB, from /proc/self/smaps):
 * `brk` (malloc's main heap), `anonymous` (the JS heap's pages, malloc's other arenas and large
 * blocks, UCX's own mmaps, thread stacks), `shared` (/dev/shm and SysV segments: UCX's
 * shared-memory transports), `files` (the runtime's binary, libraries). Read at the at-rest
 * points, to say which kind moved when RSS did. Empty where smaps cannot be read.
 */
export function rssByMapping(): Record<string, number> {
  const kib: Record<string, number> = { brk: 0, anonymous: 0, shared: 0, files: 0, anonymous256KiB: 0 };
  for (const m of mappings()) {
    kib[m.kind]! += m.rssKiB;
    // Of the anonymous memory, the mappings of exactly 256 KiB: the size of a V8 heap page on
    // Node 20 (a page is mapped on its own; neighbours with the same protection merge, so not all
    // of them), of every isolate in the process: the main thread's and the other threads' heaps
    // (v8Pages.* below tells them apart). Which allocator's memory moved: V8's pages, or malloc's
    // arenas and UCX's mmaps.
    if (m.kind === "anonymous" && m.sizeKiB === 256) kib.anonymous256KiB! += m.rssKiB;
  }
  const out = Object.fromEntries(Object.entries(kib).map(([k, v]) => [k, round(v / 1024)]));
  // Of the anonymous memory, the pages the JS engine has committed for its heap (used or not).
  out.jsHeapCommitted = round(process.memoryUsage().heapTotal / 2 ** 20);
  Object.assign(out, v8SpacesMiB());
  // Resident pages of the main thread's JS heap and of the other threads' (a thread-mode
  // worker's progress thread, tsx's loader threads): isolate-pages.ts. Absent where not told.
  const pages = isolatePages();
  if (pages) {
    out["v8Pages.main"] = round(pages.mainMiB);
    out["v8Pages.otherThreads"] = round(pages.othersMiB);
  }
  return out;
}

/**
 * V8's committed memory by space (MiB; `v8.getHeapSpaceStatistics().space_size`), the spaces that
 * hold anything: `v8.old`, `v8.code`, `v8.new`, `v8.lo` (large objects: each in a mapping of its
 * own size) and so on. Which of V8's spaces the JS heap's committed pages grew in. None under Bun.
 */
export function v8SpacesMiB(): Record<string, number> {
  if (runtime === "bun") return {};
  try {
    const short: Record<string, string> = { new_space: "new", old_space: "old", code_space: "code", map_space: "map", large_object_space: "lo", new_large_object_space: "newLo", code_large_object_space: "codeLo" };
    return Object.fromEntries(
      v8
        .getHeapSpaceStatistics()
        .filter((s) => short[s.space_name] !== undefined)
        .map((s) => [`v8.${short[s.space_name]}`, round(s.space_size / 2 ** 20)]),
    );
  } catch {
    return {};
  }
}

/** Lines of /proc/self/maps (mappings) and entries of /proc/self/task (OS threads); -1 if unreadable. */
export function mapCount(): number {
  try {
    return readFileSync("/proc/self/maps", "utf8").trim().split("\n").length;
  } catch {
    return -1;
  }
}

export function threadCount(): number {
  try {
    return readdirSync("/proc/self/task").length;
  } catch {
    return -1;
  }
}

export interface Mapping {
  start: string;
  sizeKiB: number;
  rssKiB: number;
  kind: "brk" | "anonymous" | "shared" | "files";
}

/** This process's mappings with their resident size (/proc/self/smaps); none if unreadable. */
export function mappings(): Mapping[] {
  const out: Mapping[] = [];
  let text: string;
  try {
    text = readFileSync("/proc/self/smaps", "utf8");
  } catch {
    return out;
  }
  for (const line of text.split("\n")) {
    const header = /^([0-9a-f]+)-([0-9a-f]+) \S+ \S+ \S+ \S+\s*(.*)$/.exec(line);
    if (header) {
      const name = header[3]!;
      const kind = name === "[heap]" ? "brk" : name === "" || name.startsWith("[") ? "anonymous" : name.startsWith("/dev/shm") || name.startsWith("/SYSV") ? "shared" : "files";
      out.push({ start: header[1]!, sizeKiB: (parseInt(header[2]!, 16) - parseInt(header[1]!, 16)) / 1024, rssKiB: 0, kind });
      continue;
    }
    const rss = /^Rss:\s+(\d+) kB/.exec(line);
    if (rss && out.length > 0) out[out.length - 1]!.rssKiB = Number(rss[1]);
  }
  // The engine keeps the subject of the last successful match (RegExp.input): a line of `text`,
  // a slice that holds all ~300 KiB of it alive in the heap this reads until the next reading
  // (heap snapshot of a wound-down soak, 2026-11-27: the largest new object, 320 KB, held so).
  // A match on an empty string lets it go.
  /^/.exec("");
  return out;
}

/**
 * The anonymous mappings whose resident size grew most from `before` to `after` (by start
 * address; a mapping that is new counts whole): which allocator holds the memory RSS gained
 * (glibc's thread arenas are 64 MiB mappings, the JS engine's pages 256 KiB multiples).
 */
export function anonymousGrowth(before: readonly Mapping[], after: readonly Mapping[], top = 5): string[] {
  const was = new Map(before.filter((m) => m.kind === "anonymous").map((m) => [m.start, m.rssKiB]));
  return after
    .filter((m) => m.kind === "anonymous")
    .map((m) => ({ m, grew: m.rssKiB - (was.get(m.start) ?? 0) }))
    .filter((g) => g.grew >= 256)
    .sort((a, b) => b.grew - a.grew)
    .slice(0, top)
    .map((g) => `${g.m.start} (${round(g.m.sizeKiB / 1024)} MiB mapped${was.has(g.m.start) ? "" : ", new"}) +${round(g.grew / 1024)} MiB`);
}

/** Slope of y over x by least squares; 0 with fewer than two distinct x. */
export function slope(points: readonly [number, number][]): number {
  return leastSquares(points)?.slope ?? 0;
}

export interface Growth {
  /** Samples after warm-up used. */
  samples: number;
  opsAfterWarmup: number;
  rssMiBPer100kOps: number;
  trimmedRssMiBPer100kOps: number;
  mallocInUseMiBPer100kOps: number;
  heapMiBPer100kOps: number;
  arrayBuffersMiBPer100kOps: number;
  fdsPer100kOps: number;
  rssMiB: { first: number; last: number; max: number };
  trimmedRssMiB: { first: number; last: number; max: number };
  mallocInUseMiB: { first: number; last: number; max: number };
  fds: { first: number; last: number; max: number };
}

/** Growth over the samples after the first `warmupFraction` of the run. */
export function growth(samples: readonly Sample[], warmupFraction: number): Growth {
  const end = samples[samples.length - 1]?.seconds ?? 0;
  const after = samples.filter((s) => s.seconds >= end * warmupFraction);
  const ops = after.length ? after[after.length - 1]!.ops - after[0]!.ops : 0;
  const stat = (k: "rssMiB" | "trimmedRssMiB" | "mallocInUseMiB" | "fds") => ({
    first: round(after[0]?.[k] ?? 0),
    last: round(after[after.length - 1]?.[k] ?? 0),
    max: round(Math.max(...after.map((s) => s[k]))),
  });
  return {
    samples: after.length,
    opsAfterWarmup: ops,
    rssMiBPer100kOps: round(slope(after.map((s) => [s.ops, s.rssMiB])) * 100_000),
    trimmedRssMiBPer100kOps: round(slope(after.map((s) => [s.ops, s.trimmedRssMiB])) * 100_000),
    mallocInUseMiBPer100kOps: round(slope(after.map((s) => [s.ops, s.mallocInUseMiB])) * 100_000),
    heapMiBPer100kOps: round(slope(after.map((s) => [s.ops, s.heapMiB])) * 100_000),
    arrayBuffersMiBPer100kOps: round(slope(after.map((s) => [s.ops, s.arrayBuffersMiB])) * 100_000),
    fdsPer100kOps: round(slope(after.map((s) => [s.ops, s.fds])) * 100_000),
    rssMiB: stat("rssMiB"),
    trimmedRssMiB: stat("trimmedRssMiB"),
    mallocInUseMiB: stat("mallocInUseMiB"),
    fds: stat("fds"),
  };
}

export const round = (x: number) => Math.round(x * 100) / 100;

const SAMPLE_FIELDS = ["seconds", "ops", "rssMiB", "trimmedRssMiB", "mallocInUseMiB", "heapMiB", "arrayBuffersMiB", "v8FreeMiB", "rssLessV8FreeMiB", "fds"] as const satisfies readonly (keyof Sample)[];

/**
 * A soak's samples, kept in one array of doubles allocated up front (grown by doubling only if a
 * run takes more than it was sized for) rather than as an object each: the soak's records live in
 * the heap it measures, and a Sample object with its boxed numbers is ~240 B of JS heap that
 * stays (heap snapshots, 2026-11-27: the soak's samples and at-rest records were ~0.3-0.6 MiB
 * per 100k operations of the at-rest JS heap line, the only non-V8 objects that grew).
 */
export class SampleLog {
  private data: Float64Array;
  private n = 0;

  constructor(capacity: number) {
    this.data = new Float64Array(Math.max(1, Math.ceil(capacity)) * SAMPLE_FIELDS.length);
  }

  get length(): number {
    return this.n;
  }

  push(s: Sample): void {
    const w = SAMPLE_FIELDS.length;
    if ((this.n + 1) * w > this.data.length) {
      const more = new Float64Array(this.data.length * 2);
      more.set(this.data);
      this.data = more;
    }
    for (let f = 0; f < w; f++) this.data[this.n * w + f] = s[SAMPLE_FIELDS[f]!];
    this.n++;
  }

  /** The samples as objects, for the report (once the readings are done). */
  toArray(): Sample[] {
    const w = SAMPLE_FIELDS.length;
    return Array.from({ length: this.n }, (_, i) => Object.fromEntries(SAMPLE_FIELDS.map((k, f) => [k, this.data[i * w + f]!])) as unknown as Sample);
  }
}
