import { suite } from "uvu";
import * as assert from "uvu/assert";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { LibraryLoadError, openUcx } from "../../src/ffi/index.ts";
import { UcxError, ucx } from "../../src/index.ts";
import { runScript } from "../helpers/spawn.ts";

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
  const report = JSON.parse(r.stdout);
  assert.is(report.loaded, false);
  assert.is(report.name, "UcxError");
  assert.is(report.code, "UCX_TS_LIBRARY_NOT_FOUND");
  assert.ok(report.message.includes("apt-get install libucx0"), report.message);
  assert.ok(report.message.includes(`UCX_TS_LIBDIR=${emptyDir}`), report.message);
});

test("UCX_TS_LIBDIR pointing at the real directory loads from there", async () => {
  const real = ucx().libraryPaths; // loaded from the system path in this process
  assert.ok(real.ucp);
  const dir = ["/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/usr/lib64", "/usr/lib"].find((d) =>
    existsSync(join(d, "libucp.so.0")),
  );
  assert.ok(dir, "libucp.so.0 is in none of the standard library directories");
  const r = await runScript("test/helpers/load-ucx.ts", [], { env: { UCX_TS_LIBDIR: dir } });
  const report = JSON.parse(r.stdout);
  assert.is(report.loaded, true, r.stdout + r.stderr);
  assert.is(report.libraries.ucp, join(dir, "libucp.so.0"));
});

test("the loaded library answers through every symbol kind (string, out-params)", () => {
  const u = ucx();
  const text = u.cString(u.ucp_get_version_string());
  assert.match(text ?? "", /^\d+\.\d+\.\d+/);
  assert.instance(UcxError.fromStatus(-4, "probe", (s) => u.cString(u.ucs_status_string(s))), UcxError);
});

test.run();
