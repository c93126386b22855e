// Where a small collective's time goes when ranks outnumber cores (issue 23): per rank, what one
// barrier + 8 B allreduce iteration costs in CPU and in waiting on a run queue (schedstat), the
// progress calls and sched_yield()s it makes (bench/ucg-cpu-rank.ts), and with --mpi the same
// loop under Open MPI (bench/mpi/coll-cpu.c, built here with mpicc) in the same run. On an
// oversubscribed host a rank's latency is the CPU its core's other ranks burn between its turns.
//   node --import tsx bench/ucg-cpu.ts [--ranks 4] [--iters 2000] [--progress blocking|polling] [--mpi]
// (--progress: default the launcher's choice, oversubscription.ts.)
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import process from "node:process";
import { parseArgs } from "node:util";
import { launch } from "../src/ucg/launcher.ts";
import { parseLaunchProgress } from "../src/ucg/oversubscription.ts";

const { values } = parseArgs({ options: { ranks: { type: "string", default: "4" }, iters: { type: "string", default: "2000" }, progress: { type: "string", default: "auto" }, mpi: { type: "boolean", default: false } }, strict: true });
const n = Number(values.ranks);
const iters = String(Math.max(1, Number(values.iters)));
const load = () => loadavg().map((l) => l.toFixed(2)).join(" ");
type Row = { rank: number; mode?: string; allreduce_median_us: number; wall_us: number; cpu_us: number; runq_us: number; slices: number; [k: string]: unknown };
const print = (who: string, rows: Row[]) => {
  rows.sort((a, b) => a.rank - b.rank);
  for (const r of rows) {
    const rest = Object.entries(r).filter(([k]) => !["rank", "size", "mode", "allreduce_median_us", "wall_us", "cpu_us", "runq_us", "slices"].includes(k)).map(([k, v]) => `${k} ${v}`).join("  ");
    console.log(`${who.padEnd(16)} rank ${r.rank}: allreduce median ${r.allreduce_median_us} us; per barrier+allreduce: wall ${r.wall_us} us, CPU ${r.cpu_us} us, run queue ${r.runq_us} us, slices ${r.slices}  ${rest}`);
  }
};

console.log(`${n} ranks, ${iters} iterations, load ${load()}`);
if (values.mpi) {
  const dir = mkdtempSync(join(tmpdir(), "ucx-ts-coll-cpu-"));
  try {
    const binary = join(dir, "coll-cpu");
    const cc = spawnSync("mpicc", ["-O2", "-o", binary, "bench/mpi/coll-cpu.c"], { encoding: "utf8" });
    if (cc.status !== 0) throw new Error(`mpicc failed (scripts/setup-mpi installs it): ${cc.stderr ?? cc.error}`);
    // As bench/ucg.ts runs Open MPI: pml ucx on any device, yielding when idle.
    const argv = ["--allow-run-as-root", "--oversubscribe", "--mca", "pml", "ucx", "--mca", "pml_ucx_tls", "any", "--mca", "pml_ucx_devices", "any", "--mca", "btl", "^openib", "--mca", "mpi_yield_when_idle", "1", "-n", String(n), binary, iters];
    const r = spawnSync("mpirun", argv, { encoding: "utf8", timeout: 300_000 });
    print("Open MPI", (r.stdout ?? "").split("\n").filter((l) => l.startsWith("{")).map((l) => JSON.parse(l) as Row));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
const rows: Row[] = [];
const progress = parseLaunchProgress(values.progress);
const r = await launch({
  n,
  script: "bench/ucg-cpu-rank.ts",
  progress,
  env: { UCG_CPU_ITERS: iters },
  timeoutMs: 300_000,
  onLine: (_rank, _s, l) => void (l.startsWith("UCG_CPU ") && rows.push(JSON.parse(l.slice(8)) as Row)),
});
if (r.code !== 0) console.log(`ucx-ts ranks failed (status ${r.code})`);
print(`ucx-ts ${rows[0]?.mode ?? ""}`, rows);
console.log(`load ${load()}`);
