/**
 * The SVG `ucx-ts perf --plot` draws: latency (left) and bandwidth (right) against message
 * size, log scales on both axes, one line per system and test, each labelled at its last point
 * (no legend to hunt through). Plain SVG 1.1, no script, no external resources.
 */
import { isLatency, type PerfRow } from "./tests.ts";

const COLORS = ["#1b6ac9", "#d1495b", "#2a9d8f", "#e9a23b", "#6a4c93", "#5c677d", "#00798c", "#8f2d56"];
/** One dash pattern per test, one colour per system: a line says both at a glance. */
const DASHES = ["", "6 3", "2 3", "8 3 2 3", "1 2"];
const testIndex = (series: string) => ["tag_lat", "tag_bw", "stream_bw", "am_bw", "put_bw"].indexOf(series.split(" ")[1] ?? "");
const W = 460;
const H = 340;
const M = { left: 64, right: 150, top: 36, bottom: 48 };

const esc = (s: string) => s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;");
const fmtSize = (s: number) => (s >= 1 << 20 ? `${s / (1 << 20)}M` : s >= 1024 ? `${s / 1024}K` : `${s}`);

interface Series {
  name: string;
  points: [number, number][];
}

function panel(x0: number, title: string, unit: string, series: Series[], colorOf: (name: string) => string): string {
  const all = series.flatMap((s) => s.points);
  if (all.length === 0) return "";
  const lx = (v: number) => Math.log10(v);
  const [xmin, xmax] = [Math.min(...all.map((p) => lx(p[0]))), Math.max(...all.map((p) => lx(p[0])))];
  const [ymin, ymax] = [Math.floor(Math.min(...all.map((p) => lx(p[1])))), Math.ceil(Math.max(...all.map((p) => lx(p[1]))))];
  const pw = W - M.left - M.right;
  const ph = H - M.top - M.bottom;
  const sx = (v: number) => x0 + M.left + ((lx(v) - xmin) / Math.max(xmax - xmin, 1e-9)) * pw;
  const sy = (v: number) => M.top + ph - ((lx(v) - ymin) / Math.max(ymax - ymin, 1e-9)) * ph;
  const out: string[] = [];
  out.push(`<text x="${x0 + M.left}" y="20" font-size="14" font-weight="bold">${esc(title)}</text>`);
  out.push(`<rect x="${x0 + M.left}" y="${M.top}" width="${pw}" height="${ph}" fill="none" stroke="#999"/>`);
  for (let e = ymin; e <= ymax; e++) {
    const y = sy(10 ** e);
    out.push(`<line x1="${x0 + M.left}" x2="${x0 + M.left + pw}" y1="${y}" y2="${y}" stroke="#eee"/>`);
    out.push(`<text x="${x0 + M.left - 6}" y="${y + 4}" font-size="11" text-anchor="end">${10 ** e >= 1 ? 10 ** e : (10 ** e).toPrecision(1)}</text>`);
  }
  const sizes = [...new Set(all.map((p) => p[0]))].sort((a, b) => a - b);
  for (const s of sizes) out.push(`<text x="${sx(s)}" y="${M.top + ph + 16}" font-size="11" text-anchor="middle">${fmtSize(s)}</text>`);
  out.push(`<text x="${x0 + M.left + pw / 2}" y="${H - 10}" font-size="12" text-anchor="middle">message size (bytes)</text>`);
  out.push(`<text x="${x0 + 14}" y="${M.top + ph / 2}" font-size="12" text-anchor="middle" transform="rotate(-90 ${x0 + 14} ${M.top + ph / 2})">${esc(unit)}</text>`);
  const labels: { x: number; y: number; name: string; color: string }[] = [];
  for (const s of series) {
    const pts = s.points.sort((a, b) => a[0] - b[0]);
    const color = colorOf(s.name);
    const dash = DASHES[testIndex(s.name) % DASHES.length];
    out.push(`<polyline data-series="${esc(s.name)}" fill="none" stroke="${color}" stroke-width="2"${dash ? ` stroke-dasharray="${dash}"` : ""} points="${pts.map((p) => `${sx(p[0]).toFixed(1)},${sy(p[1]).toFixed(1)}`).join(" ")}"/>`);
    for (const p of pts) out.push(`<circle cx="${sx(p[0]).toFixed(1)}" cy="${sy(p[1]).toFixed(1)}" r="2.5" fill="${color}"/>`);
    const last = pts[pts.length - 1]!;
    labels.push({ x: sx(last[0]) + 6, y: sy(last[1]) + 4, name: s.name, color });
  }
  // Labels at the lines' ends, pushed apart so that none overlaps another.
  labels.sort((a, b) => a.y - b.y);
  for (let i = 1; i < labels.length; i++) labels[i]!.y = Math.max(labels[i]!.y, labels[i - 1]!.y + 12);
  for (const l of labels) out.push(`<text x="${l.x.toFixed(1)}" y="${l.y.toFixed(1)}" font-size="11" fill="${l.color}">${esc(l.name)}</text>`);
  return out.join("\n");
}

export function plotSvg(rows: readonly PerfRow[], title: string): string {
  const group = (lat: boolean): Series[] => {
    const map = new Map<string, [number, number][]>();
    for (const r of rows) {
      if (isLatency(r.test) !== lat) continue;
      const v = lat ? r.latencyUs : r.MBps;
      if (v === undefined || !(v > 0)) continue;
      const name = `${r.system} ${r.test}`;
      if (!map.has(name)) map.set(name, []);
      map.get(name)!.push([r.size, v]);
    }
    return [...map].map(([name, points]) => ({ name, points }));
  };
  const names = [...new Set(rows.map((r) => r.system))];
  const colorOf = (series: string) => COLORS[names.indexOf(series.split(" ")[0]!) % COLORS.length]!;
  return [
    `<?xml version="1.0" encoding="UTF-8"?>`,
    `<svg xmlns="http://www.w3.org/2000/svg" width="${2 * W}" height="${H + 24}" viewBox="0 0 ${2 * W} ${H + 24}" font-family="sans-serif">`,
    `<title>${esc(title)}</title>`,
    `<rect width="100%" height="100%" fill="white"/>`,
    `<g transform="translate(0 24)">`,
    panel(0, "latency (one way, µs; lower is better)", "µs", group(true), colorOf),
    panel(W, "bandwidth (MB/s; higher is better)", "MB/s", group(false), colorOf),
    `</g>`,
    `<text x="8" y="16" font-size="13">${esc(title)}</text>`,
    `</svg>`,
  ].join("\n");
}
