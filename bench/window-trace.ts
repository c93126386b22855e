/**
 * Per-window evidence for the windowed rows (UCX_TS_BENCH_WINDOWS=<prefix>): each side of
 * p2p-peer.ts and ffi-floor-peer.ts marks the end of every window, and at exit writes
 * `<prefix>.<label>.<pid>.json`: for each window its end (absolute ms, comparable across the two
 * processes: performance.timeOrigin + now), and the main thread's CPU time and run-queue wait over
 * the window from /proc/thread-self/schedstat (ns on the CPU, ns runnable but waiting for one,
 * timeslices). A slow window whose wait is as long as the window itself was the scheduler's, not
 * UCX's or the engine's. Garbage collections too where the runtime reports them (Node). Off (no reads) unless the variable is set; Linux only. Reading the file
 * costs ~7 us (a pread on an fd opened once), so windows are marked, not messages.
 */
import { openSync, readSync, writeFileSync } from "node:fs";
import process from "node:process";
import { PerformanceObserver } from "node:perf_hooks";

const prefix = process.env.UCX_TS_BENCH_WINDOWS;

type Sample = [endMs: number, cpuNs: number, waitNs: number, slices: number];

/** `label` is prefixed with the runtime (node, deno, bun) in the file and the report. */
export function windowTrace(label: string) {
  const g = globalThis as { Bun?: unknown; Deno?: unknown };
  label = `${g.Bun ? "bun" : g.Deno ? "deno" : "node"}-${label}`;
  if (!prefix) return { mark: (_row: string) => {}, write: async () => {} };
  // Opened on the main thread: /proc/thread-self names this thread for the fd's lifetime.
  const fd = openSync("/proc/thread-self/schedstat", "r");
  const buf = new Uint8Array(128);
  const read = (): Sample => {
    const n = readSync(fd, buf, 0, buf.length, 0);
    const [cpu, wait, slices] = new TextDecoder().decode(buf.subarray(0, n)).trim().split(" ").map(Number) as [number, number, number];
    return [performance.timeOrigin + performance.now(), cpu, wait, slices];
  };
  const rows: Record<string, Sample[]> = {};
  // Garbage collections where the runtime reports them (Node: perf_hooks "gc" entries, each a
  // main-thread pause): [start (absolute ms), duration ms, kind].
  const gc: [number, number, number][] = [];
  try {
    new PerformanceObserver((list) => {
      for (const e of list.getEntries()) gc.push([performance.timeOrigin + e.startTime, e.duration, (e as { detail?: { kind?: number } }).detail?.kind ?? 0]);
    }).observe({ entryTypes: ["gc"] });
  } catch {
    // No gc entries in this runtime.
  }
  let last = read();
  return {
    /** A window of `row` ended now (the first mark of a row measures from the previous mark). */
    mark(row: string) {
      const now = read();
      (rows[row] ??= []).push([now[0], now[1] - last[1], now[2] - last[2], now[3] - last[3]]);
      last = now;
    },
    async write() {
      await new Promise((resolve) => setTimeout(resolve, 20)); // the observer's last entries
      writeFileSync(`${prefix}.${label}.${process.pid}.json`, JSON.stringify({ label, pid: process.pid, rows, gc }));
    },
  };
}
