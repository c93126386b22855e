import { suite } from "uvu";
import * as assert from "uvu/assert";
import { BULK_ROUNDS, plan, receiveBuffer, touchByKernel } from "../../src/cli/demo-protocol.ts";
import { runScript } from "../helpers/spawn.ts";

const test = suite("cli/demo");
const CLI = "src/cli/index.ts";

const sizeLabel = (n: number) => (n >= 1024 ? `${n / 1024} KiB` : `${n} B`);

test("demo: both error-handling passes, a row per size, every byte verified", async () => {
  const r = await runScript(CLI, ["demo", "--max-size", "4KiB"], { timeoutMs: 90_000 });
  assert.is(r.code, 0, r.stderr);
  assert.is(r.stderr, "");
  const passes = r.stdout.split(/^error handling /m).slice(1);
  assert.is(passes.length, 2, r.stdout);
  assert.match(passes[0]!, /^"peer"/);
  assert.match(passes[1]!, /^"none"/);
  for (const pass of passes) {
    for (const size of [8, 1024, 4096]) {
      // size | ucx-ts RTT | node:net RTT | ucx-ts MB/s | node:net MB/s | speed-up RTT | MB/s
      const row = new RegExp(`^  ${sizeLabel(size)}\\s+\\|\\s+[\\d.]+ (µs|ms) \\|\\s+[\\d.]+ (µs|ms) \\|\\s+[\\d.]+ \\|\\s+[\\d.]+ \\|\\s+[\\d.]+x \\| [\\d.]+x$`, "m");
      assert.match(pass, row, `row for ${size} bytes`);
    }
    assert.match(pass, /UCX transports: \S+\/\S+.* \(listener side\), \S+\/\S+.* \(peer side\)/);
  }
  const verified = /verified: (\d+) messages, ([\d.]+) [KM]iB, every byte received compared/.exec(r.stdout);
  assert.ok(verified, r.stdout);
  assert.ok(Number(verified![1]) > 1000);
});

test("demo --json in polling mode: results per size, transports, verified counts", async () => {
  const r = await runScript(CLI, ["demo", "--json", "--mode", "polling", "--error-handling", "none", "--max-size", "1KiB"], { timeoutMs: 90_000 });
  assert.is(r.code, 0, r.stderr);
  const report = JSON.parse(r.stdout);
  assert.is(report.progressMode, "polling");
  assert.equal(report.sizes, [8, 1024]);
  assert.is(report.passes.length, 1);
  const [pass] = report.passes;
  assert.is(pass.errorHandling, "none");
  assert.ok(pass.transports.listener.length > 0 && pass.transports.peer.length > 0, JSON.stringify(pass.transports));
  assert.equal(pass.rows.map((row: { size: number }) => row.size), [8, 1024]);
  for (const row of pass.rows) {
    for (const m of [row.ucx, row.tcp]) {
      assert.ok(m.rttMedianUs > 0 && m.rttMinUs > 0 && m.rttMinUs <= m.rttMedianUs, JSON.stringify(m));
      assert.ok(m.mbPerSecond > 0);
    }
  }
  // Every message is verified where it lands: pongs here, pings and transfers in the peer, over
  // UCX and over node:net; every bulk round, the untimed warm-up's too.
  const perSize = (size: number) => 4 * plan(size).pings + 2 * BULK_ROUNDS * plan(size).transfers;
  assert.is(report.verified.messages, [8, 1024].reduce((n, size) => n + perSize(size), 0));
  assert.is(report.verified.bytes, [8, 1024].reduce((n, size) => n + size * perSize(size), 0));
});

test("a damaged byte fails the demo loudly", async () => {
  const r = await runScript(CLI, ["demo", "--max-size", "8", "--error-handling", "none", "--corrupt"], { timeoutMs: 60_000 });
  assert.is(r.code, 1);
  assert.match(r.stderr, /^ucx-ts demo: VerifyError: ucx-ts pong of 8 B \(message 0\): byte 7 of 8 is \d+, expected \d+/);
});

// The bulk buffers are touched by the kernel before the timed part (demo-protocol.ts): the touch
// must cover exactly the view it is given, across reads, and leave the fill that shows stale data.
test("receive buffers: touched by the kernel within their view only, then filled", () => {
  const memory = new Uint8Array(3 * 4096 + 7).fill(5);
  const view = memory.subarray(3, memory.length - 2);
  touchByKernel(view);
  assert.ok(view.every((b) => b === 0), "every byte of the view written by the kernel");
  assert.equal([...memory.subarray(0, 3), ...memory.subarray(memory.length - 2)], [5, 5, 5, 5, 5], "nothing outside the view");
  const buffer = receiveBuffer(2 * 4096 + 1);
  assert.is(buffer.length, 2 * 4096 + 1);
  assert.ok(buffer.every((b) => b === 0xee), "the fill comes after the kernel's zeros");
});

test("usage errors exit 2; --help exits 0", async () => {
  const bad = await runScript(CLI, ["demo", "--mode", "sideways"]);
  assert.is(bad.code, 2);
  assert.match(bad.stderr, /--mode must be thread, polling or hybrid/);
  const size = await runScript(CLI, ["demo", "--max-size", "lots"]);
  assert.is(size.code, 2);
  const help = await runScript(CLI, ["demo", "--help"]);
  assert.is(help.code, 0);
  assert.match(help.stdout, /Usage: ucx-ts demo/);
});

test.run();
