/**
 * Hybrid mode keeps its process alive while direct calls (engine/direct-tags.ts) are in flight:
 * they have no entry in the request table, so the table alone said "idle", the driver parked,
 * and a process awaiting only such sends ended with their Promises unsettled (the perf server
 * over tcp, 1 run in 8, 2026-12-07). Real processes: a silent peer and a sender.
 */
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { startPeer } from "../helpers/peer-process.ts";
import { runScript } from "../helpers/spawn.ts";

const test = suite("core/hybrid keep-alive");

test("a process whose only outstanding work is direct sends UCX has not finished stays alive until they end", async () => {
  const peer = await startPeer("polling", "peer", "silent");
  try {
    const r = await runScript("test/helpers/hybrid-held-send.ts", [String(peer.port), String(peer.child.pid)], { timeoutMs: 90_000 });
    assert.is(r.code, 0, `exit ${r.code} ${r.signal ?? ""}\n${r.stdout}\n${r.stderr.slice(-2000)}`);
    const posted = /posted \d+, (\d+) direct in flight/.exec(r.stdout);
    assert.ok(posted, r.stdout);
    // What makes the check mean something: sends were left in flight by the direct path.
    assert.ok(Number(posted[1]) > 0, `no direct send in flight: ${r.stdout}`);
    assert.match(r.stdout, /settled: rejected/, `the process ended before its sends did: ${r.stdout}`);
  } finally {
    peer.kill();
  }
});

test.run();
