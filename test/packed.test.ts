import { suite } from "uvu";
import * as assert from "uvu/assert";
import { execFileSync, spawn, spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import process from "node:process";
import { runtime } from "../src/ffi/index.ts";
import { repoRoot } from "./helpers/spawn.ts";
import { skipWithReason } from "./helpers/skip.ts";

// The tarball `npm pack` makes from the built tree, unpacked into a fresh project's
// node_modules the way `npm install ucx-ts` would leave it, then used from ESM, CommonJS and
// TypeScript. This is what a user gets, so it is checked as a user would: what is in it, and
// whether it loads. koffi (the one runtime dependency) is linked from this checkout, so the
// test needs no registry.
const test = suite("packed");
let project = "";
let files: string[] = [];

test.before(() => {
  project = mkdtempSync(join(tmpdir(), "ucx-ts-packed-"));
  const out = execFileSync("npm", ["pack", "--json", "--pack-destination", project], {
    cwd: repoRoot,
    encoding: "utf8",
    stdio: ["ignore", "pipe", "ignore"],
  });
  const report = JSON.parse(out)[0] as { filename: string; files: { path: string }[] };
  files = report.files.map((f) => f.path).sort();
  const pkg = join(project, "node_modules", "ucx-ts");
  mkdirSync(pkg, { recursive: true });
  execFileSync("tar", ["-xzf", join(project, report.filename), "-C", pkg, "--strip-components=1"]);
  symlinkSync(join(repoRoot, "node_modules", "koffi"), join(project, "node_modules", "koffi"));
  writeFileSync(join(project, "package.json"), JSON.stringify({ name: "user-project", private: true }));
});

test.after(() => {
  if (project) rmSync(project, { recursive: true, force: true });
});

test("the tarball holds what a user runs, and nothing else", () => {
  for (const must of ["LICENSE", "README.md", "package.json", "bin/ucx-ts.mjs", "dist/index.js", "dist/index.cjs", "dist/index.d.ts", "dist/index.d.cts", "dist/cli.js", "dist/engine-thread.js", "dist/engine-thread.cjs"]) {
    assert.ok(files.includes(must), `${must} missing from the tarball: ${files.join(", ")}`);
  }
  const stray = files.filter((f) => f.endsWith(".map") || f.startsWith("src/") || f.startsWith("scripts/") || f.startsWith("test/") || f === "dist/cli.cjs");
  assert.equal(stray, [], "source maps, sources, scripts, tests and the unused CJS CLI stay out of the tarball");
  const manifest = JSON.parse(readFileSync(join(project, "node_modules", "ucx-ts", "package.json"), "utf8"));
  assert.equal(manifest.os, ["linux"]);
  assert.is(manifest.license, "Apache-2.0");
});

function run(file: string, body: string): { code: number | null; stdout: string; stderr: string } {
  writeFileSync(join(project, file), body);
  const argv = runtime === "deno" ? ["run", "-A", file] : [file];
  const r = spawnSync(process.execPath, argv, { cwd: project, encoding: "utf8", timeout: 60_000 });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

test("installed package: ESM import resolves through exports and reads the UCX version", () => {
  const r = run("esm.mjs", `import { ucxVersion, UcpWorker, Worker } from "ucx-ts";\nconsole.log(JSON.stringify({ v: ucxVersion().text, alias: UcpWorker === Worker }));\n`);
  assert.is(r.code, 0, r.stderr);
  const out = JSON.parse(r.stdout.trim());
  assert.match(out.v, /^\d+\.\d+\.\d+/);
  assert.ok(out.alias, "UcpWorker is the same class as Worker");
});

test("installed package: CommonJS require works", () => {
  const r = run("cjs.cjs", `const { ucxVersion, UcxError } = require("ucx-ts");\nconsole.log(typeof UcxError, ucxVersion().text);\n`);
  assert.is(r.code, 0, r.stderr);
  assert.match(r.stdout, /^function \d+\.\d+\.\d+/);
});

test("the README's example (examples/hello.mjs, quoted verbatim) runs between two processes of the installed package", async () => {
  const example = readFileSync(join(repoRoot, "examples", "hello.mjs"), "utf8");
  assert.ok(readFileSync(join(repoRoot, "README.md"), "utf8").includes(example.trim()), "README quotes examples/hello.mjs verbatim");
  writeFileSync(join(project, "hello.mjs"), example);
  const argv = (extra: string[]) => (runtime === "deno" ? ["run", "-A", "hello.mjs", ...extra] : ["hello.mjs", ...extra]);
  const server = spawn(process.execPath, argv([]), { cwd: project, stdio: ["ignore", "pipe", "pipe"] });
  let serverErr = "";
  server.stderr!.on("data", (d) => (serverErr += d));
  const serverDone = new Promise<number | null>((resolve) => server.on("close", resolve));
  try {
    const port = await new Promise<string>((resolve, reject) => {
      let out = "";
      const timer = setTimeout(() => reject(new Error(`no port: ${out} ${serverErr}`)), 30_000);
      server.stdout!.on("data", (d) => {
        out += d;
        const m = /listening on port (\d+)/.exec(out);
        if (m) {
          clearTimeout(timer);
          resolve(m[1]!);
        }
      });
    });
    const client = spawnSync(process.execPath, argv([`127.0.0.1:${port}`]), { cwd: project, encoding: "utf8", timeout: 30_000 });
    assert.is(client.status, 0, client.stderr);
    assert.is(client.stdout.trim(), "olleh");
    // Bounded: a server that never ends (a close that leaves the event loop alive) is a failure
    // of this test, not a runner killed at its time limit.
    let timer: ReturnType<typeof setTimeout> | undefined;
    const serverEnd = await Promise.race([serverDone, new Promise<"hung">((resolve) => (timer = setTimeout(() => resolve("hung"), 30_000)))]);
    clearTimeout(timer);
    assert.is(serverEnd, 0, serverEnd === "hung" ? `the server did not exit within 30 s of its client's end: ${serverErr}` : serverErr);
  } finally {
    server.kill("SIGKILL");
  }
});

const typesTest = "installed package: TypeScript compiles against the shipped types (ESM and CJS resolution)";
// tsc is the same program whichever runtime ran the suite, and the shipped .d.ts do not change.
// The user project is a plain Node one: @types/node (the .d.ts name node:net, and Symbol.dispose
// comes from there under an es2022 lib), module node16.
if (runtime !== "node") skipWithReason(test, typesTest, "the shipped types are checked once, under Node (tsc does not depend on the runtime)");
else test(typesTest, () => {
  writeFileSync(
    join(project, "use.mts"),
    [
      `import { UcpWorker, UcxError, type Endpoint } from "ucx-ts";`,
      `const w: UcpWorker = await UcpWorker.create();`,
      `const f = (ep: Endpoint): Promise<void> => ep.close();`,
      `const e: UcxError = new UcxError("UCX_TS_CLOSED", "x");`,
      `void f; void e; await w.close();`,
    ].join("\n"),
  );
  writeFileSync(join(project, "use.cts"), `import ucx = require("ucx-ts");\nconst v: string = ucx.ucxVersion().text;\nvoid v;\n`);
  writeFileSync(
    join(project, "tsconfig.json"),
    JSON.stringify({ compilerOptions: { strict: true, noEmit: true, module: "node16", moduleResolution: "node16", target: "es2022", types: ["node"], typeRoots: [join(repoRoot, "node_modules", "@types")] }, files: ["use.mts", "use.cts"] }),
  );
  const tsc = spawnSync(process.execPath, [join(repoRoot, "node_modules", "typescript", "bin", "tsc"), "-p", project], { encoding: "utf8" });
  assert.is(tsc.status, 0, tsc.stdout + tsc.stderr);
});

test.run();
