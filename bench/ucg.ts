// Collectives benchmark (issue 23): allreduce, bcast and alltoall latency from 8 B to 4 MiB at
// 2, 4 and 8 ranks (`launch()`, one process per rank, this runtime; bench/ucg-rank.ts), and one
// 8 B allreduce taken apart per step against the point-to-point round trip. With --compare-mpi,
// Open MPI over UCX runs the same collectives at the same sizes and ranks in the same run
// (bench/mpi/coll-lat.c, built here with mpicc; scripts/setup-mpi installs Open MPI when it can)
// and the table puts the two side by side.
//   node --import tsx bench/ucg.ts [--compare-mpi] [--quick] [--phases] [--ranks 2,4,8]
//        [--sizes 8,...] [--errors peer|none] [--progress hybrid|blocking|polling|thread] [--json FILE]
//        [--allreduce-plans 0,1,2,3,4]
//   --quick   2 and 4 ranks, 8 B and 1 MiB, a fifth of the iterations: a smoke run (~1 min)
//   --phases  only the per-step breakdown of one 8 B allreduce (and the p2p round trip)
//   --allreduce-plans  allreduce only, once per listed plan id (UCX_TS_SW_* etc. pass through to the ranks)
//   UCG_BENCH_MPI_BINARY=path  a prebuilt bench/mpi/coll-lat for --compare-mpi (mpirun but no mpicc here)
import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { cpus, loadavg, tmpdir } from "node:os";
import { dirname, join } from "node:path";
import process from "node:process";
import { parseArgs } from "node:util";
import { launch } from "../src/ucg/launcher.ts";

// Options through parseArgs (strict): an unknown or misspelt option is refused with the usage
// above instead of silently running the whole (minutes-long) benchmark; --help prints the usage.
const usage = (): string =>
  readFileSync(new URL(import.meta.url), "utf8")
    .split("\n")
    .filter((line, i, lines) => lines.slice(0, i + 1).every((l) => l.startsWith("//")))
    .map((line) => line.replace(/^\/\/ ?/, ""))
    .join("\n");
const FLAGS = ["compare-mpi", "quick", "phases", "help"] as const;
const VALUES = ["ranks", "sizes", "errors", "progress", "json", "allreduce-plans"] as const;
let parsed: ReturnType<typeof parseArgs>["values"];
try {
  parsed = parseArgs({
    args: process.argv.slice(2),
    options: Object.fromEntries([...FLAGS.map((f) => [f, { type: "boolean" }]), ...VALUES.map((v) => [v, { type: "string" }])]),
    strict: true,
    allowPositionals: false,
  }).values;
} catch (e) {
  console.error(`${(e as Error).message}\nthe options are:\n${usage()}`);
  process.exit(2);
}
if (parsed.help) {
  console.log(usage());
  process.exit(0);
}
const has = (name: (typeof FLAGS)[number]): boolean => parsed[name] === true;
const arg = (name: (typeof VALUES)[number], dflt: string): string => (parsed[name] as string | undefined) ?? dflt;
const quick = has("quick");
const phasesOnly = has("phases");
const compareMpi = has("compare-mpi");
const ranks = arg("ranks", quick ? "2,4" : "2,4,8").split(",").map(Number);
// 8 B to 4 MiB (the range) in steps of 16x, with 1 MiB (a target's threshold): the same
// list on both sides.
const sizes = arg("sizes", quick ? "8,1048576" : "8,128,2048,32768,524288,1048576,4194304");
const scale = quick ? 0.2 : 1;
const errors = arg("errors", "peer");
// Empty: UCX_TS_UCG_PROGRESS if set, else the launcher's choice (polling with more ranks than
// CPUs: src/ucg/oversubscription.ts), else the context's default (blocking).
const progress = arg("progress", "");
const allreducePlans = arg("allreduce-plans", "");
const load = () => loadavg().map((l) => l.toFixed(2)).join(" ");

/** Open MPI's run: pml ucx on whatever UCX finds (no InfiniBand here: tls/devices "any"). */
const MPI_OPTIONS = [
  "--allow-run-as-root", "--oversubscribe",
  "--mca", "pml", "ucx", "--mca", "pml_ucx_tls", "any", "--mca", "pml_ucx_devices", "any",
  // No InfiniBand: keep the openib BTL from probing and warning.
  "--mca", "btl", "^openib",
  // 8 ranks on 2 cores: a rank waiting in MPI yields its core rather than spin on it.
  "--mca", "mpi_yield_when_idle", "1",
];

type Point = { coll: string; ranks: number; bytes: number; iters: number; mean_us: number; median_us: number; plan?: string };

function buildMpi(): { binary: string; dir?: string } {
  // A prebuilt coll-lat (a machine with mpirun but no mpicc, e.g. the device machine's pack).
  const prebuilt = process.env.UCG_BENCH_MPI_BINARY;
  if (prebuilt) return { binary: prebuilt };
  const setup = spawnSync("sh", ["scripts/setup-mpi"], { stdio: "inherit" });
  if (setup.status !== 0) {
    console.error("--compare-mpi: Open MPI is not installed and scripts/setup-mpi could not install it (see above)");
    process.exit(1);
  }
  const dir = mkdtempSync(join(tmpdir(), "ucx-ts-coll-lat-"));
  const binary = join(dir, "coll-lat");
  const cc = spawnSync("mpicc", ["-O2", "-o", binary, "bench/mpi/coll-lat.c"], { encoding: "utf8" });
  if (cc.status !== 0) {
    console.error(`mpicc failed:\n${cc.stderr}`);
    process.exit(1);
  }
  return { binary, dir };
}

function runMpi(binary: string, n: number): Point[] {
  const argv = [...MPI_OPTIONS, "-n", String(n), binary, sizes, String(scale)];
  const r = spawnSync("mpirun", argv, { encoding: "utf8", timeout: 600_000 });
  const points = (r.stdout ?? "").split("\n").filter((l) => l.startsWith("{")).map((l) => JSON.parse(l) as Point);
  if (r.status !== 0 || points.length === 0) console.log(`Open MPI at ${n} ranks failed (status ${r.status}):\n${(r.stderr ?? "").split("\n").slice(-15).join("\n")}`);
  return points;
}

async function runUcxTs(n: number): Promise<{ size: number; rows: Point[]; phases: Phases } | undefined> {
  const lines: string[] = [];
  const r = await launch({
    n,
    // The bundle (scripts/device-pack.sh: plain JavaScript for a bare node) runs the bundled rank.
    script: import.meta.url.endsWith(".ts") ? "bench/ucg-rank.ts" : "bench/ucg-rank.mjs",
    env: { UCG_BENCH_SIZES: sizes, UCG_BENCH_ERRORS: errors, UCG_BENCH_PROGRESS: progress || undefined, UCG_BENCH_SCALE: String(scale), UCG_BENCH_PHASES_ONLY: phasesOnly ? "1" : undefined, UCG_BENCH_ALLREDUCE_PLANS: allreducePlans || undefined },
    timeoutMs: 900_000,
    onLine: (rank, _s, l) => lines.push(`[${rank}] ${l}`),
  });
  const line = lines.find((l) => l.includes("UCG_BENCH "));
  if (r.code !== 0 || !line) {
    console.log(`ucx-ts at ${n} ranks failed (status ${r.code}):\n${lines.slice(-20).join("\n")}`);
    return undefined;
  }
  return JSON.parse(line.slice(line.indexOf("UCG_BENCH ") + 10));
}

interface Phases {
  plan: string;
  total_us: number;
  steps: { transfers: number; post_us: number; wait_us: number; reduce_us: number }[];
  p2pRoundTripUs?: number;
}

function printPhases(n: number, p: Phases): void {
  const exchanges = p.steps.filter((s) => s.transfers > 0).length;
  console.log(`  one 8 B allreduce at ${n} ranks (${p.plan}, rank 0, medians): ${p.total_us} us in all`);
  p.steps.forEach((s, i) => console.log(`    step ${i}: ${s.transfers} transfers  posted ${s.post_us} us  completed +${s.wait_us} us  reduce/copy ${s.reduce_us} us`));
  if (p.p2pRoundTripUs !== undefined) {
    console.log(`    p2p round trip 0<->1 on the same channel: ${p.p2pRoundTripUs} us; ${exchanges} exchange step(s) x one-way (${(p.p2pRoundTripUs / 2).toFixed(1)} us) = ${(exchanges * p.p2pRoundTripUs / 2).toFixed(1)} us is what the algorithm needs from the engine`);
  }
}

const started = new Date();
const loadBefore = load();
console.log(`collectives benchmark ${started.toISOString()}: ${cpus().length} cores, load ${loadBefore}, ucx-ts error handling ${errors}, progress ${progress || "default"}${quick ? ", --quick" : ""}`);
const mpi = compareMpi && !phasesOnly ? buildMpi() : undefined;
if (mpi) console.log(`Open MPI: mpirun ${MPI_OPTIONS.join(" ")} -n N coll-lat`);

const table: { coll: string; ranks: number; bytes: number; mpi?: Point; ucxTs?: Point; ratio?: number }[] = [];
const phases: Record<number, Phases> = {};
try {
  for (const n of ranks) {
    const mpiPoints = mpi ? runMpi(mpi.binary, n) : [];
    const ours = await runUcxTs(n);
    if (ours) phases[n] = ours.phases;
    const ucxPoints = ours?.rows ?? [];
    for (const u of ucxPoints) {
      const m = mpiPoints.find((p) => p.coll === u.coll && p.bytes === u.bytes);
      table.push({ coll: u.coll, ranks: n, bytes: u.bytes, mpi: m, ucxTs: u, ratio: m ? Math.round((u.median_us / m.median_us) * 100) / 100 : undefined });
    }
    for (const m of mpiPoints) if (!ucxPoints.some((u) => u.coll === m.coll && u.bytes === m.bytes)) table.push({ coll: m.coll, ranks: n, bytes: m.bytes, mpi: m });
    console.log(`  ${n} ranks done (load ${load()})`);
  }
} finally {
  if (mpi?.dir) rmSync(mpi.dir, { recursive: true, force: true });
}

/** The targets: at most 2x Open MPI at 8 B, within 20 % from 1 MiB. */
const target = (bytes: number) => (bytes <= 8 ? 2 : bytes >= 1 << 20 ? 1.2 : undefined);
if (!phasesOnly) {
  console.log(`\n${"collective".padEnd(10)} ${"ranks".padStart(5)} ${"bytes".padStart(8)} ${"Open MPI us".padStart(12)} ${"ucx-ts us".padStart(11)} ${"ratio".padStart(7)}  target  ucx-ts plan`);
  for (const row of table) {
    const t = target(row.bytes);
    const verdict = t === undefined || row.ratio === undefined ? "" : row.ratio <= t ? `<=${t}x ok` : `<=${t}x MISSED`;
    console.log(`${row.coll.padEnd(10)} ${String(row.ranks).padStart(5)} ${String(row.bytes).padStart(8)} ${(row.mpi ? row.mpi.median_us.toFixed(1) : "-").padStart(12)} ${(row.ucxTs ? row.ucxTs.median_us.toFixed(1) : "-").padStart(11)} ${(row.ratio === undefined ? "-" : row.ratio.toFixed(2)).padStart(7)}  ${verdict.padEnd(14)}  ${row.ucxTs?.plan ?? ""}`);
  }
  console.log("(medians over the calls, the slowest rank's; the JSON also has the means)");
}
console.log("");
for (const n of ranks) if (phases[n]) printPhases(n, phases[n]!);

const file = arg("json", `bench/results/ucg-${started.toISOString().replace(/[:.]/g, "-")}.json`);
mkdirSync(dirname(file), { recursive: true });
writeFileSync(file, JSON.stringify({ date: started.toISOString(), cores: cpus().length, loadBefore, loadAfter: load(), errors, progress, quick, sizes, mpirun: mpi ? ["mpirun", ...MPI_OPTIONS] : undefined, table, phases }, null, 2));
console.log(`\nwritten: ${file}`);
