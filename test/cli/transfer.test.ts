/**
 * `ucx-ts send` / `ucx-ts recv` between two processes of the runtime under test: trees with odd
 * names and modes, an empty file, a 1 GiB sparse file, stdin to stdout, a receiver killed
 * mid-transfer, a checksum mismatch, and usage errors.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { createHash } from "node:crypto";
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, truncateSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import process from "node:process";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { repoRoot, runScript, runtimeArgv } from "../helpers/spawn.ts";
import { pattern } from "../helpers/workers.ts";

const CLI = "src/cli/index.ts";
const test = suite("cli/transfer");
let dir = "";

test.before(() => {
  dir = mkdtempSync(join(tmpdir(), "ucx-ts-transfer-"));
});
test.after(() => rmSync(dir, { recursive: true, force: true }));

interface Receiver {
  child: ChildProcess;
  port: number;
  done: Promise<{ code: number | null; stdout: Buffer; stderr: string }>;
}

/** Start `ucx-ts recv` and learn its port from the line it prints on stderr. */
async function startReceiver(args: string[], env: Record<string, string> = {}): Promise<Receiver> {
  const [cmd, ...pre] = runtimeArgv(CLI);
  const child = spawn(cmd, [...pre, "recv", "--port", "0", "--quiet", ...args], { cwd: repoRoot, env: { ...process.env, ...env }, stdio: ["ignore", "pipe", "pipe"] });
  const out: Buffer[] = [];
  let stderr = "";
  child.stdout!.on("data", (d: Buffer) => out.push(d));
  const done = new Promise<{ code: number | null; stdout: Buffer; stderr: string }>((resolve) =>
    child.on("close", (code) => resolve({ code, stdout: Buffer.concat(out), stderr })),
  );
  const port = await new Promise<number>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`recv did not start: ${stderr}`)), 30_000);
    child.stderr!.on("data", (d) => {
      stderr += d;
      const m = /listening on port (\d+)/.exec(stderr);
      if (m) {
        clearTimeout(timer);
        resolve(Number(m[1]));
      }
    });
  });
  return { child, port, done };
}

const sha = (bytes: Uint8Array) => createHash("sha256").update(bytes).digest("hex");

function tree(root: string): string[] {
  const out: string[] = [];
  const walk = (p: string, rel: string) => {
    for (const name of readdirSync(p).sort()) {
      const full = join(p, name);
      const st = statSync(full);
      const mode = (st.mode & 0o777).toString(8);
      if (st.isDirectory()) {
        out.push(`${rel}${name}/ ${mode}`);
        walk(full, `${rel}${name}/`);
      } else out.push(`${rel}${name} ${mode} ${st.size} ${sha(readFileSync(full))}`);
    }
  };
  walk(root, "");
  return out;
}

test("a folder with odd names, modes and an empty file arrives identical", async () => {
  const src = join(dir, "tree");
  mkdirSync(join(src, "with space", "ünï ✓"), { recursive: true });
  writeFileSync(join(src, "empty"), "");
  writeFileSync(join(src, "with space", "a b.txt"), "hello\n");
  writeFileSync(join(src, "with space", "ünï ✓", "data.bin"), pattern(3_000_001, 5));
  chmodSync(join(src, "with space", "a b.txt"), 0o640);
  chmodSync(join(src, "with space"), 0o750);
  const out = join(dir, "out1");
  const r = await startReceiver(["--out", out]);
  const s = await runScript(CLI, ["send", src, `127.0.0.1:${r.port}`, "--quiet"], { timeoutMs: 60_000 });
  assert.is(s.code, 0, s.stderr);
  const got = await r.done;
  assert.is(got.code, 0, got.stderr);
  assert.equal(tree(join(out, "tree")), tree(src));
  assert.equal(readdirSync(join(out, "tree")).filter((n) => n.includes("partial")), []);
});

test("a 1 GiB sparse file streams through and is verified", async () => {
  const big = join(dir, "sparse.bin");
  writeFileSync(big, "head");
  truncateSync(big, 1 << 30);
  const out = join(dir, "out2");
  const r = await startReceiver(["--out", out]);
  const s = await runScript(CLI, ["send", big, `127.0.0.1:${r.port}`], { timeoutMs: 240_000 });
  assert.is(s.code, 0, s.stderr);
  assert.match(s.stderr, /send sparse\.bin: 1\.0 GiB of 1\.0 GiB \(100 %\)/); // the progress line
  const got = await r.done;
  assert.is(got.code, 0, got.stderr);
  assert.is(statSync(join(out, "sparse.bin")).size, 1 << 30);
  rmSync(big);
  rmSync(out, { recursive: true });
});

test("stdin to stdout", async () => {
  const data = pattern(2_500_000, 9);
  const r = await startReceiver(["--out", "-"]);
  const [cmd, ...pre] = runtimeArgv(CLI);
  const sender = spawn(cmd, [...pre, "send", "-", `127.0.0.1:${r.port}`, "--quiet"], { cwd: repoRoot, stdio: ["pipe", "ignore", "pipe"] });
  let err = "";
  sender.stderr!.on("data", (d) => (err += d));
  const exited = new Promise<number | null>((resolve) => sender.on("close", resolve));
  sender.stdin!.end(Buffer.from(data));
  assert.is(await exited, 0, err);
  const got = await r.done;
  assert.is(got.code, 0, got.stderr);
  assert.is(sha(got.stdout), sha(data));
});

test("a receiver killed mid-transfer leaves no file under the final name; the sender fails clearly", async () => {
  const big = join(dir, "victim.bin");
  writeFileSync(big, "x");
  truncateSync(big, 4 * 2 ** 30);
  const out = join(dir, "out3");
  const r = await startReceiver(["--out", out]);
  const sending = runScript(CLI, ["send", big, `127.0.0.1:${r.port}`, "--quiet"], { timeoutMs: 120_000 });
  // Kill the receiver once data is flowing (its temporary file has grown).
  const deadline = Date.now() + 60_000;
  for (;;) {
    const partial = existsSync(out) ? readdirSync(out).find((n) => n.includes("partial")) : undefined;
    if (partial && statSync(join(out, partial)).size > 0) break;
    if (Date.now() > deadline) throw new Error("no data reached the receiver");
    await new Promise((res) => setTimeout(res, 20));
  }
  r.child.kill("SIGKILL");
  const s = await sending;
  assert.is(s.code, 1, s.stderr);
  assert.match(s.stderr.trim(), /^ucx-ts send: UCS_ERR_\w+: .+$/m, s.stderr);
  assert.not.ok(existsSync(join(out, "victim.bin")), "no file under the final name");
  rmSync(big);
});

test("a checksum mismatch is refused: no file, both sides exit 1", async () => {
  const src = join(dir, "checked.txt");
  writeFileSync(src, "content that will not match its checksum\n");
  const out = join(dir, "out4");
  const r = await startReceiver(["--out", out]);
  const s = await runScript(CLI, ["send", src, `127.0.0.1:${r.port}`, "--quiet"], { env: { UCX_TS_TEST_CORRUPT_CHECKSUM: "1" }, timeoutMs: 60_000 });
  assert.is(s.code, 1);
  assert.match(s.stderr, /receiver refused checked\.txt: checksum mismatch/);
  const got = await r.done;
  assert.is(got.code, 1);
  assert.match(got.stderr, /refused checked\.txt/);
  assert.equal(readdirSync(out), []);
});

test("recv checks --out before listening: a regular file or an uncreatable folder fails at once, in one line", async () => {
  const file = join(dir, "a-file");
  writeFileSync(file, "x");
  for (const [out, why] of [[file, /cannot use --out .*a-file: not a folder/], [join(file, "sub"), /cannot create --out .*a-file\/sub: ENOTDIR/]] as const) {
    const r = await runScript(CLI, ["recv", "--port", "0", "--out", out], { timeoutMs: 30_000 });
    assert.is(r.code, 1, r.stderr);
    assert.match(r.stderr, why);
    assert.not.match(r.stderr, /listening/);
    assert.is(r.stderr.trimEnd().split("\n").length, 1, r.stderr);
  }
});

test("send checks its sources before connecting: a missing file is the error, not the connection", async () => {
  // Port 1 on 127.0.0.1 has no listener: had send connected first, the error would say so.
  const r = await runScript(CLI, ["send", join(dir, "no-such-file"), "127.0.0.1:1"], { timeoutMs: 30_000 });
  assert.is(r.code, 1, r.stderr);
  assert.match(r.stderr, /^ucx-ts send: cannot read .*no-such-file: ENOENT\n$/);
});

test("a side that fails mid-transfer tells the other why: one line each, no UCX warnings", async () => {
  const src = join(dir, "three-mib.bin");
  writeFileSync(src, pattern(3 << 20, 9));
  // The receiver's writes fail after 1.5 MB (a full disk, injected).
  const out = join(dir, "out-fail-write");
  const r = await startReceiver(["--out", out], { UCX_TS_TEST_FAIL_AFTER: String(1_500_000) });
  const s = await runScript(CLI, ["send", src, `127.0.0.1:${r.port}`, "--quiet"], { timeoutMs: 60_000 });
  const got = await r.done;
  assert.is(got.code, 1, got.stderr);
  assert.match(got.stderr, /^ucx-ts recv: cannot receive three-mib\.bin: ENOSPC.*$/m);
  assert.is(s.code, 1, s.stderr);
  assert.match(s.stderr, /^ucx-ts send: the receiver failed receiving three-mib\.bin: ENOSPC.*\n$/);
  for (const text of [got.stderr, s.stderr]) assert.not.match(text, /UCX +(WARN|ERROR)/);
  assert.equal(readdirSync(out), [], "no partial or final file left");

  // The sender's reads fail after 1.5 MB (a failing source, injected).
  const out2 = join(dir, "out-fail-read");
  const r2 = await startReceiver(["--out", out2]);
  const s2 = await runScript(CLI, ["send", src, `127.0.0.1:${r2.port}`, "--quiet"], { env: { UCX_TS_TEST_FAIL_AFTER: String(1_500_000) }, timeoutMs: 60_000 });
  const got2 = await r2.done;
  assert.is(s2.code, 1, s2.stderr);
  assert.match(s2.stderr, /^ucx-ts send: cannot read three-mib\.bin: EIO.*\n$/);
  assert.is(got2.code, 1, got2.stderr);
  assert.match(got2.stderr, /^ucx-ts recv: the sender failed sending three-mib\.bin: cannot read three-mib\.bin: EIO.*$/m);
  for (const text of [got2.stderr, s2.stderr]) assert.not.match(text, /UCX +(WARN|ERROR)/);
  assert.equal(readdirSync(out2), []);
});

test("usage errors exit 2 in one line", async () => {
  const s = await runScript(CLI, ["send", "only-one-arg"]);
  assert.is(s.code, 2);
  assert.match(s.stderr, /^ucx-ts send: .*needs at least one SOURCE and HOST:PORT.*\(ucx-ts send --help for usage\)\n$/);
  const r = await runScript(CLI, ["recv", "--port", "99999"]);
  assert.is(r.code, 2);
  const h = await runScript(CLI, ["recv", "--help"]);
  assert.is(h.code, 0);
  assert.match(h.stdout, /Examples:/);
});

test.run();
