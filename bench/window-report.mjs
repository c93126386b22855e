// Reads the per-window traces of one run (UCX_TS_BENCH_WINDOWS=<prefix>, bench/window-trace.ts)
// and prints, per peer pair and row: the windows' median, p90, p99 and mean (ms), the share of
// the row's time spent in slow windows (over 5x the median), and for those slow windows where
// the time went on each side: on the CPU, waiting for a CPU (run queue), or neither (asleep or
// blocked: a parked engine thread, a futex, poll()).
//   node bench/window-report.mjs <prefix>
import { readdirSync, readFileSync } from "node:fs";
import { basename, dirname, join } from "node:path";

const prefix = process.argv[2];
if (!prefix) {
  console.error("usage: node bench/window-report.mjs <prefix>");
  process.exit(2);
}
const dir = dirname(prefix);
const traces = readdirSync(dir)
  .filter((f) => f.startsWith(basename(prefix) + "."))
  .map((f) => JSON.parse(readFileSync(join(dir, f), "utf8")));
const q = (sorted, p) => sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))];
const pct = (a, b) => (b > 0 ? ((100 * a) / b).toFixed(0) + "%" : "-");

// Client traces each pair with the server that started just before it (the runner starts a
// server, then its client; pids are not ordered, so pair by the windows' times).
const clients = traces.filter((t) => t.label.endsWith("client"));
const servers = traces.filter((t) => t.label.endsWith("server"));
for (const c of clients) {
  const cWindows = Object.entries(c.rows).filter(([row]) => row !== "warm");
  const first = Math.min(...cWindows.map(([, w]) => w[0][0]));
  const last = Math.max(...cWindows.map(([, w]) => w[w.length - 1][0]));
  const server = servers.find((s) => Object.values(s.rows).some((w) => w.some(([t]) => t >= first && t <= last)));
  const serverSamples = server ? Object.values(server.rows).flat().sort((a, b) => a[0] - b[0]) : [];
  for (const [row, samples] of cWindows) {
    // Window i runs from the previous mark to this one; the first has no start here.
    const windows = [];
    for (let i = 1; i < samples.length; i++) {
      const [end, cpu, wait] = samples[i];
      const start = samples[i - 1][0];
      // The server's sample that ends nearest this window's end (its acknowledgement of it: a
      // little before the client's mark, or just after it when the server was slower to mark).
      let nearest;
      for (const x of serverSamples) if (!nearest || Math.abs(x[0] - end) < Math.abs(nearest[0] - end)) nearest = x;
      const s = nearest && Math.abs(nearest[0] - end) < (end - start) / 2 ? [nearest] : [];
      const gcIn = (list) => (list ?? []).filter(([t]) => t >= start && t < end).reduce((a, x) => a + x[1], 0);
      windows.push({
        ms: end - start,
        cpu: cpu / 1e6,
        wait: wait / 1e6,
        sCpu: s.reduce((a, x) => a + x[1], 0) / 1e6,
        sWait: s.reduce((a, x) => a + x[2], 0) / 1e6,
        gc: gcIn(c.gc),
        sGc: gcIn(server?.gc),
      });
    }
    if (windows.length === 0) continue;
    const ms = windows.map((w) => w.ms).sort((a, b) => a - b);
    const total = ms.reduce((a, b) => a + b, 0);
    const median = q(ms, 0.5);
    const slow = windows.filter((w) => w.ms > 5 * median);
    const sum = (k, list) => list.reduce((a, w) => a + w[k], 0);
    const slowMs = sum("ms", slow);
    console.log(
      `${c.label.replace("-client", "")} ${row}: ${windows.length} windows, median ${median.toFixed(3)} p90 ${q(ms, 0.9).toFixed(3)} p99 ${q(ms, 0.99).toFixed(3)} mean ${(total / windows.length).toFixed(3)} ms; ` +
        `slow (> 5x median) ${slow.length} = ${pct(slowMs, total)} of the time`,
    );
    for (const [name, list, t] of [["all", windows, total], ["slow", slow, slowMs]]) {
      if (list.length === 0) continue;
      console.log(
        `  ${name.padEnd(4)} windows: client cpu ${pct(sum("cpu", list), t)} run-queue wait ${pct(sum("wait", list), t)} gc ${pct(sum("gc", list), t)}` +
          (server ? `; server cpu ${pct(sum("sCpu", list), t)} run-queue wait ${pct(sum("sWait", list), t)} gc ${pct(sum("sGc", list), t)}` : ""),
      );
    }
  }
}
