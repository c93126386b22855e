// GPU benchmark (issue 25): GPU-to-GPU bandwidth between two processes on 127.0.0.1 against, in
// the same run, host-to-host bandwidth and cudaMemcpy device-to-host speed (the staging copy).
// Target: staged GPU-to-GPU at least 80% of host-to-host at 64 MiB and above.
//   node bench/run-gpu.mjs [--sizes 1048576,67108864,268435456] [--quick] [--error-handling peer|none]
// --error-handling none lets UCX use shared memory between the two processes (peer, the library's
// default, keeps to transports that report a dead peer: tcp on a machine without RDMA).
// Needs the built package (npm run build) and a libcudart: the real one on a GPU machine, or
// UCX_TS_CUDART naming the stand-in, whose figures are NOT GPU figures (the table says so).
// Writes bench/results/gpu-<time>.json. Plain JavaScript: the device machine runs it with a bare
// node binary (scripts/device-pack.sh).
import { spawn } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import { cpus } from "node:os";
import process from "node:process";

const argv = process.argv.slice(2);
const opt = (name, def) => {
  const i = argv.indexOf(`--${name}`);
  return i >= 0 ? argv[i + 1] : def;
};
const quick = argv.includes("--quick");
const errorHandling = opt("error-handling", "peer");
if (!["peer", "none"].includes(errorHandling)) {
  console.error(`--error-handling must be peer or none, got '${errorHandling}'`);
  process.exit(2);
}
const plan = {
  sizes: opt("sizes", quick ? "1048576,67108864" : "1048576,16777216,67108864,268435456").split(",").map(Number),
  rounds: quick ? 5 : 20,
  warmup: quick ? 1 : 3,
  bytesPerPoint: quick ? 2 ** 28 : 2 ** 31,
};
const peer = new URL("./gpu-peer.mjs", import.meta.url).pathname;

function start(args) {
  const env = { ...process.env, UCX_TS_BENCH_ERROR_HANDLING: errorHandling };
  const child = spawn(process.execPath, [peer, ...args], { stdio: ["ignore", "pipe", "pipe"], env });
  let out = "";
  let err = "";
  child.stdout.on("data", (d) => (out += d));
  child.stderr.on("data", (d) => (err += d));
  const done = new Promise((resolve, reject) =>
    child.on("close", (code) => (code === 0 ? resolve(out) : reject(new Error(`gpu-peer ${args[0]} exited ${code}: ${err.slice(-800)}`)))),
  );
  return { child, done, out: () => out };
}

const server = start(["server"]);
let result;
try {
  const port = await new Promise((resolve, reject) => {
    const timer = setInterval(() => {
      const m = /\{"port":(\d+)\}/.exec(server.out());
      if (m) {
        clearInterval(timer);
        resolve(Number(m[1]));
      }
    }, 20);
    server.done.catch((e) => {
      clearInterval(timer);
      reject(e);
    });
  });
  const out = await start(["client", String(port), JSON.stringify(plan)]).done;
  result = JSON.parse(out.split("\n").filter((l) => l.startsWith('{"cuda"')).pop());
  await server.done;
} finally {
  server.child.kill("SIGKILL");
}

const standin = /standin/.test(result.cuda.library ?? "");
console.log(`\nGPU transfers, two processes on 127.0.0.1, error handling ${errorHandling}, ${cpus().length} cores, ${new Date().toISOString()}`);
console.log(`libcudart: ${result.cuda.library} (${result.cuda.deviceCount} device(s)); device memory path: ${result.path}`);
if (standin) console.log("*** STAND-IN libcudart: host memory pretending to be a GPU. These are NOT GPU figures. ***");
console.log("size         variant            median ms      MB/s   vs host-to-host   vs cudaMemcpy D2H");
for (const r of result.rows) {
  const same = (v) => result.rows.find((x) => x.size === r.size && x.variant === v);
  const ratio = (b) => (b ? `${((100 * r.MBps) / b.MBps).toFixed(0)}%` : "");
  console.log(
    `${String(r.size).padEnd(12)} ${r.variant.padEnd(16)} ${r.medianMs.toFixed(3).padStart(11)} ${r.MBps.toFixed(0).padStart(9)}   ${ratio(same("host-to-host")).padStart(15)}   ${ratio(same("cudaMemcpy-D2H")).padStart(17)}`,
  );
}
console.log("(target: gpu-to-gpu at least 80% of host-to-host at 64 MiB and above)");
mkdirSync("bench/results", { recursive: true });
const file = `bench/results/gpu-${new Date().toISOString().replace(/[:.]/g, "-")}.json`;
writeFileSync(file, JSON.stringify({ plan, errorHandling, cores: cpus().length, standin, ...result }, null, 2));
console.log(`written ${file}`);
