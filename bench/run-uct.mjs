// UCT-level latency and bandwidth per transport: `ucx-ts perf --layer uct` (am_lat, am_bw,
// put_bw; two processes) against ucx_perftest's uct-level tests (-t TEST -x TRANSPORT -d DEVICE,
// same size, count and data layout) in the same run, printed as ratios. Writes
// bench/results/uct-<time>.json.
//   node bench/run-uct.mjs [--runtimes node,deno,bun] [--transports posix/memory,sysv/memory,tcp/lo,cma/memory]
//                          [--sizes 8,4096] [--iterations 20000] [--quick]
import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { cpus, tmpdir } from "node:os";
import { join } from "node:path";
import { hasPerftest, options, run, runtimeArgv } from "./processes.mjs";

const { opt, flag } = options(process.argv.slice(2), import.meta.url, ["iterations", "quick", "runtimes", "sizes", "transports"]);
const quick = flag("quick");
const runtimes = opt("runtimes", ["node", "deno", "bun"]);
const transports = opt("transports", ["posix/memory", "sysv/memory", "tcp/lo", "cma/memory"]);
const sizes = opt("sizes", ["8", "4096"]);
const iterations = opt("iterations", [quick ? "2000" : "20000"])[0];

if (!hasPerftest()) console.log("ucx_perftest not found: no baseline, ucx-ts numbers only");
const rows = [];
const dir = join(tmpdir(), `ucx-ts-bench-uct-${process.pid}`);
mkdirSync(dir, { recursive: true });
try {
  for (const [i, runtime] of runtimes.entries()) {
    for (const td of transports) {
      const [transport, device] = td.split("/");
      const file = join(dir, `${runtime}-${transport}.json`);
      // the baseline once per transport (with the first runtime), in the same run
      const compare = i === 0 && hasPerftest() ? ["--compare"] : [];
      try {
        await run([...runtimeArgv(runtime), "src/cli/index.ts", "perf", "--layer", "uct", "--transport", transport, "--device", device,
          "--sizes", sizes.join(","), "--iterations", iterations, "--json", file, ...compare]);
        for (const r of JSON.parse(readFileSync(file, "utf8")).rows) rows.push({ transport: td, ...r });
      } catch (err) {
        console.log(`${runtime} ${td}: FAILED ${err.message}`);
      }
    }
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}

console.log(`\nUCT level, two processes on one host, ${iterations} messages a point, ${cpus().length} cores, ${new Date().toISOString()}`);
console.log("latency: median half round trip (ucx_perftest's typical); ratio = ucx-ts / ucx_perftest (latency: higher is slower; MB/s: lower is slower)");
console.log("transport      system          test     size  layout   latency us        MB/s    ratio");
for (const r of rows) {
  const base = rows.find((b) => b.system === "ucx_perftest" && b.transport === r.transport && b.test === r.test && b.size === r.size);
  const ratio = base && r.system !== "ucx_perftest" ? (r.latencyUs !== undefined ? r.latencyUs / base.latencyUs : r.MBps / base.MBps).toFixed(3) : "";
  console.log(`${r.transport.padEnd(14)} ${r.system.padEnd(15)} ${r.test.padEnd(7)} ${String(r.size).padStart(6)}  ${r.layout.padEnd(6)} ${(r.latencyUs?.toFixed(3) ?? "").padStart(11)} ${(r.MBps?.toPrecision(4) ?? "").padStart(11)}   ${ratio}`);
}
mkdirSync("bench/results", { recursive: true });
const out = `bench/results/uct-${new Date().toISOString().replace(/[:.]/g, "-")}.json`;
writeFileSync(out, JSON.stringify({ iterations, sizes, cores: cpus().length, rows }, null, 2));
console.log(`written ${out}`);
