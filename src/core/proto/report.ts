/**
 * `proto-info`: the selection tables as text, the way UCX_PROTO_INFO=y prints UCX's: per
 * operation and buffer type, each size range with the protocol chosen, its estimated time and
 * bandwidth at both ends of the range, and where its cost line came from.
 */
import { bandwidthAt, timeAt, type Cost } from "./cost.ts";
import type { ProtocolSelector } from "./selector.ts";
import { MAX_SIZE } from "./selection.ts";

export function formatSize(n: number): string {
  if (n >= MAX_SIZE) return "max";
  for (const [unit, k] of [["GiB", 2 ** 30], ["MiB", 2 ** 20], ["KiB", 2 ** 10]] as const) {
    if (n >= k && n % k === 0) return `${n / k} ${unit}`;
  }
  return `${n} B`;
}

function formatTime(us: number): string {
  if (us >= 1e6) return `${(us / 1e6).toFixed(2)} s`;
  if (us >= 1e3) return `${(us / 1e3).toFixed(2)} ms`;
  return `${us.toFixed(2)} us`;
}

function formatBandwidth(mbps: number): string {
  if (!Number.isFinite(mbps)) return "-";
  return mbps >= 1000 ? `${(mbps / 1000).toFixed(2)} GB/s` : `${mbps.toFixed(1)} MB/s`;
}

/** A cost line as text: "2.00 us + 0.100 ns/B" (m in nanoseconds per byte reads better). */
export function formatCost(cost: Cost): string {
  return `${cost.c.toFixed(2)} us + ${(cost.m * 1000).toFixed(3)} ns/B`;
}

function pad(cells: string[], widths: number[]): string {
  return cells.map((c, i) => c.padEnd(widths[i]!)).join("  ").trimEnd();
}

export function formatProtoInfo(selector: ProtocolSelector): string {
  const lines: string[] = [];
  const used = new Set(selector.describe().flatMap((r) => r.candidates.map((c) => c.source)));
  const sources = [...used].map((s) => (s === "calibration" ? `calibration ${selector.calibrationPath}` : s === "default" ? "built-in defaults" : "configuration"));
  lines.push(`ucx-ts protocol selection: progress mode ${selector.mode}, costs from ${sources.join(" and ")}`);
  for (const r of selector.describe()) {
    lines.push("", `${r.operation} on ${r.bufferType}`);
    const rows = [["size range", "protocol", "time", "bandwidth", "cost line"]];
    let from = 0;
    for (const e of r.table) {
      const to = e.maxSize;
      const sizes = `${formatSize(from)} .. ${formatSize(to)}`;
      const end = Math.min(to, 2 ** 40); // the open end: show a 1 TiB message's figures
      const time = from === end ? formatTime(timeAt(e.cost, from)) : `${formatTime(timeAt(e.cost, from))} .. ${formatTime(timeAt(e.cost, end))}`;
      rows.push([sizes, e.forced ? `${e.protocol} (forced)` : e.protocol, time, formatBandwidth(bandwidthAt(e.cost, end)), formatCost(e.cost)]);
      from = to + 1;
    }
    const widths = rows[0]!.map((_, i) => Math.max(...rows.map((row) => row[i]!.length)));
    for (const row of rows) lines.push(`  ${pad(row, widths)}`);
    const unused = r.candidates.filter((c) => !r.table.some((e) => e.protocol === c.protocol));
    for (const c of unused) {
      lines.push(`  (${c.protocol}: ${formatSize(c.minSize)} .. ${formatSize(c.maxSize)}, ${formatCost(c.cost)} [${c.source}], wins nowhere)`);
    }
    const sources = r.candidates.map((c) => `${c.protocol}=${c.source}`).join(", ");
    lines.push(`  costs: ${sources}`);
  }
  return lines.join("\n") + "\n";
}
