import { suite } from "uvu";
import * as assert from "uvu/assert";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { repoRoot, runScript } from "../helpers/spawn.ts";
import { PACKAGE_VERSION } from "../../src/cli/package-version.ts";
import { parseCommandArgs, UsageError } from "../../src/cli/args.ts";

// The CLI's one grammar (node:util parseArgs under every runtime): --opt=value, short flags,
// --version, `help <command>`, and usage errors as one line on stderr with exit status 2.
const test = suite("cli args");
const CLI = "src/cli/index.ts";

test("--version prints the package's version, the same in package.json and deno.json", async () => {
  for (const file of ["package.json", "deno.json"]) {
    assert.is(JSON.parse(readFileSync(join(repoRoot, file), "utf8")).version, PACKAGE_VERSION, file);
  }
  for (const flag of ["--version", "-V"]) {
    const r = await runScript(CLI, [flag]);
    assert.is(r.code, 0, r.stderr);
    assert.match(r.stdout, new RegExp(`^ucx-ts ${PACKAGE_VERSION.replaceAll(".", "\\.")} \\((node|deno|bun) `));
  }
});

test("help <command> prints that command's help; help of an unknown command is a usage error", async () => {
  const r = await runScript(CLI, ["help", "proto-info"]);
  assert.is(r.code, 0, r.stderr);
  assert.match(r.stdout, /^Usage: ucx-ts proto-info/);
  const bad = await runScript(CLI, ["help", "frobnicate"]);
  assert.is(bad.code, 2);
  assert.match(bad.stderr, /^ucx-ts: unknown command 'frobnicate' \(ucx-ts --help lists them\)\n$/);
});

test("usage errors: one line, exit 2, for unknown options, missing values, stray arguments and bad choices", async () => {
  const cases: [string[], RegExp][] = [
    [["demo", "--frobnicate"], /^ucx-ts demo: unknown option --frobnicate /],
    [["demo", "--mode"], /^ucx-ts demo: --mode needs a value /],
    [["demo", "--mode=sideways"], /^ucx-ts demo: --mode must be thread, polling or hybrid, got 'sideways' /],
    [["demo", "--json=yes"], /^ucx-ts demo: --json takes no value /],
    [["info", "extra"], /^ucx-ts info: unexpected argument 'extra' /],
    [["calibrate", "--modes", "thread,warp"], /^ucx-ts calibrate: --modes takes a list of thread, polling, blocking or hybrid, got 'warp' /],
    [["perf", "--iterations"], /^ucx-ts perf: --iterations needs a value /],
    [["perf", "--mode=sideways"], /^ucx-ts perf: --mode must be thread, polling, blocking or hybrid, got 'sideways' /],
    [["perf", "--spin", "soon"], /^ucx-ts perf: --spin must be a number, got 'soon' /],
    [["perf", "--compare=yes"], /^ucx-ts perf: --compare takes no value /],
    [["perf", "a:1", "b:2"], /^ucx-ts perf: unexpected argument 'b:2' /],
    [["perf", "--layer", "uct", "--transport"], /^ucx-ts perf: --transport needs a value /],
    [["perf", "--layer", "uct", "--transport", "posix", "--device", "memory", "--warp"], /^ucx-ts perf: unknown option --warp /],
  ];
  for (const [argv, line] of cases) {
    const r = await runScript(CLI, argv);
    assert.is(r.code, 2, argv.join(" "));
    assert.match(r.stderr, line, argv.join(" "));
    assert.is(r.stderr.trimEnd().split("\n").length, 1, `one line: ${r.stderr}`);
  }
});

test("parseCommandArgs: --opt=value and --opt value agree; positional bounds are checked", () => {
  const spec = { out: { type: "string", short: "o" }, quick: { type: "boolean", short: "q" } } as const;
  for (const argv of [["--out=x", "-q"], ["--out", "x", "--quick"], ["-o", "x", "-q"]]) {
    const p = parseCommandArgs("t", argv, spec);
    assert.equal([p.values.out, p.values.quick], ["x", true], argv.join(" "));
  }
  assert.throws(() => parseCommandArgs("t", ["a"], spec), (e: unknown) => e instanceof UsageError && /^t: unexpected argument/.test((e as Error).message));
  assert.throws(() => parseCommandArgs("t", [], spec, { min: 1, max: 2 }), (e: unknown) => e instanceof UsageError && /needs an argument/.test((e as Error).message));
  assert.equal(parseCommandArgs("t", ["a", "--", "-b"], spec, { max: 2 }).positionals, ["a", "-b"]);
});

test.run();
