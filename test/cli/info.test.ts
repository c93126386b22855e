import { suite } from "uvu";
import * as assert from "uvu/assert";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { runtime } from "../../src/index.ts";
import { runScript } from "../helpers/spawn.ts";
import { ucxInfoTransports, ucxTool } from "../helpers/ucx-tools.ts";
import { skipWithReason } from "../helpers/skip.ts";

const test = suite("cli/info");
const CLI = "src/cli/index.ts";

const ucxInfoVersion = ucxTool("ucx_info", ["-v"]);
const ucxInfoDevices = ucxTool("ucx_info", ["-d"]);

if (ucxInfoVersion === null || ucxInfoDevices === null) {
  skipWithReason(test, "info --json agrees with ucx_info -v and -d", "ucx_info (Debian package ucx-utils) is not installed");
} else {
  test("info --json agrees with ucx_info -v and -d", async () => {
    const r = await runScript(CLI, ["info", "--json"]);
    assert.is(r.code, 0, r.stderr);
    const report = JSON.parse(r.stdout);

    // "# Version 1.13.1" up to 1.15, "# Library version: 1.16.0" from 1.16 on.
    const version = /# (?:Version|Library version:) (\d+)\.(\d+)\.(\d+)/.exec(ucxInfoVersion);
    assert.ok(version, `no version in ucx_info -v's output:\n${ucxInfoVersion}`);
    assert.is(report.ucx.text, `${version[1]}.${version[2]}.${version[3]}`);
    assert.equal([report.ucx.major, report.ucx.minor, report.ucx.release], version.slice(1).map(Number));

    const ours = report.transports.map((t: { transport: string; device: string }) => `${t.transport}/${t.device}`).sort();
    assert.equal(ours, ucxInfoTransports(ucxInfoDevices));
    // Device types are named as ucx_info names them.
    for (const t of report.transports) {
      assert.ok(ucxInfoDevices.includes(`Type: ${t.deviceType}`), `type ${t.deviceType} of ${t.transport}/${t.device}`);
    }

    assert.is(report.runtime.name, runtime);
    assert.is(report.runtime.ffi, { node: "koffi", deno: "Deno.dlopen", bun: "bun:ffi" }[runtime]);
    assert.ok(report.memoryTypes.includes("host"));
    assert.type(report.cuda.available, "boolean");
    if (!report.cuda.available) assert.type(report.cuda.reason, "string");
    // The endpoint probe: peer error handling restricts UCX to transports that detect a dead
    // peer (tcp here); none lets it use shared memory when the host has it.
    const ep = report.endpointTransports;
    assert.ok(ep.peer.length > 0 && ep.none.length > 0, JSON.stringify(ep));
    const all = ours as string[];
    for (const t of [...ep.peer, ...ep.none]) assert.ok(all.includes(t), `${t} is not a resource ucx_info lists`);
    if (all.some((t) => t.startsWith("sysv/") || t.startsWith("posix/"))) {
      assert.ok(ep.none.some((t: string) => /^(sysv|posix|cma)\//.test(t)), `none: ${ep.none}`);
      assert.ok(!ep.peer.some((t: string) => /^(sysv|posix)\//.test(t)), `peer: ${ep.peer}`);
    }
  });
}

test("info prints a readable report with every transport/device pair", async () => {
  const r = await runScript(CLI, ["info"]);
  assert.is(r.code, 0, r.stderr);
  assert.match(r.stdout, /^UCX \d+\.\d+\.\d+/);
  assert.match(r.stdout, /Memory types: .*host/);
  assert.match(r.stdout, /tcp\/lo\s+network/);
  assert.match(r.stdout, /error handling peer: \S+\/\S+/);
});

test("info without UCX exits 1 with one clear UcxError, not a crash", async () => {
  const empty = mkdtempSync(join(tmpdir(), "ucx-ts-empty-"));
  try {
    const r = await runScript(CLI, ["info"], { env: { UCX_TS_LIBDIR: empty } });
    assert.is(r.code, 1);
    assert.is(r.stdout, "");
    assert.match(r.stderr, /^ucx-ts info: UCX_TS_LIBRARY_NOT_FOUND: /);
    assert.match(r.stderr, /apt-get install libucx0/);
    assert.not.match(r.stderr, /\n\s+at /); // no stack trace without --verbose
  } finally {
    rmSync(empty, { recursive: true, force: true });
  }
});

test("usage errors exit 2; --help exits 0", async () => {
  const unknown = await runScript(CLI, ["frobnicate"]);
  assert.is(unknown.code, 2);
  assert.match(unknown.stderr, /unknown command 'frobnicate'/);
  const badFlag = await runScript(CLI, ["info", "--bogus"]);
  assert.is(badFlag.code, 2);
  const help = await runScript(CLI, ["info", "--help"]);
  assert.is(help.code, 0);
  assert.match(help.stdout, /Usage: ucx-ts info/);
});

test.run();
