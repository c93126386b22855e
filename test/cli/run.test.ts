/** `ucx-ts run -n N`: rank variables, "[rank] " output, the first failure stops the others and sets the exit status. */
import { suite } from "uvu";
import * as assert from "uvu/assert";
import process from "node:process";
import { runtime } from "../../src/ffi/index.ts";
import { runArgv, runScript } from "../helpers/spawn.ts";
import { skipWithReason } from "../helpers/skip.ts";
import { readFileSync } from "node:fs";
import { cpus as osCpus } from "node:os";
import { allowedCpus, findTaskset } from "../../src/ucg/binding.ts";

const test = suite("cli/run");
const CLI = "src/cli/index.ts";
const PROBE = "test/helpers/ucg-launch-probe.ts";

test("run -n 3 starts three ranks with UCX_TS_RANK/SIZE/ROOT_ADDR and prefixes their output", async () => {
  const r = await runScript(CLI, ["run", "-n", "3", PROBE, "a", "b"], { timeoutMs: 60_000 });
  assert.is(r.code, 0, r.stderr);
  const lines = r.stdout.trim().split("\n").sort();
  assert.is(lines.length, 3, r.stdout);
  const port = /root=127\.0\.0\.1:(\d+)/.exec(lines[0]!)?.[1];
  assert.ok(port, r.stdout);
  for (let i = 0; i < 3; i++) assert.is(lines[i], `[${i}] rank=${i} size=3 root=127.0.0.1:${port} args=a,b`);
  for (let i = 0; i < 3; i++) assert.ok(r.stderr.includes(`[${i}] to stderr from ${i}`), r.stderr);
});

test("a failing rank stops the others and its status is run's", async () => {
  const t0 = Date.now();
  const r = await runScript(CLI, ["run", "-n", "3", PROBE], { env: { PROBE_FAIL_RANK: "1" }, timeoutMs: 60_000 });
  assert.is(r.code, 3, r.stderr);
  assert.ok(r.stdout.includes("rank 1 failed (status 3)"), r.stdout);
  assert.ok(Date.now() - t0 < 30_000);
});

const BIND_NAME = "run binds each rank to a core of its own when there is one per rank (as mpirun), not when oversubscribed or with --bind-to none";
const cpus = allowedCpus() ?? [];
if (cpus.length < 2 || !findTaskset()) skipWithReason(test, BIND_NAME, "needs Linux's taskset and 2 allowed CPUs");
else test(BIND_NAME, async () => {
  const ranksCpus = async (args: string[]) => {
    const r = await runScript(CLI, ["run", ...args, PROBE], { env: { PROBE_CPUS: "1" }, timeoutMs: 60_000 });
    assert.is(r.code, 0, r.stderr);
    return r.stdout.trim().split("\n").sort().map((l) => /cpus=(\S+)/.exec(l)?.[1]);
  };
  assert.equal(await ranksCpus(["-n", "2"]), [String(cpus[0]), String(cpus[1])]);
  const all = /^Cpus_allowed_list:\s*(\S+)/m.exec(readFileSync("/proc/self/status", "utf8"))![1];
  assert.equal(await ranksCpus(["-n", "2", "--bind-to", "none"]), [all, all]);
  const over = cpus.length + 1;
  assert.equal(await ranksCpus(["-n", String(over)]), new Array(over).fill(all));
});

// The launcher's choice for an oversubscribed launch (src/ucg/oversubscription.ts): the ranks'
// collectives poll and yield, never sleep ("polling"), unbound; with a CPU per rank nothing is
// set (the context's default, blocking) and the ranks are bound. The test runner's own
// UCX_TS_UCG_PROGRESS is cleared ("" is unset) so that "auto" is what is checked.
test("run picks polling progress (and no binding) when oversubscribed, nothing with a CPU per rank; --progress and UCX_TS_UCG_PROGRESS override it", async () => {
  const ranksSeen = async (args: string[], env: Record<string, string> = {}) => {
    const r = await runScript(CLI, ["run", ...args, PROBE], { env: { PROBE_CPUS: "1", UCX_TS_UCG_PROGRESS: "", ...env }, timeoutMs: 60_000 });
    assert.is(r.code, 0, r.stderr);
    return r.stdout.trim().split("\n").sort().map((l) => /cpus=(\S+) progress=(\S+)/.exec(l)?.slice(1, 3).join(" "));
  };
  const all = /^Cpus_allowed_list:\s*(\S+)/m.exec(readFileSync("/proc/self/status", "utf8"))?.[1];
  const allowed = cpus.length > 0 ? cpus.length : osCpus().length;
  const over = allowed + 1;
  assert.equal(await ranksSeen(["-n", String(over)]), new Array(over).fill(`${all} polling`));
  assert.equal(await ranksSeen(["-n", String(over), "--progress", "blocking"]), new Array(over).fill(`${all} blocking`));
  assert.equal(await ranksSeen(["-n", String(over), "--progress", "auto"], { UCX_TS_UCG_PROGRESS: "blocking" }), new Array(over).fill(`${all} blocking`));
  // A CPU per rank: no progress chosen, bound (where taskset is) or not (--bind-to none) alike.
  assert.equal(await ranksSeen(["-n", "1", "--bind-to", "none"]), [`${all} unset`]);
  assert.equal(await ranksSeen(["-n", "1", "--bind-to", "none", "--progress", "polling"]), [`${all} polling`]);
  if (allowed >= 2) assert.equal(await ranksSeen(["-n", "2", "--bind-to", "none"]), [`${all} unset`, `${all} unset`]);
});

test("usage errors exit 2", async () => {
  assert.is((await runScript(CLI, ["run", PROBE])).code, 2);
  assert.is((await runScript(CLI, ["run", "-n", "2"])).code, 2);
  assert.is((await runScript(CLI, ["run", "-n", "2", "--bind-to", "socket", PROBE])).code, 2);
  const spin = await runScript(CLI, ["run", "-n", "2", "--progress", "spin", PROBE]);
  assert.is(spin.code, 2);
  assert.match(spin.stderr, /run: --progress takes auto, thread, polling, blocking or hybrid, got 'spin'/);
});

test("ucg-info prints the trees and the pick for a group and size", async () => {
  const r = await runScript(CLI, ["ucg-info", "--size", "5", "--bytes", "1MiB", "--coll", "allreduce"]);
  assert.is(r.code, 0, r.stderr);
  assert.ok(r.stdout.includes("picks for 5 members, 1048576 bytes, commutative op: 1 ring/ring_allreduce"), r.stdout);
  const forced = await runScript(CLI, ["ucg-info", "--coll", "allreduce"], { env: { UCX_TS_ALLREDUCE_PLAN: "1" } });
  assert.ok(forced.stdout.includes("picks for 8 members, 8 bytes, commutative op: 1 ring/ring_allreduce"), forced.stdout);
  const bad = await runScript(CLI, ["ucg-info"], { env: { UCX_TS_BCAST_PLAN: "9" } });
  assert.is(bad.code, 1);
  assert.ok(bad.stderr.includes("UCX_TS_INVALID_ARGUMENT"), bad.stderr);
});

// Node puts `-e <code>` in execArgv; passed on to the ranks, each would run the launching code
// again (and launch ranks of its own). The code below exits at once if it finds itself a rank.
const EVAL_NAME = "launch() from `node -e` starts the script in every rank, not the -e code again";
if (runtime !== "node") {
  skipWithReason(test, EVAL_NAME, `node -e only: this is ${runtime}`);
} else {
  test(EVAL_NAME, async () => {
    const code = [
      `if (process.env.UCX_TS_RANK !== undefined) { console.log("RAN_THE_EVAL_CODE"); process.exit(9); }`,
      `const { launch } = await import("./src/ucg/launcher.ts");`,
      `const r = await launch({ n: 2, script: "${PROBE}", timeoutMs: 30000 });`,
      `console.log("launch status " + r.code);`,
    ].join("\n");
    const r = await runArgv([process.execPath, "--import", "tsx", "-e", code], [], { timeoutMs: 60_000 }, "node -e");
    assert.not.ok(r.stdout.includes("RAN_THE_EVAL_CODE"), r.stdout);
    assert.ok(r.stdout.includes("launch status 0"), `${r.stdout}\n${r.stderr}`);
    for (const rank of [0, 1]) assert.ok(r.stdout.includes(`[${rank}] rank=${rank} size=2`), r.stdout);
  });
}

test.run();
