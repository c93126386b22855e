/**
 * Minimal reproduction, without ucx-ts: each Node worker_thread that loads koffi leaves memory
 * behind when it ends (issue 26; why src/core/engine/thread-pool.ts reuses the engine's threads).
 *
 * koffi 3.3 creates its per-isolate state (`new InstanceData()` in InitModule: type tables, and
 * on the thread's first FFI call a 2 MiB call stack with a guard page and a 1 MiB heap, both
 * mmapped) and never deletes it: it is not handed to Node-API as instance data (older koffi called
 * `env.SetInstanceData`), and its env cleanup hook only releases the async broker. A thread's
 * teardown therefore frees none of it.
 *
 * Threads are started and ended one after another, in this process, in four variants, each in a
 * fresh child process:
 *   none        an empty thread (Node's own cost: flat)
 *   koffi       the thread requires koffi
 *   koffi-call  ... and makes one call through it (getpid from libc)
 *   tsx         the thread registers tsx's loader, as ucx-ts's threads do from TypeScript sources
 *               under Node (ffi/thread.ts); the library from dist/ does not
 * and prints, per thread after a warm-up of 50: malloc's bytes in use (mallinfo2), mappings in
 * /proc/self/maps, RSS.
 *
 *   node --expose-gc scripts/soak/koffi-thread-leak.mjs [threads=300] [variant]
 *
 * Measured 2026-11-26 23:33-23:37 UTC, load 2.2-4.9 (Node 20.20.2, koffi 3.3.4, 250 threads), per
 * thread: none +0.11 KiB malloc, -0.04 mappings; koffi +18.2 KiB, -0.04; koffi-call +22.7 KiB,
 * +2.96 mappings (4 KiB guard, 2 MiB + 4 KiB, 1 MiB: koffi's stack and heap); tsx +30.2 KiB,
 * +0.02. OS threads flat in all four: every thread was ended and joined.
 */
import { Worker } from "node:worker_threads";
import { readFileSync, readdirSync } from "node:fs";
import { createRequire } from "node:module";
import { spawnSync } from "node:child_process";
import { fileURLToPath, pathToFileURL } from "node:url";
import process from "node:process";

const WARMUP = 50;
const require = createRequire(import.meta.url);
const koffiPath = require.resolve("koffi");
const [threadsArg = "300", variant] = process.argv.slice(2);
const threads = Math.max(WARMUP + 10, Number(threadsArg));

if (!variant) {
  // One child per variant: a variant's leftovers must not count in the next one's figures.
  for (const v of ["none", "koffi", "koffi-call", "tsx"]) {
    const r = spawnSync(process.execPath, ["--expose-gc", fileURLToPath(import.meta.url), String(threads), v], { stdio: "inherit" });
    if (r.status !== 0) process.exit(r.status ?? 1);
  }
  process.exit(0);
}

const tsxApi = pathToFileURL(require.resolve("tsx/esm/api").replace(/\.cjs$/, ".mjs")).href;
const code = {
  none: "",
  koffi: `require(${JSON.stringify(koffiPath)});`,
  "koffi-call": `const k = require(${JSON.stringify(koffiPath)}); k.load("libc.so.6").func("int getpid()")();`,
  tsx: `import(${JSON.stringify(tsxApi)}).then((m) => m.register());`,
}[variant];
if (code === undefined) throw new Error(`unknown variant ${variant}`);

// The measuring side uses koffi too (mallinfo2), loaded once on the main thread before the loop.
const koffi = require("koffi");
koffi.struct("mallinfo2_t", { arena: "size_t", ordblks: "size_t", smblks: "size_t", hblks: "size_t", hblkhd: "size_t", usmblks: "size_t", fsmblks: "size_t", uordblks: "size_t", fordblks: "size_t", keepcost: "size_t" });
const mallinfo2 = koffi.load("libc.so.6").func("mallinfo2_t mallinfo2()");
const mallocKiB = () => {
  const m = mallinfo2();
  return (Number(m.uordblks) + Number(m.hblkhd)) / 1024;
};
const snap = () => {
  globalThis.gc?.();
  return {
    mallocKiB: mallocKiB(),
    maps: readFileSync("/proc/self/maps", "utf8").trim().split("\n").length,
    rssKiB: process.memoryUsage().rss / 1024,
    threads: readdirSync("/proc/self/task").length,
  };
};

let first;
for (let i = 0; i < threads; i++) {
  const w = new Worker(code, { eval: true });
  await new Promise((resolve, reject) => {
    w.once("exit", resolve);
    w.once("error", reject);
  });
  if (i + 1 === WARMUP) first = snap();
}
const last = snap();
const n = threads - WARMUP;
const per = (k) => Math.round(((last[k] - first[k]) / n) * 100) / 100;
console.log(JSON.stringify({ variant, threads, perThread: { mallocKiB: per("mallocKiB"), maps: per("maps"), rssKiB: per("rssKiB") }, osThreads: { first: first.threads, last: last.threads } }));
