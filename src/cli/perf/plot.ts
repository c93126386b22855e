/**
 * The SVG `ucx-ts perf --plot` draws: one small panel per test (tag_lat, tag_bw, stream_bw,
 * am_bw, put_bw: whichever ran), each against message size on log scales, one line per system
 * in that system's colour, and one legend of systems at the top. A panel holds only lines of
 * the same unit and meaning, so no line has to be told apart by its dash pattern.
 * Plain SVG 1.1, no script, no external resources.
 */
import { isLatency, TESTS, type PerfRow, type TestName } from "./tests.ts";

const COLORS = ["#1b6ac9", "#d1495b", "#2a9d8f", "#e9a23b", "#6a4c93", "#5c677d", "#00798c", "#8f2d56"];
const PW = 330; // panel width and height, axes included
const PH = 250;
const COLUMNS = 3;
const M = { left: 58, right: 14, top: 28, bottom: 40 };
const LEGEND_H = 44;

const esc = (s: string) => s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;");
const fmtSize = (s: number) => (s >= 1 << 20 ? `${s / (1 << 20)}M` : s >= 1024 ? `${s / 1024}K` : `${s}`);

interface Series {
  system: string;
  points: [number, number][];
}

function titleOf(test: TestName): string {
  return isLatency(test) ? `${test}: one-way latency, µs (lower is better)` : `${test}: bandwidth, MB/s (higher is better)`;
}

function panel(x0: number, y0: number, test: TestName, series: Series[], colorOf: (system: string) => string): string {
  const all = series.flatMap((s) => s.points);
  const lx = (v: number) => Math.log10(v);
  const [xmin, xmax] = [Math.min(...all.map((p) => lx(p[0]))), Math.max(...all.map((p) => lx(p[0])))];
  const [ymin, ymax] = [Math.floor(Math.min(...all.map((p) => lx(p[1])))), Math.ceil(Math.max(...all.map((p) => lx(p[1]))))];
  const w = PW - M.left - M.right;
  const h = PH - M.top - M.bottom;
  const sx = (v: number) => x0 + M.left + ((lx(v) - xmin) / Math.max(xmax - xmin, 1e-9)) * w;
  const sy = (v: number) => y0 + M.top + h - ((lx(v) - ymin) / Math.max(ymax - ymin, 1e-9)) * h;
  const out: string[] = [`<g data-panel="${test}">`];
  out.push(`<text x="${x0 + M.left}" y="${y0 + 16}" font-size="12" font-weight="bold">${esc(titleOf(test))}</text>`);
  out.push(`<rect x="${x0 + M.left}" y="${y0 + M.top}" width="${w}" height="${h}" fill="none" stroke="#999"/>`);
  for (let e = ymin; e <= ymax; e++) {
    const y = sy(10 ** e);
    out.push(`<line x1="${x0 + M.left}" x2="${x0 + M.left + w}" y1="${y}" y2="${y}" stroke="#eee"/>`);
    out.push(`<text x="${x0 + M.left - 5}" y="${y + 4}" font-size="10" text-anchor="end">${10 ** e >= 1 ? 10 ** e : (10 ** e).toPrecision(1)}</text>`);
  }
  const sizes = [...new Set(all.map((p) => p[0]))].sort((a, b) => a - b);
  for (const s of sizes) out.push(`<text x="${sx(s)}" y="${y0 + M.top + h + 14}" font-size="10" text-anchor="middle">${fmtSize(s)}</text>`);
  out.push(`<text x="${x0 + M.left + w / 2}" y="${y0 + PH - 8}" font-size="10" text-anchor="middle">message size (bytes)</text>`);
  for (const s of series) {
    const pts = s.points.sort((a, b) => a[0] - b[0]);
    const color = colorOf(s.system);
    out.push(`<polyline data-series="${esc(`${s.system} ${test}`)}" fill="none" stroke="${color}" stroke-width="2" points="${pts.map((p) => `${sx(p[0]).toFixed(1)},${sy(p[1]).toFixed(1)}`).join(" ")}"/>`);
    for (const p of pts) out.push(`<circle cx="${sx(p[0]).toFixed(1)}" cy="${sy(p[1]).toFixed(1)}" r="2.5" fill="${color}"/>`);
  }
  out.push(`</g>`);
  return out.join("\n");
}

function legend(systems: readonly string[], colorOf: (system: string) => string): string {
  const out = [`<g data-legend="systems">`];
  let x = 12;
  for (const system of systems) {
    out.push(`<line x1="${x}" x2="${x + 22}" y1="34" y2="34" stroke="${colorOf(system)}" stroke-width="3"/>`);
    out.push(`<text x="${x + 28}" y="38" font-size="12">${esc(system)}</text>`);
    x += 40 + system.length * 7.5;
  }
  out.push(`</g>`);
  return out.join("\n");
}

export function plotSvg(rows: readonly PerfRow[], title: string): string {
  const systems = [...new Set(rows.map((r) => r.system))];
  const colorOf = (system: string) => COLORS[systems.indexOf(system) % COLORS.length]!;
  const panels: { test: TestName; series: Series[] }[] = [];
  for (const test of TESTS) {
    const series: Series[] = [];
    for (const system of systems) {
      const points = rows
        .filter((r) => r.test === test && r.system === system)
        .map((r): [number, number] => [r.size, (isLatency(test) ? r.latencyUs : r.MBps) ?? NaN])
        .filter((p) => p[1] > 0);
      if (points.length > 0) series.push({ system, points });
    }
    if (series.length > 0) panels.push({ test, series });
  }
  const columns = Math.min(COLUMNS, Math.max(panels.length, 1));
  const rowsOfPanels = Math.ceil(panels.length / columns);
  const width = columns * PW;
  const height = LEGEND_H + rowsOfPanels * PH;
  return [
    `<?xml version="1.0" encoding="UTF-8"?>`,
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="sans-serif">`,
    `<title>${esc(title)}</title>`,
    `<rect width="100%" height="100%" fill="white"/>`,
    `<text x="12" y="16" font-size="13">${esc(title)}</text>`,
    legend(systems, colorOf),
    ...panels.map((p, i) => panel((i % columns) * PW, LEGEND_H + Math.floor(i / columns) * PH, p.test, p.series, colorOf)),
    `</svg>`,
  ].join("\n");
}
