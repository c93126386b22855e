/**
 * Seeded fuzzing of every parser of bytes that come from a peer (issue 26): multi-buffer headers,
 * UCXX AM headers, packed remote keys, the hello with its authentication, the CLI transfer
 * protocol, the collectives' bootstrap, UCT interface addresses, atomics over active messages
 * (test/fuzz/*.ts; worker addresses: test/core/hostile.test.ts). All modules run in one
 * child process (run-module.ts), so a crash inside UCX fails these tests instead of the run.
 *
 * `npm test`: 0.5 s per module, seed UCX_TS_FUZZ_SEED (default 1), polling mode. `npm run fuzz`
 * (UCX_TS_FUZZ_SECONDS set, 60 by default there): that long per module, thread and polling.
 */
import process from "node:process";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { jsonLines, runScript, type ChildResult } from "../helpers/spawn.ts";

const MODULES = ["multi-header", "am-header", "rkey", "hello", "transfer-protocol", "ucg-bootstrap", "uct-address", "am-atomic"] as const;
const seconds = Number(process.env.UCX_TS_FUZZ_SECONDS || 0.5);
const seed = process.env.UCX_TS_FUZZ_SEED || "1";
// Polling mode in npm test: a thread-mode worker costs ~2.5 s to start under Node (its progress
// thread loads the library again), more than the fuzzing itself.
const modes = process.env.UCX_TS_FUZZ_SECONDS ? ["polling", "thread"] : ["polling"];

for (const mode of modes) {
  const test = suite(`fuzz/hostile peer input (${mode}, seed ${seed}, ${seconds} s a module)`);
  let child: Promise<ChildResult> | undefined;
  const results = () =>
    (child ??= runScript("test/fuzz/run-module.ts", [mode, seed, ...MODULES], {
      // UCX's log on stderr: stdout carries only the reports (UCX writes to fd 1 through C's
      // stdio, beside the runtime's own writes, and one report went missing in CI, 2026-12-07).
      env: { UCX_TS_FUZZ_SECONDS: String(seconds), UCX_LOG_FILE: "stderr" },
      timeoutMs: 120_000 + MODULES.length * seconds * 2000,
    }));

  for (const name of MODULES) {
    test(`${name}: every input ends in a typed error or the right result; honest peers are still served`, async () => {
      const r = await results();
      const line = jsonLines<{ module: string; inputs: number; outcomes: Record<string, number> }>(r.stdout).find((l) => l.module === name);
      // The last lines of stderr without UCX's warnings about messages left unmatched at close.
      const why = () => r.stderr.split("\n").filter((l) => !l.includes("UCX  WARN")).slice(-30).join("\n");
      assert.ok(line, `${name} (${mode}, seed ${seed}) did not finish: exit ${r.code}, signal ${r.signal}\n${why()}`);
      assert.ok(line.inputs >= 16, `${name}: only ${line.inputs} inputs`);
      // More than one outcome: the mutations reached both the refusals and the valid results.
      assert.ok(Object.keys(line.outcomes).length >= 2, `${name}: ${JSON.stringify(line.outcomes)}`);
    });
  }
  test.run();
}
