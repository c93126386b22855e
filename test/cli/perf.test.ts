/**
 * `ucx-ts perf`: smoke runs with tiny counts (this is not a benchmark): the JSON has a row per
 * system, test and size with a positive figure, and the SVG is well-formed SVG with one line
 * per system and test.
 */
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { runtime } from "../../src/ffi/index.ts";
import { runScript } from "../helpers/spawn.ts";
import { hasPerftest } from "../helpers/ucx-tools.ts";

const CLI = "src/cli/index.ts";
const test = suite("cli/perf");
let dir = "";
test.before(() => {
  dir = mkdtempSync(join(tmpdir(), "ucx-ts-perf-"));
});
test.after(() => rmSync(dir, { recursive: true, force: true }));

/** Tags open and close in order (a small well-formedness check: no XML parser in the runtimes). */
function wellFormed(xml: string): boolean {
  const stack: string[] = [];
  const body = xml.replace(/<\?xml[^>]*\?>/, "");
  for (const m of body.matchAll(/<(\/?)([a-zA-Z][\w:-]*)[^>]*?(\/?)>/g)) {
    const [, closing, name, selfClosing] = m;
    if (selfClosing) continue;
    if (closing) {
      if (stack.pop() !== name) return false;
    } else stack.push(name!);
  }
  return stack.length === 0;
}

test("perf --compare --json --plot: rows for ucx-ts, ucx_perftest and node:net; an SVG with a line per system and test", async () => {
  const json = join(dir, "perf.json");
  const svg = join(dir, "perf.svg");
  const args = ["perf", "--tests", "tag_lat,tag_bw,put_bw", "--sizes", "8,4K", "--iterations", "20", "--error-handling", "none", "--compare", "--json", json, "--plot", svg];
  const r = await runScript(CLI, args, { timeoutMs: 180_000 });
  assert.is(r.code, 0, r.stderr);
  assert.match(r.stdout, /^tag_lat\s+8\s+/m);
  const report = JSON.parse(readFileSync(json, "utf8"));
  assert.is(report.runtime, runtime);
  const systems = [`ucx-ts/${runtime}`, "node:net", ...(hasPerftest() ? ["ucx_perftest"] : [])];
  for (const system of systems) {
    for (const t of ["tag_lat", "tag_bw", "put_bw"]) {
      for (const size of [8, 4096]) {
        const row = report.rows.find((x: { system: string; test: string; size: number }) => x.system === system && x.test === t && x.size === size);
        assert.ok(row, `${system} ${t} ${size}`);
        const v = t === "tag_lat" ? row.latencyUs : row.MBps;
        assert.ok(typeof v === "number" && v > 0, `${system} ${t} ${size}: ${v}`);
      }
    }
  }
  const text = readFileSync(svg, "utf8");
  assert.match(text, /^<\?xml[^>]*\?>\s*<svg xmlns="http:\/\/www\.w3\.org\/2000\/svg"/);
  assert.ok(wellFormed(text), "well-formed");
  const series = [...text.matchAll(/<polyline data-series="([^"]+)"/g)].map((m) => m[1]);
  assert.is(series.length, systems.length * 3);
  for (const system of systems) assert.ok(series.some((s) => s!.startsWith(system + " ")), `a line for ${system}`);
  // One panel per test that ran, each with one line per system; one legend naming every system.
  const panels = [...text.matchAll(/<g data-panel="([^"]+)">([\s\S]*?)<\/g>/g)];
  assert.equal(panels.map((m) => m[1]), ["tag_lat", "tag_bw", "put_bw"]);
  for (const [, test, body] of panels) {
    const lines = [...body!.matchAll(/data-series="([^"]+)" fill="none" stroke="([^"]+)"/g)];
    assert.equal(lines.map((m) => m[1]).sort(), systems.map((s) => `${s} ${test}`).sort(), `${test}: a line per system`);
    assert.is(new Set(lines.map((m) => m[2])).size, systems.length, `${test}: each system its own colour`);
  }
  const legend = /<g data-legend="systems">([\s\S]*?)<\/g>/.exec(text)?.[1] ?? "";
  for (const system of systems) assert.ok(legend.includes(`>${system}<`), `legend names ${system}`);
});

test("perf refuses bad options in one line (exit 2)", async () => {
  const r = await runScript(CLI, ["perf", "--tests", "nope"]);
  assert.is(r.code, 2);
  assert.match(r.stderr, /^ucx-ts perf: .*unknown test 'nope'.*\(ucx-ts perf --help for usage\)\n$/);
});

test.run();
