import { suite } from "uvu";
import * as assert from "uvu/assert";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { LibraryLoadError, openUcx } from "../../src/ffi/index.ts";
import { UcxError, ucx } from "../../src/index.ts";
import { jsonLines, runScript, type ChildResult } from "../helpers/spawn.ts";

const test = suite("ffi/loader");

let emptyDir = "";
test.before(() => {
  emptyDir = mkdtempSync(join(tmpdir(), "ucx-ts-empty-"));
});
test.after(() => rmSync(emptyDir, { recursive: true, force: true }));

test("an explicit library directory without UCX fails with every path tried", () => {
  try {
    openUcx({ libDir: emptyDir });
    assert.unreachable("openUcx should have thrown");
  } catch (e) {
    assert.instance(e, LibraryLoadError);
    const err = e as LibraryLoadError;
    assert.is(err.library, "ucs");
    assert.is(err.attempts[0]!.path, join(emptyDir, "libucs.so.0"));
  }
});

test("UCX_TS_LIBDIR pointing at an empty folder gives UcxError with install instructions", async () => {
  const r = await runScript("test/helpers/load-ucx.ts", [], { env: { UCX_TS_LIBDIR: emptyDir } });
  assert.is(r.code, 0, r.stderr);
  const failed = report(r);
  assert.is(failed.loaded, false);
  assert.is(failed.name, "UcxError");
  assert.is(failed.code, "UCX_TS_LIBRARY_NOT_FOUND");
  assert.ok(failed.message.includes("apt-get install libucx0"), failed.message);
  assert.ok(failed.message.includes(`UCX_TS_LIBDIR=${emptyDir}`), failed.message);
});

test("UCX_TS_LIBDIR pointing at the real directory loads from there", async () => {
  const real = ucx().libraryPaths; // loaded from the system path in this process
  assert.ok(real.ucp);
  const dir = ["/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/usr/lib64", "/usr/lib"].find((d) =>
    existsSync(join(d, "libucp.so.0")),
  );
  assert.ok(dir, "libucp.so.0 is in none of the standard library directories");
  const r = await runScript("test/helpers/load-ucx.ts", [], { env: { UCX_TS_LIBDIR: dir } });
  const loaded = report(r);
  assert.is(loaded.loaded, true, r.stdout + r.stderr);
  assert.is(loaded.libraries.ucp, join(dir, "libucp.so.0"));
});

/** The JSON line of a load-ucx.ts run (UCX's log lines share stdout, in any order with it). */
function report(r: ChildResult) {
  const line = jsonLines(r.stdout).find((l) => "loaded" in l);
  if (line === undefined) throw new Error(`no report in the child's output (exit ${r.code}, signal ${r.signal}):\n${r.stdout}\nstderr:\n${r.stderr}`);
  return line;
}

test("UCX's memory hooks are off unless the user asks for them (UCX_MEM_EVENTS)", async () => {
  // Default: ucx-ts puts UCX_MEM_EVENTS=no into the C environment before libucs loads, and UCX
  // acts on it: its registration cache cannot install a memory-event handler.
  const off = await runScript("test/helpers/load-ucx.ts", ["context"], { env: { UCX_MEM_EVENTS: undefined, UCX_LOG_LEVEL: "diag" } });
  const offReport = report(off);
  assert.is(offReport.memEvents, "no", off.stdout + off.stderr);
  // Only this setting: with a UCX_TS_* variable set (UCX_TS_LIBDIR, to run against another UCX)
  // the runner's ucx-ts has also put UCX_WARN_UNUSED_ENV_VARS=n into the environment the child
  // inherits, where it reads as the user's.
  const memEvents = (r: typeof offReport) => r.settings.filter((s: { name: string }) => s.name === "UCX_MEM_EVENTS");
  assert.equal(memEvents(offReport), [{ name: "UCX_MEM_EVENTS", value: "no", source: "ucx-ts default", why: memEvents(offReport)[0].why }]);
  assert.match(off.stdout + off.stderr, /failed to install UCM event handler/);
  // The user's choice wins, and UCX then installs its hooks.
  // With the hooks on, a JavaScript runtime dies now and then at start (SIGSEGV in V8's
  // compiler, about one start in 25: README, Environment): that is why they are off by
  // default, and such a death (by a signal, nothing printed) is tried again, at most twice.
  let on = await runScript("test/helpers/load-ucx.ts", ["context"], { env: { UCX_MEM_EVENTS: "yes", UCX_LOG_LEVEL: "diag" } });
  for (let retry = 0; retry < 2 && on.signal !== null; retry++) {
    on = await runScript("test/helpers/load-ucx.ts", ["context"], { env: { UCX_MEM_EVENTS: "yes", UCX_LOG_LEVEL: "diag" } });
  }
  const onReport = report(on);
  assert.is(onReport.memEvents, "yes", on.stdout + on.stderr);
  assert.equal(memEvents(onReport), [{ name: "UCX_MEM_EVENTS", value: "yes", source: "user" }]);
  assert.not.match(on.stdout + on.stderr, /failed to install UCM event handler/);
});

test("the loaded library answers through every symbol kind (string, out-params)", () => {
  const u = ucx();
  const text = u.cString(u.ucp_get_version_string());
  assert.match(text ?? "", /^\d+\.\d+\.\d+/);
  assert.instance(UcxError.fromStatus(-4, "probe", (s) => u.cString(u.ucs_status_string(s))), UcxError);
});

test.run();
