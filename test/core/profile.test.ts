/**
 * The per-operation cost profile (src/core/profile.ts) as a tool: a short run of bench/profile.ts
 * with and without UCX_TS_PROFILE=1. Checks what the breakdown says about one 8 B send+receive
 * (the C calls it makes, the phases it passes through), never how fast it is.
 */
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { runScript } from "../helpers/spawn.ts";

const test = suite("core/profile");

async function profileRun(mode: string, profiling: boolean): Promise<Record<string, any>> {
  const r = await runScript("bench/profile.ts", [mode, "200"], { env: { UCX_TS_PROFILE: profiling ? "1" : undefined }, timeoutMs: 90_000 });
  assert.is(r.code, 0, r.stderr);
  return JSON.parse(r.stdout.trim().split("\n").pop()!);
}

for (const mode of ["polling", "hybrid"]) {
  test(`${mode}: the profile counts one tag send, one tag receive and their progress per operation, and the rings only where they are used`, async () => {
    const p = await profileRun(mode, true);
    assert.is(p.profiling, true);
    assert.is(p.calls.ucp_tag_send_nbx.perOp, 1);
    assert.is(p.calls.ucp_tag_recv_nbx.perOp, 1);
    assert.ok(p.calls.ucp_worker_progress.perOp >= 1, JSON.stringify(p.calls));
    // Polling: the send and the receive go straight to UCX (engine/direct-tags.ts), so no record
    // is written, executed or delivered, and the receive is found done by a check, not by a
    // callback into JavaScript; hybrid's go through the rings.
    const ringPhases = ["record", "execute", "deliver", "callback"];
    for (const phase of ["api", "settle", "ffi", ...(mode === "polling" ? [] : ringPhases)]) assert.ok(p.phasesUs[phase].mean > 0, `${phase}: ${JSON.stringify(p.phasesUs)}`);
    if (mode === "polling") for (const phase of ringPhases) assert.is(p.phasesUs[phase].mean, 0, `${phase}: ${JSON.stringify(p.phasesUs)}`);
  });
}

test("without UCX_TS_PROFILE nothing is counted: only the wall times", async () => {
  const p = await profileRun("polling", false);
  assert.is(p.profiling, false);
  assert.is(p.calls, undefined);
  assert.ok(p.p50Us > 0 && p.p99Us >= p.p50Us);
});

test.run();
