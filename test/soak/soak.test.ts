/**
 * The soak (scripts/soak/main.ts), short: a few seconds of mixed traffic between this runtime's
 * processes with faults injected, every byte checked, a job of 2 ranks running random
 * collectives beside it, then Worker create/close cycles in each progress mode. Where a C
 * compiler is, GPU traffic against the stand-in libcudart too (`--gpu stand-in`: a share of the
 * same seconds, not more of them), every DeviceBuffer and pinned buffer back at the end; without
 * one, the GPU part is skipped and says why. Atomics go over active messages (UCX_TS_ATOMICS_OVER_AM=1).
 * `npm run soak -- --minutes N` is the long one.
 */
import { execFileSync } from "node:child_process";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { runtime } from "../../src/ffi/index.ts";
import { skipWithReason } from "../helpers/skip.ts";
import { lastJson, runScript } from "../helpers/spawn.ts";

const test = suite("soak (short)");

/** The soak compiles the stand-in itself (one `cc` run); here only whether it can. */
const noCompiler = ((): string | undefined => {
  try {
    execFileSync("sh", ["-c", "command -v cc"], { stdio: "pipe" });
    return undefined;
  } catch {
    return "no C compiler (cc) to build the stand-in libcudart (test/cuda/standin-cudart.c)";
  }
})();
const GPU_NAME = "GPU traffic (stand-in libcudart): tag, AM and pipelined multi-buffer with DeviceBuffers under the same faults, every byte verified, no DeviceBuffer or pinned buffer left out";
if (noCompiler) skipWithReason(test, GPU_NAME, noCompiler);
const NAME = "mixed traffic with endpoint closes, peer kills and aborts: every byte verified, every error from a fault; worker cycles keep fds flat";

// Deno ran this skipped until 2026-11-25: its coordinator died of SIGSEGV inside UCX 1.13.1's tcp
// transport in 4 of 22 short soaks (an event handled for a tcp endpoint already freed, found in
// core dumps). The cause was the peers inheriting the coordinator's UCX sockets (docs/guide.md
// "Child processes"; the library now marks them close-on-exec and the soak checks each new peer);
// since they no longer do, 22 runs in a row (seeds 7 and 9) ended clean. Deno's peers take seconds to start again after a kill on a
// loaded machine (one of those runs completed 3 operations in 6 s), so Deno gets 10 s.
const seconds = runtime === "deno" ? "10" : "6";

/**
 * UCX 1.13.1's own assertion in its tcp transport when a peer is killed under an AM zcopy
 * (uct_iface.h `comp->count > 0`, ucp_proto_am_zcopy_completion: the completion runs twice). It
 * is UCX's bug, not ours, seen about once in three CI runs (2026-11-25); a run that dies of it is
 * run once more with the next seed. Any other death, or this one twice, fails the test.
 */
const UCX_TCP_ZCOPY_ASSERTION = /Assertion `comp->count > 0' failed: .*ucp_proto_am_zcopy_completion/;
/**
 * UCX 1.13.1's tcp transport handling an event of a batch for an endpoint that an earlier event
 * of the same batch closed (docs/upstream-reports.md, report 6): seen once in a 10-minute soak
 * (2026-12-07). Treated as the one above.
 */
const UCX_TCP_CLOSED_EP_ASSERTION = /Assertion `ep->conn_state != UCT_TCP_EP_CONN_STATE_CLOSED' failed/;
const ucxTcpAssertion = (text: string) => UCX_TCP_ZCOPY_ASSERTION.test(text) || UCX_TCP_CLOSED_EP_ASSERTION.test(text);

async function soak(seed: number) {
  // A fifth of the operations: the host kinds keep enough of the few seconds to each complete some on a loaded machine.
  const gpu = noCompiler ? [] : ["--gpu", "stand-in", "--gpu-share", "0.2"];
  // Atomics over active messages (what UCX >= 1.16 needs on peer-error endpoints, am-atomics.ts)
  // in every process: their requests and replies under the same kills and aborts.
  return runScript("scripts/soak/main.ts", ["--seconds", seconds, "--peers", "1", "--cycles", "10", "--seed", String(seed), "--fault-every-ms", "1200", "--collectives", "2", ...gpu], {
    timeoutMs: 120_000,
    env: { UCX_TS_ATOMICS_OVER_AM: "1" },
  });
}

/**
 * A run starved by the machine: nothing went wrong (no unexpected error, nothing left out), but
 * some kind of operation never completed in the few seconds. On a loaded 2-core machine the lanes
 * stall for seconds at a time (GPU traffic off too: 15 and 19 operations in 6 s, 2026-11-27, load
 * 6-9), and with about 12 host operations one of six kinds is often missing. Run once more then.
 */
function starved(r: { stdout: string }): boolean {
  const rep = lastJson<{ unexpected: Record<string, number>; byKind: Record<string, number>; gpu?: { ops: number; leaked: boolean } }>(r.stdout);
  if (rep === undefined) return false;
  const idle = Object.values(rep.byKind).some((n) => n === 0) || rep.gpu?.ops === 0;
  return idle && Object.keys(rep.unexpected).length === 0 && rep.gpu?.leaked !== true;
}

test(NAME, async () => {
  let r = await soak(7);
  if (r.signal !== null && ucxTcpAssertion(r.stdout + r.stderr)) {
    console.error("soak (short): a process died of one of UCX 1.13.1's tcp assertions (docs/upstream-reports.md, reports 1 and 6); once more with the next seed");
    r = await soak(8);
  } else if (starved(r)) {
    console.error("soak (short): some kind of operation never completed (the machine starved the lanes); once more with the next seed");
    r = await soak(8);
  }
  const summary = r.stderr.split("\n").filter((l) => !l.includes("UCX  WARN")).slice(-20).join("\n");
  assert.is(r.signal, null, summary);
  const found = lastJson(r.stdout);
  assert.ok(found, `no report (exit ${r.code}): ${summary}`);
  const report = found as {
    ok: boolean;
    ops: number;
    bytesVerified: number;
    byKind: Record<string, number>;
    faults: Record<string, number>;
    unexpected: Record<string, number>;
    cycles: { mode: string; fds: { growth: number }; threads: { growth: number } }[];
    collectives: { collectives: number; elementsVerified: number; unexpected: Record<string, number> };
    woundMappings: Record<string, number>;
    gpu?: {
      ops: number;
      byKind: Record<string, number>;
      bytesVerified: number;
      pinned: { peakBytes: number };
      device: { allocated: number; freed: number; outstanding: number };
      outstandingAfterWindDown: { pinned: number; device: number };
      outstandingAfterClose: { pinned: number; device: number };
      leaked: boolean;
    };
  };
  assert.equal(report.unexpected, {}, summary);
  assert.ok(report.ok, summary);
  assert.is(r.code, 0, summary);
  // Every kind of operation ran and was checked.
  for (const [kind, n] of Object.entries(report.byKind)) assert.ok(n > 0, `no ${kind} operation completed: ${summary}`);
  assert.ok(report.bytesVerified > 0);
  assert.ok(Object.values(report.faults).reduce((a, b) => a + b, 0) >= 1, `no fault injected: ${summary}`);
  // 10 cycles in each of polling, thread and hybrid modes (30 in all, against 40 polling ones
  // before: ~0.3 s more, a thread start under Node from sources among it): no descriptor more,
  // and no OS thread per cycle (the 5 judged would show +5).
  assert.equal(report.cycles.map((c) => c.mode), ["polling", "thread", "hybrid"]);
  for (const c of report.cycles) {
    assert.is(c.fds.growth, 0, `${c.mode}: ${summary}`);
    assert.ok(c.threads.growth <= 4, `${c.mode}: ${summary}`);
  }
  // The collectives lane ran real jobs and checked their results.
  assert.ok(report.collectives.collectives > 0 && report.collectives.elementsVerified > 0, summary);
  assert.equal(report.collectives.unexpected, {}, summary);
  // Under Node the report tells the JS heaps apart (scripts/soak/isolate-pages.ts): the main
  // thread's, and the other threads' (the thread-mode worker's progress thread, tsx's loaders),
  // whose pages the soak's gc() does not reach.
  if (runtime === "node") {
    const m = report.woundMappings;
    assert.ok(m["v8Pages.main"]! > 1 && m["v8Pages.otherThreads"]! > 1, `JS heaps not told apart: ${JSON.stringify(m)}`);
  }
  // GPU traffic (the same run): operations checked byte for byte, staged through pinned memory,
  // and nothing of it left out once the connections are closed, faults and all.
  if (!noCompiler) {
    const g = report.gpu;
    assert.ok(g && g.ops > 0 && g.bytesVerified > 0, `no GPU operation completed: ${summary}`);
    assert.ok(g.pinned.peakBytes > 0 && g.device.allocated > 0, summary);
    assert.equal(g.outstandingAfterWindDown, { pinned: 0, device: 0 }, summary);
    assert.equal(g.outstandingAfterClose, { pinned: 0, device: 0 }, summary);
    assert.is(g.device.allocated, g.device.freed, summary);
    assert.not.ok(g.leaked, summary);
  }
});

test.run();
