/**
 * `ucx-ts proto-info` and `ucx-ts calibrate` as a user runs them, and UCX_TS_PROTO_INFO=1
 * printing a starting worker's tables.
 */
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseCalibration } from "../../src/index.ts";
import { runScript } from "../helpers/spawn.ts";

const test = suite("cli/proto");
const CLI = "src/cli/index.ts";
const NO_FILE = { UCX_TS_PROTO_CALIBRATION: "none" };

test("proto-info prints each operation's table with ranges, protocols and cost sources", async () => {
  const r = await runScript(CLI, ["proto-info", "--mode", "thread"], { env: NO_FILE });
  assert.is(r.code, 0, r.stderr);
  assert.match(r.stdout, /progress mode thread, costs from built-in defaults/);
  assert.match(r.stdout, /tag-send on host\/contig/);
  assert.match(r.stdout, /stream-send on host\/contig/);
  // The default thread-mode table starts with inline at 0 bytes and ends with zcopy at max.
  assert.match(r.stdout, /0 B  \.\.  +192 B  inline/);
  assert.match(r.stdout, /\.\.  +max  zcopy +[0-9.]+ us  \.\.  +max /, "an open range ends at max, in sizes and in time");
  assert.not.match(r.stderr, /UCX\s+WARN/);
});

test("proto-info follows the environment: a forced protocol, a cost line, --json", async () => {
  const forced = await runScript(CLI, ["proto-info", "--mode", "polling"], { env: { ...NO_FILE, UCX_TS_PROTO_TAG_SEND: "bounce" } });
  assert.is(forced.code, 0, forced.stderr);
  const tagTable = forced.stdout.split("stream-send")[0]!;
  assert.match(tagTable, /0 B  \.\.  +64 KiB  bounce \(forced\)/);
  const costed = await runScript(CLI, ["proto-info", "--mode", "polling", "--json"], { env: { ...NO_FILE, UCX_TS_PROTO_COST_INLINE: "0.5,0" } });
  assert.is(costed.code, 0, costed.stderr);
  const report = JSON.parse(costed.stdout);
  assert.is(report.mode, "polling");
  const tag = report.tables.find((t: { operation: string }) => t.operation === "tag-send");
  assert.is(tag.table[0].protocol, "inline");
  assert.is(tag.table[0].maxSize, 192);
  assert.is(tag.candidates.find((c: { protocol: string }) => c.protocol === "inline").source, "configuration");
});

test("proto-info refuses bad input with a clear message", async () => {
  const mode = await runScript(CLI, ["proto-info", "--mode", "fast"], { env: NO_FILE });
  assert.is(mode.code, 2);
  assert.match(mode.stderr, /^ucx-ts proto-info: --mode must be thread, polling, blocking or hybrid, got 'fast' \(ucx-ts proto-info --help for usage\)\n$/);
  const env = await runScript(CLI, ["proto-info"], { env: { ...NO_FILE, UCX_TS_PROTO: "warp" } });
  assert.is(env.code, 1);
  assert.match(env.stderr, /UCX_TS_INVALID_ARGUMENT: UCX_TS_PROTO: unknown protocol 'warp'/);
});

test("calibrate measures and writes a file that proto-info and workers then use", async () => {
  const dir = mkdtempSync(join(tmpdir(), "ucx-ts-calibrate-"));
  try {
    const file = join(dir, "cal.json");
    const r = await runScript(CLI, ["calibrate", "--quick", "--modes", "polling", "--out", file], { timeoutMs: 120_000 });
    assert.is(r.code, 0, r.stderr);
    assert.match(r.stdout, /progress mode polling:/);
    assert.match(r.stdout, new RegExp(`wrote ${file.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}`));
    const cal = parseCalibration(readFileSync(file, "utf8"));
    assert.equal(Object.keys(cal.modes), ["polling"]);
    for (const p of ["inline", "bounce", "zcopy"] as const) {
      const cost = cal.modes.polling![p]!;
      assert.ok(cost.c >= 0 && cost.m >= 0, `${p}: ${JSON.stringify(cost)}`);
      assert.ok(cost.c > 0 || cost.m > 0, `${p}: a measured line cannot be all zero`);
    }
    // zcopy was measured up to 4 MiB: moving bytes costs time.
    assert.ok(cal.modes.polling!.zcopy!.m > 0);
    const info = await runScript(CLI, ["proto-info", "--mode", "polling"], { env: { UCX_TS_PROTO_CALIBRATION: file } });
    assert.is(info.code, 0, info.stderr);
    assert.match(info.stdout, new RegExp(`costs from calibration ${file.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}`));
    // A worker started with UCX_TS_PROTO_INFO=1 prints the tables it built from that file.
    const w = await runScript("test/helpers/exit-without-close.ts", ["polling"], { env: { UCX_TS_PROTO_CALIBRATION: file, UCX_TS_PROTO_INFO: "1" } });
    assert.is(w.code, 0, w.stderr);
    assert.match(w.stderr, /ucx-ts protocol selection: progress mode polling, costs from calibration/);
    assert.not.match(w.stderr, /UCX\s+WARN\s+unused env variable/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test.run();
