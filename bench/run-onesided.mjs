// Put and active-message bandwidth: ucx-ts (per runtime and progress mode) against
// ucx_perftest -t ucp_put_bw / ucp_am_bw with the same sizes, in the same run, two processes on
// 127.0.0.1. Prints a table and writes bench/results/onesided-<time>.json.
//   node bench/run-onesided.mjs [--runtimes node,deno,bun] [--modes thread,polling] [--errors none]
//                               [--allocator ucx|js] [--quick] [--dist]
// --allocator: who allocates the target memory (default ucx, as ucx_perftest does).
import { mkdirSync, writeFileSync } from "node:fs";
import { cpus } from "node:os";
import { hasPerftest, options, pair, perftest, runtimeArgv } from "./processes.mjs";

const { opt, flag } = options(process.argv.slice(2), import.meta.url, ["allocator", "dist", "errors", "modes", "quick", "runtimes"]);
const quick = flag("quick");
const dist = flag("dist");
const runtimes = opt("runtimes", ["node", "deno", "bun"]);
const modes = opt("modes", ["thread", "polling"]);
const errors = opt("errors", ["none"]);
const plan = { sizes: [65536, 1 << 20], window: 16, rounds: quick ? 10 : 60 };
const allocator = opt("allocator", ["ucx"])[0];

const rows = [];
if (!hasPerftest()) console.log("ucx_perftest not found: no baseline");
else
  for (const e of errors)
    for (const size of plan.sizes)
      for (const [kind, test] of [["put_bw", "ucp_put_bw"], ["am_bw", "ucp_am_bw"]]) {
        const v = perftest(test, size, plan.window * plan.rounds * 4, e === "peer");
        if (v !== null) rows.push({ system: "ucx_perftest", mode: "-", errorHandling: e, kind, size, MBps: v.MBps });
      }
for (const runtime of runtimes)
  for (const mode of modes)
    for (const e of errors) {
      const peer = [...runtimeArgv(runtime), "bench/onesided-peer.ts"];
      try {
        const results = await pair([...peer, "server", mode, e], (port) => [...peer, "client", mode, e, String(port), JSON.stringify(plan)], { UCX_TS_BENCH_ALLOCATOR: allocator, ...(dist ? { UCX_TS_BENCH_DIST: "1" } : {}) });
        for (const r of results) rows.push({ system: `ucx-ts/${runtime}`, mode, errorHandling: e, ...r });
      } catch (err) {
        console.log(`ucx-ts/${runtime} ${mode} ${e}: FAILED ${err.message}`);
      }
    }

console.log(`\nPut and AM bandwidth, windows of ${plan.window}, target memory allocated by ${allocator}, two processes on 127.0.0.1, ${cpus().length} cores, ${new Date().toISOString()}`);
console.log("system          mode      errors  kind     size        MB/s   of ucx_perftest");
for (const r of rows) {
  const base = rows.find((x) => x.system === "ucx_perftest" && x.errorHandling === r.errorHandling && x.kind === r.kind && x.size === r.size);
  const pct = base && r.system !== "ucx_perftest" ? `${((r.MBps / base.MBps) * 100).toFixed(0)} %` : "";
  const size = r.size >= 1 << 20 ? `${r.size >> 20} MiB` : `${r.size >> 10} KiB`;
  console.log(`${r.system.padEnd(15)} ${r.mode.padEnd(9)} ${r.errorHandling.padEnd(7)} ${r.kind.padEnd(8)} ${size.padStart(7)} ${r.MBps.toFixed(0).padStart(10)}   ${pct.padStart(8)}`);
}
mkdirSync("bench/results", { recursive: true });
const file = `bench/results/onesided-${new Date().toISOString().replace(/[:.]/g, "-")}.json`;
writeFileSync(file, JSON.stringify({ plan, allocator, cores: cpus().length, rows }, null, 2));
console.log(`written ${file}`);
