/** `ucx-ts perf --layer uct`: a short run between two processes, beside ucx_perftest's uct-level test. */
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { runScript } from "../helpers/spawn.ts";
import { uctPerfCommand } from "../../src/cli/perf/uct-perf.ts";

const test = suite("cli/uct-perf");

test("perf --layer uct over posix measures am_lat, am_bw and put_bw between two processes", async () => {
  const dir = mkdtempSync(join(tmpdir(), "ucx-ts-uct-perf-"));
  try {
    const file = join(dir, "r.json");
    const r = await runScript("src/cli/index.ts", ["perf", "--layer", "uct", "--transport", "posix", "--device", "memory", "--tests", "am_lat,am_bw,put_bw", "--sizes", "8,200", "--iterations", "200", "--json", file], { timeoutMs: 120_000 });
    assert.is(r.code, 0, r.stderr + r.stdout);
    assert.match(r.stdout, /UCT posix\/memory, two processes/);
    const rows = JSON.parse(readFileSync(file, "utf8")).rows as Array<{ system: string; test: string; size: number; layout: string; latencyUs?: number; MBps?: number }>;
    const ours = rows.filter((x) => x.system.startsWith("ucx-ts/"));
    assert.equal(ours.map((x) => `${x.test} ${x.size} ${x.layout}`), [
      "am_lat 8 short",
      "am_lat 200 bcopy", // posix's am_short is at most 100 bytes
      "am_bw 8 short",
      "am_bw 200 bcopy",
      "put_bw 8 short",
      "put_bw 200 short",
    ]);
    for (const x of ours) assert.ok((x.latencyUs ?? x.MBps)! > 0, JSON.stringify(x));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("perf --layer uct refuses a transport this host does not have, before starting a peer", async () => {
  const err = await uctPerfCommand(["--layer", "uct", "--transport", "nosuch", "--device", "x"], () => {}).catch((e: Error) => e);
  assert.instance(err, Error);
  assert.is((err as Error).name, "UsageError");
  assert.match((err as Error).message, /no UCT transport nosuch on device x/);
});

test.run();
