/**
 * The turnaround marks (src/core/turnaround.ts) as a tool: how `stage` pairs marks, and a short
 * `npm run bench -- --turnaround` between two processes of this runtime (the FFI floor's pair and
 * ucx-ts's in polling mode), checking that every stage is measured on both sides, never how fast.
 */
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { runtime } from "../../src/ffi/index.ts";
import { stage } from "../../src/core/turnaround.ts";
import { repoRoot, runArgv } from "../helpers/spawn.ts";

const test = suite("core/turnaround");

test("stage pairs each mark with the next of the other kind before its own next one, in us", () => {
  // from 1 -> 2 (1 ms); from 5 -> 6 (1 ms: 3 came before 5); from 9 -> 12 (3 ms: the last has no next mark to stop at)
  const s = stage(new Float64Array([1, 5, 9]), new Float64Array([2, 3, 6, 12]));
  assert.equal(s, { median: 1000, p90: 3000, pairs: 3 });
  // A mark whose next `to` comes after its own next mark is left out.
  assert.equal(stage(new Float64Array([1, 2, 3]), new Float64Array([3.5])), { median: 500, p90: 500, pairs: 1 });
  assert.is(stage(new Float64Array([1]), new Float64Array([])), undefined);
});

test("a short --turnaround run measures every stage on both sides (FFI floor and ucx-ts polling)", async () => {
  const r = await runArgv(["node", "bench/run-p2p.mjs"], ["--turnaround", "--runtimes", runtime, "--modes", "polling", "--rounds", "400"], { timeoutMs: 120_000 }, "run-p2p --turnaround");
  assert.is(r.code, 0, r.stdout + r.stderr);
  const file = /written (bench\/results\/turnaround-\S+\.json)/.exec(r.stdout)?.[1];
  assert.ok(file, r.stdout);
  const path = join(repoRoot, file!);
  const { runs } = JSON.parse(readFileSync(path, "utf8")) as { runs: { system: string; mode: string; rttMedianUs: number; client?: { stages: Record<string, { pairs: number }> }; server?: { stages: Record<string, { pairs: number }> } }[] };
  rmSync(path);
  const floor = runs.find((x) => x.system === `ffi-floor/${runtime}`);
  const ucxts = runs.find((x) => x.system === `ucx-ts/${runtime}` && x.mode === "polling");
  assert.ok(floor && ucxts, JSON.stringify(runs));
  for (const [run, stages] of [
    [floor!, ["turnaround", "away"]],
    [ucxts!, ["turnaround", "arrivedToFinished", "finishedToResumed", "resumedToPosted", "away"]],
  ] as const) {
    assert.ok(run.rttMedianUs > 0, `${run.system}: a round trip measured`);
    for (const side of ["client", "server"] as const)
      for (const name of stages) assert.ok((run[side]?.stages[name]?.pairs ?? 0) >= 300, `${run.system} ${side} ${name}: ${JSON.stringify(run[side])}`);
  }
});

test.run();
