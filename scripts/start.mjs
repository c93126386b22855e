// `npm start`: the main job, after scripts/setup has installed what is missing and built dist/.
// 1. The transfer demo: two processes exchange verified tagged messages of growing size over
//    UCX, timed against node:net (`node bin/ucx-ts.mjs demo --help`). Extra arguments go to it:
//    `npm start -- --mode polling --max-size 1MiB`.
// 2. A short `ucx-ts perf --compare`: latency and bandwidth against ucx_perftest and node:net in
//    the same run, drawn to perf.svg (the path is printed).
import { spawnSync } from "node:child_process";
import { resolve } from "node:path";

const run = (args) => {
  const r = spawnSync(process.execPath, ["bin/ucx-ts.mjs", ...args], { stdio: "inherit" });
  if (r.error) console.error(`npm start: ${r.error.message}`);
  return r.status ?? 1;
};
const demo = run(["demo", ...process.argv.slice(2)]);
if (demo !== 0) process.exit(demo);
console.log("\nLatency and bandwidth against ucx_perftest and node:net (ucx-ts perf --compare):");
const svg = resolve("perf.svg");
process.exit(run(["perf", "--compare", "--tests", "tag_lat,tag_bw", "--sizes", "8,1K,64K,1M", "--iterations", "300", "--plot", svg]));
