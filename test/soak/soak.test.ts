/**
 * The soak (scripts/soak/main.ts), short: a few seconds of mixed traffic between this runtime's
 * processes with faults injected, every byte checked, then Worker create/close cycles. `npm run
 * soak -- --minutes N` is the long one.
 */
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { runtime } from "../../src/ffi/index.ts";
import { runScript } from "../helpers/spawn.ts";
import { skipWithReason } from "../helpers/skip.ts";

const test = suite("soak (short)");
const NAME = "mixed traffic with endpoint closes, peer kills and aborts: every byte verified, every error from a fault; worker cycles keep fds flat";

if (runtime === "deno") {
  // Seen 2026-11-25 with Deno 2.9.6: the coordinator died of SIGSEGV inside UCX in 4 of 22
  // 6-second soaks (seed 9: 2 of 6 with takeover, 2 of 8 with UCX_TS_TAKEOVER=0; seeds 101-108: none).
  // Core dumps show the progress thread in ucp_worker_progress -> uct_tcp_iface_progress ->
  // ucs_event_set_wait -> the tcp iface's event handler (libuct.so.0 +0x2431f, UCX 1.13.1) calling
  // through its connection-state table for an endpoint whose memory glibc has already freed (a
  // tcache chunk: its conn_state byte is garbage, so the call lands in a random function); the
  // main thread was idle in its event loop. So UCX's tcp transport handles an event for a tcp
  // endpoint it has destroyed, while peers reconnect and are killed; Node hit the same crash
  // once in a 1-minute soak with 2 peers. Not fixed here (docs/testing.md, Soak); this runtime
  // runs the soak by hand: deno run -A scripts/soak/main.ts --seconds 6 --peers 1.
  skipWithReason(test, NAME, "Deno: ~1 short soak in 5 dies of SIGSEGV inside UCX 1.13.1's tcp transport (an event for a freed tcp endpoint; docs/testing.md, Soak)");
} else test(NAME, async () => {
  const r = await runScript("scripts/soak/main.ts", ["--seconds", "6", "--peers", "1", "--cycles", "40", "--seed", "7", "--fault-every-ms", "1200"], { timeoutMs: 120_000 });
  const summary = r.stderr.split("\n").filter((l) => !l.includes("UCX  WARN")).slice(-20).join("\n");
  assert.is(r.signal, null, summary);
  const last = r.stdout.trim().split("\n").pop() ?? "";
  assert.ok(last.startsWith("{"), `no report (exit ${r.code}): ${summary}`);
  const report = JSON.parse(last) as {
    ok: boolean;
    ops: number;
    bytesVerified: number;
    byKind: Record<string, number>;
    faults: Record<string, number>;
    unexpected: Record<string, number>;
    cycles: { fds: { growth: number }; rssMiB: { growth: number } };
  };
  assert.equal(report.unexpected, {}, summary);
  assert.ok(report.ok, summary);
  assert.is(r.code, 0, summary);
  // Every kind of operation ran and was checked.
  for (const [kind, n] of Object.entries(report.byKind)) assert.ok(n > 0, `no ${kind} operation completed: ${summary}`);
  assert.ok(report.bytesVerified > 0);
  assert.ok(Object.values(report.faults).reduce((a, b) => a + b, 0) >= 1, `no fault injected: ${summary}`);
  assert.is(report.cycles.fds.growth, 0, summary);
});

test.run();
