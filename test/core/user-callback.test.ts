/**
 * Application callbacks that throw inside the engine's delivery (issue 19: in polling mode an
 * endpoint failure once escaped `worker.progress()` as an uncaught UCS_ERR_CONNECTION_RESET).
 * Run in a child process, since the exceptions end up uncaught there by design.
 */
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { lastJson, runScript } from "../helpers/spawn.ts";

const test = suite("core/user callbacks");

test("a throwing onError or AM handler never escapes progress(): each is an uncaught exception of its own, and the worker goes on serving (polling)", async () => {
  const r = await runScript("test/helpers/throwing-callback.ts", ["polling"], { timeoutMs: 90_000 });
  assert.is(r.code, 0, `exit ${r.code} ${r.signal ?? ""}\n${r.stderr}`);
  const report = lastJson<{ progressThrew: string; uncaught: string[]; served: boolean }>(r.stdout)!;
  assert.ok(report, `no report; stdout: ${r.stdout}\nstderr: ${r.stderr}`);
  assert.is(report.progressThrew, "", "progress() threw the application's exception");
  assert.equal(report.uncaught, ["boom from an AM handler", "boom from onError"]);
  assert.ok(report.served, "the worker stopped serving after the callbacks threw");
});

test.run();
