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

/** Columns whose cells are numbers are right-aligned, the others left-aligned. */
function pad(cells: string[], widths: number[], right: readonly boolean[]): string {
  return cells.map((c, i) => (right[i] ? c.padStart(widths[i]!) : c.padEnd(widths[i]!))).join("  ").trimEnd();
}

/** A cost line with its two numbers right-aligned, for tables: "  2.00 us +  0.100 ns/B". */
export function formatCostAligned(cost: Cost): string {
  return `${cost.c.toFixed(2).padStart(7)} us + ${(cost.m * 1000).toFixed(3).padStart(7)} ns/B`;
}

export function formatProtoInfo(selector: ProtocolSelector): string {
  const lines: string[] = [];
  const used = new Set(selector.describe().flatMap((r) => r.candidates.map((c) => c.source)));
  const sources = [...used].map((s) => (s === "calibration" ? `calibration ${selector.calibrationPath}` : s === "default" ? "built-in defaults" : "configuration"));
  lines.push(`ucx-ts protocol selection: progress mode ${selector.mode}, costs from ${sources.join(" and ")}`);
  for (const r of selector.describe()) {
    lines.push("", `${r.operation} on ${r.bufferType}`);
    // from/to of the size range and of the time: an open-ended range ends at "max" in both.
    const rows = [["size from", "", "to", "protocol", "time from", "", "to", "bandwidth", "cost line"]];
    const right = [true, false, true, false, true, false, true, true, false];
    let from = 0;
    for (const e of r.table) {
      const to = e.maxSize;
      const open = to >= MAX_SIZE;
      const timeTo = open ? "max" : formatTime(timeAt(e.cost, to));
      // Bandwidth at the range's end; for an open range, the line's limit (1 / slope).
      const bandwidth = open ? bandwidthAt(e.cost, 2 ** 50) : bandwidthAt(e.cost, to);
      rows.push([formatSize(from), "..", formatSize(to), e.forced ? `${e.protocol} (forced)` : e.protocol, formatTime(timeAt(e.cost, from)), "..", timeTo, formatBandwidth(bandwidth), formatCostAligned(e.cost)]);
      from = to + 1;
    }
    const widths = rows[0]!.map((_, i) => Math.max(...rows.map((row) => row[i]!.length)));
    for (const row of rows) lines.push(`  ${pad(row, widths, right)}`);
    const unused = r.candidates.filter((c) => !r.table.some((e) => e.protocol === c.protocol));
    for (const c of unused) {
      lines.push(`  (${c.protocol}: ${formatSize(c.minSize)} .. ${formatSize(c.maxSize)}, ${formatCost(c.cost)} [${c.source}], wins nowhere)`);
    }
    const sources = r.candidates.map((c) => `${c.protocol}=${c.source}`).join(", ");
    lines.push(`  costs: ${sources}`);
  }
  return lines.join("\n") + "\n";
}
