/**
 * The per-operation cost profile (src/core/profile.ts) as a tool: a short run of bench/profile.ts
 * with and without UCX_TS_PROFILE=1. Checks what the breakdown says about one 8 B send+receive
 * (the C calls it makes, the phases it passes through), never how fast it is.
 */
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { reportOf, runScript } from "../helpers/spawn.ts";

const test = suite("core/profile");

async function profileRun(mode: string, profiling: boolean, env: Record<string, string> = {}): Promise<Record<string, any>> {
  const r = await runScript("bench/profile.ts", [mode, "200"], { env: { UCX_TS_PROFILE: profiling ? "1" : undefined, ...env }, timeoutMs: 90_000 });
  assert.is(r.code, 0, r.stderr);
  return reportOf(r, `bench/profile.ts ${mode}`);
}

/**
 * The runs: polling, whose send and receive go straight to UCX (engine/direct-tags.ts: no record
 * written, executed or delivered, the receive found done by a check, not by a callback into
 * JavaScript); the same with the direct path off (UCX_TS_DIRECT_TAGS=0: through the rings); and
 * hybrid, which takes either path by whether its driver is running when the call comes.
 */
const RUNS = [
  { name: "polling", mode: "polling", env: {}, rings: false },
  { name: "polling through the rings", mode: "polling", env: { UCX_TS_DIRECT_TAGS: "0" }, rings: true },
  { name: "hybrid", mode: "hybrid", env: {}, rings: undefined },
] as const;

for (const run of RUNS) {
  test(`${run.name}: the profile counts one tag send, one tag receive and their progress per operation, and the rings only where they are used`, async () => {
    const p = await profileRun(run.mode, true, run.env);
    assert.is(p.profiling, true);
    assert.is(p.calls.ucp_tag_send_nbx.perOp, 1);
    assert.is(p.calls.ucp_tag_recv_nbx.perOp, 1);
    assert.ok(p.calls.ucp_worker_progress.perOp >= 1, JSON.stringify(p.calls));
    const ringPhases = ["record", "execute", "deliver", "callback"];
    for (const phase of ["api", "settle", "ffi", ...(run.rings === true ? ringPhases : [])]) assert.ok(p.phasesUs[phase].mean > 0, `${phase}: ${JSON.stringify(p.phasesUs)}`);
    if (run.rings === false) for (const phase of ringPhases) assert.is(p.phasesUs[phase].mean, 0, `${phase}: ${JSON.stringify(p.phasesUs)}`);
  });
}

test("without UCX_TS_PROFILE nothing is counted: only the wall times", async () => {
  const p = await profileRun("polling", false);
  assert.is(p.profiling, false);
  assert.is(p.calls, undefined);
  assert.ok(p.p50Us > 0 && p.p99Us >= p.p50Us);
});

test.run();
