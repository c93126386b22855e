/**
 * glibc's allocator settings for the soak's processes. By default glibc's mmap threshold is
 * dynamic: each large block freed raises it (up to 32 MiB), so the soak's later payloads of up to
 * 16 MiB come from the arenas, and a thread arena's free top stays resident (malloc_trim(0) does
 * not shrink it). That made a one-off step of 7-13 MiB in RSS early in every soak, landing before
 * or after warm-up by chance, which the leak figure read as growth (docs/testing.md, Soak). With
 * both thresholds fixed at 128 KiB (glibc's default mmap threshold) large blocks are mapped and
 * unmapped one by one and the step is gone.
 *
 * The soak sets them itself, so that its figures do not depend on the user's environment:
 * mallopt() in this process (the thresholds apply to every allocation after the call), and the
 * same settings as MALLOC_*_ environment variables for the processes it starts (peers, collective
 * ranks; glibc reads them at start-up). Settings already in the environment are left as they are
 * and named in the report; `--malloc dynamic` leaves glibc's defaults.
 *
 * Thread caches: glibc keeps up to 7 freed chunks of each of 64 sizes (up to 1,032 B) per thread
 * (tcache, ~240 KiB a thread at most), outside its bins, so malloc_info counts them as in use. A
 * soak process has 13 or more threads, and with the payloads' random sizes those caches filled
 * slowly: malloc in use rose in a steady line (+3.54 MiB per 100k operations over a 40-minute
 * soak) that was no live allocation (docs/testing.md, Soak, 2026-11-27: heaptrack's live bytes
 * the same after 1,000 and 3,000 operations; flat with the caches off). `npm run soak` starts
 * Node with `GLIBC_TUNABLES=glibc.malloc.tcache_count=0` (only a process's start can set it; its
 * peers and ranks inherit it), which this module takes as its own setting, not the user's.
 */
import process from "node:process";
import { openLibc } from "../../src/ffi/index.ts";

/** mallopt parameters (glibc malloc.h). */
const M_TRIM_THRESHOLD = -1;
const M_MMAP_THRESHOLD = -3;
const THRESHOLD = 128 * 1024;

export type MallocChoice = "fixed" | "dynamic";

/** What `npm run soak` sets (package.json): no per-thread caches, so malloc in use counts only live blocks. */
export const TCACHE_OFF = "glibc.malloc.tcache_count=0";

/** Whether glibc's per-thread caches are off in this process (set at its start). */
export const tcacheOff = (): boolean => (process.env.GLIBC_TUNABLES ?? "").split(":").includes(TCACHE_OFF);

/** The allocator variables in this process's environment (MALLOC_*_ and GLIBC_TUNABLES). */
export function allocatorEnv(): string[] {
  return Object.entries(process.env)
    .filter(([k]) => /^(GLIBC_TUNABLES|MALLOC_[A-Z_]+_)$/.test(k))
    .map(([k, v]) => `${k}=${v}`);
}

/** Applies `choice` to this process and its children; returns the line the report prints. */
export function applyAllocator(choice: MallocChoice): string {
  // The soak's own tcache setting is not the user's: the thresholds are still set here.
  const inherited = allocatorEnv().filter((v) => v !== `GLIBC_TUNABLES=${TCACHE_OFF}`);
  const caches = tcacheOff()
    ? "; thread caches off (GLIBC_TUNABLES=glibc.malloc.tcache_count=0: malloc in use counts live blocks only)"
    : "; thread caches on (malloc in use also counts chunks parked in them: up to ~240 KiB a thread)";
  if (inherited.length > 0) return `glibc, from the environment: ${inherited.join(" ")}${caches}`;
  if (choice === "dynamic") return `glibc, default settings (dynamic mmap and trim thresholds)${caches}`;
  const c = openLibc();
  // mallopt returns 1 on success, 0 on error.
  if (c.mallopt(M_MMAP_THRESHOLD, THRESHOLD) !== 1 || c.mallopt(M_TRIM_THRESHOLD, THRESHOLD) !== 1) throw new Error("soak: mallopt refused the thresholds");
  process.env.MALLOC_MMAP_THRESHOLD_ = String(THRESHOLD);
  process.env.MALLOC_TRIM_THRESHOLD_ = String(THRESHOLD);
  return `glibc, mmap and trim thresholds fixed at ${THRESHOLD} B (set by the soak: mallopt here, MALLOC_MMAP_THRESHOLD_ / MALLOC_TRIM_THRESHOLD_ for its peers and ranks)${caches}`;
}
