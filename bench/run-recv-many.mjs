// recvMany against per-message receives (issue 21), into the same receive buffers, between two
// processes on 127.0.0.1, per runtime and progress mode (bench/recv-many-peer.ts: the variants).
// Variants alternate A/B/A/B over --repeat runs. Prints a table and writes
// bench/results/recv-many-<time>.json.
//   node bench/run-recv-many.mjs [--runtimes node,deno,bun] [--modes thread,hybrid,polling]
//        [--errors none] [--size 1048576] [--window 16] [--rounds 200] [--variants many,recvs,serial,reuse]
//        [--repeat 2] [--dist]
import { mkdirSync, writeFileSync } from "node:fs";
import { loadavg } from "node:os";
import { options, pair, runtimeArgv } from "./processes.mjs";

const { opt, flag } = options(process.argv.slice(2), import.meta.url, ["dist", "errors", "modes", "repeat", "rounds", "runtimes", "size", "variants", "window"]);
const runtimes = opt("runtimes", ["node"]);
const modes = opt("modes", ["thread", "hybrid", "polling"]);
const errors = opt("errors", ["none"]);
const size = Number(opt("size", ["1048576"])[0]);
const window = Number(opt("window", ["16"])[0]);
const rounds = Number(opt("rounds", ["200"])[0]);
const repeat = Number(opt("repeat", ["2"])[0]);
const variants = opt("variants", ["many", "recvs", "serial", "reuse"]);
const env = flag("dist") ? { UCX_TS_BENCH_DIST: "1" } : {};

const rows = [];
for (const runtime of runtimes)
  for (const mode of modes)
    for (const e of errors) {
      const peer = [...runtimeArgv(runtime), "bench/recv-many-peer.ts"];
      for (let k = 0; k < repeat; k++) {
        // Alternate the order run by run, so drift in the machine's load hits every variant.
        const order = k % 2 ? [...variants].reverse() : variants;
        const plan = { size, window, rounds, warmup: Math.max(5, rounds / 10), variants: order };
        const results = await pair([...peer, "server", mode, e], (port) => [...peer, "client", mode, e, String(port), JSON.stringify(plan)], env);
        for (const r of results) rows.push({ runtime, mode, errors: e, run: k, variant: r.kind, size, window, MBps: r.value, serverCpuUs: r.serverCpuUs, clientCpuUs: r.clientCpuUs, load: loadavg()[0] });
      }
    }

console.log(`recvMany vs per-message receives, ${size} B x ${window} a window, ${rounds} windows, two processes`);
console.log("runtime  mode      errors  variant  MB/s (each run)           receiver CPU us/msg    sender CPU us/msg      load");
for (const runtime of runtimes)
  for (const mode of modes)
    for (const e of errors)
      for (const v of variants) {
        const mine = rows.filter((r) => r.runtime === runtime && r.mode === mode && r.errors === e && r.variant === v);
        console.log(
          `${runtime.padEnd(8)} ${mode.padEnd(9)} ${e.padEnd(7)} ${v.padEnd(8)} ${mine.map((r) => r.MBps.toFixed(0).padStart(6)).join(" ").padEnd(25)} ${mine.map((r) => r.serverCpuUs.toFixed(0).padStart(5)).join(" ").padEnd(22)} ${mine.map((r) => r.clientCpuUs.toFixed(0).padStart(5)).join(" ").padEnd(22)} ${mine.map((r) => r.load.toFixed(2)).join(" ")}`,
        );
      }
mkdirSync("bench/results", { recursive: true });
const file = `bench/results/recv-many-${new Date().toISOString().replace(/[:.]/g, "-")}.json`;
writeFileSync(file, JSON.stringify(rows, null, 2));
console.log(`written ${file}`);
