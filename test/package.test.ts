import { suite } from "uvu";
import * as assert from "uvu/assert";
import { existsSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { lastJson, repoRoot, runScript } from "./helpers/spawn.ts";

// The built package (dist/, made by tsup in `npm test` before the suites run), loaded the way
// users load it: ESM import, CommonJS require, and the `ucx-ts` bin.
const test = suite("package");
const dist = join(repoRoot, "dist");

test("dist/ exists (npm test builds it before running the suites)", () => {
  assert.ok(existsSync(join(dist, "index.js")), "run `npx tsup` first");
  assert.ok(existsSync(join(dist, "index.d.ts")));
  assert.ok(existsSync(join(dist, "index.cjs")));
});

test("ESM entry exports the API and reads the UCX version", async () => {
  const m = await import(pathToFileURL(join(dist, "index.js")).href);
  assert.type(m.Context, "function");
  assert.match(m.ucxVersion().text, /^\d+\.\d+\.\d+/);
});

test("CommonJS entry exports the API and reads the UCX version", () => {
  const m = createRequire(import.meta.url)(join(dist, "index.cjs"));
  assert.type(m.UcxError, "function");
  assert.match(m.ucxVersion().text, /^\d+\.\d+\.\d+/);
});

test("the built classes keep their names (tsup keepNames): errors print as UcxError, not _UcxError", async () => {
  const esm = await import(pathToFileURL(join(dist, "index.js")).href);
  const cjs = createRequire(import.meta.url)(join(dist, "index.cjs"));
  for (const m of [esm, cjs]) {
    const e = new m.UcxError("UCX_TS_CLOSED", "closed");
    assert.is(e.constructor.name, "UcxError");
    assert.is(m.Worker.name, "Worker");
    assert.ok(String(e.stack).startsWith("UcxError: closed"), String(e.stack));
  }
});

test("the ucx-ts bin runs info --json", async () => {
  const r = await runScript("bin/ucx-ts.mjs", ["info", "--json"]);
  assert.is(r.code, 0, r.stderr);
  assert.ok(Array.isArray(JSON.parse(r.stdout).transports));
});

test("the built package starts its thread entries: a message in thread and hybrid modes", async () => {
  const r = await runScript("test/helpers/dist-transfer.mjs", [], { timeoutMs: 60_000 });
  assert.is(r.code, 0, r.stderr);
  assert.equal(lastJson(r.stdout), { thread: [1, 2, 3], hybrid: [1, 2, 3] });
});

test.run();
