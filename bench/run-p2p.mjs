// Point-to-point benchmark: ucx-ts (per runtime, progress mode and error handling) against
// ucx_perftest (tag_lat / tag_bw, with -e for peer error handling), node:net and each runtime's
// FFI floor (bench/ffi-floor-peer.ts: the same UCX calls, no engine) and Promise floor (the same
// peer with one awaited Promise per receive: latency rows only), all measured
// in this run between two processes on 127.0.0.1. Prints a table and writes
// bench/results/p2p-<time>.json.
//   node bench/run-p2p.mjs [--runtimes node,deno,bun] [--modes polling,thread,blocking,hybrid,requests]
//                          [--errors none,peer] [--quick] [--dist] [--rtt8]
//   (mode "requests": polling, with the latency rows through UcxRequests: no Promise per message)
//   --rtt8: only 10,000 8 B round trips (median, p90, p99, p99.9, the share above 5x the median and
//     its longest run: bench/rtt-tail.ts), nothing else
//   --plan '<json>': this plan instead ({"latency":[[size,n]],"bandwidth":[[size,window,rounds]],
//     "am":[[size,window,rounds]],"amMany":[[size,window,rounds]]}, lists may be empty), e.g. one
//     mode question in one short run ("amMany": one ep.amSendMany a window instead of amSends)
//   UCX_TS_BENCH_WINDOWS=<prefix>: both peers of the windowed rows (ucx-ts and FFI floor) write
//     per-window times, main-thread CPU, run-queue wait and GC pauses (bench/window-trace.ts);
//     `node bench/window-report.mjs <prefix>` says where the slow windows' time went
//   node bench/run-p2p.mjs --profile [--runtimes ...] [--modes ...] [--rounds 10000]
//     instead: where one 8 B send+receive's time goes, per runtime and mode (bench/profile.ts)
//   node bench/run-p2p.mjs --turnaround [--runtimes ...] [--modes ...] [--errors ...] [--rounds 20000]
//     instead: where an 8 B round trip's time goes between the two processes, per side (the FFI
//     floor's and ucx-ts's, each runtime and mode): UCX reported the receive -> its Promise
//     resolved -> the caller resumed -> the next send posted, and the time away (src/core/turnaround.ts)
import { hasPerftest, options, pair, perftest, run, runtimeArgv } from "./processes.mjs";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { cpus, loadavg, tmpdir } from "node:os";
import { join } from "node:path";

const { opt, flag } = options(process.argv.slice(2), import.meta.url, ["dist", "errors", "modes", "plan", "profile", "quick", "rounds", "rtt8", "runtimes", "turnaround"]);
const quick = flag("quick");
const dist = flag("dist");
const runtimes = opt("runtimes", ["node", "deno", "bun"]);
const modes = opt("modes", ["polling", "thread", "blocking", "hybrid"]);
const errors = opt("errors", ["none", "peer"]);
const n = (x) => (quick ? Math.max(20, Math.round(x / 10)) : x);
/** Windows of the 8 B rows (tag and AM), with or without --quick (see the plan below). */
const RATE_WINDOWS = 200;
/**
 * The least a bulk row (64 KiB and up) moves, with or without --quick. With --quick's tenth, the
 * 64 KiB rows moved 20 MiB: 2-7 ms at 3-10 GB/s, one scheduler time slice, so one preemption of
 * either process (or of ucx_perftest's, which runs the same count) set the row's figure: 64 KiB
 * AM read 1.3-3.0 GB/s and Bun's tag rows 3.2-6.9 in runs minutes apart (2026-12-07).
 */
const ROW_BYTES = 256 << 20;
/** [size, window, rounds]: `rounds` (a tenth with --quick), raised to move ROW_BYTES at least. */
const bulk = (size, window, rounds) => [size, window, Math.max(n(rounds), Math.ceil(ROW_BYTES / (size * window)))];
if (flag("profile")) {
  await profile();
  process.exit(0);
}
if (flag("turnaround")) {
  await turnaround();
  process.exit(0);
}
// --rtt8: only the 8 B round trip, 10,000 times (the tail: p99 and p99.9 beside the median).
const plan = opt("plan", undefined)
  ? { latency: [], bandwidth: [], am: [], amMany: [], ...JSON.parse(process.argv[process.argv.indexOf("--plan") + 1]) }
  : flag("rtt8")
  ? { latency: [[8, 10000]], bandwidth: [], am: [], amMany: [] }
  : {
      latency: [[8, n(2000)], [1024, n(2000)], [65536, n(500)], [1 << 20, n(100)]],
      // 8 B with 256 in flight: the message rate (issue 21 asks for windows of 64-256), over
      // RATE_WINDOWS windows with --quick too: 20 windows of 256 x 8 B were 5-7 ms at ~1 us a
      // message, shorter than one scheduler time slice, so one preemption of either process
      // (or of ucx_perftest's, which runs the same count) halved the row's figure.
      bandwidth: [[8, 256, RATE_WINDOWS], bulk(65536, 16, 100), bulk(1 << 20, 16, 20), bulk(4 << 20, 8, 10)],
      // Active messages (UCXX's format), against ucx_perftest -t ucp_am_bw.
      am: [[8, 256, RATE_WINDOWS], bulk(65536, 16, 100), bulk(1 << 20, 16, 20)],
      // The same 8 B windows through ep.amSendMany (one record and Promise a window).
      amMany: [[8, 256, RATE_WINDOWS]],
    };
// What ucx_perftest test and which node:net row each kind of result is compared with: the
// windowed API (sendMany/recvMany) moves the same windows as the per-message loop.
const baseKind = { bw_many_MBps: "bw_MBps", am_bw_MBps: "bw_MBps", am_many_MBps: "bw_MBps" };
/** ucx_perftest's row for the kinds it does not run itself (amSendMany windows against ucp_am_bw). */
const perftestKind = { bw_many_MBps: "bw_MBps", am_many_MBps: "am_bw_MBps" };
const perftestOf = { bw_MBps: "tag_bw", am_bw_MBps: "ucp_am_bw" };

/** ucx_perftest's figure in this table's units: round trip (twice tag_lat's one way), or MB/s. */
function perftestValue(test, size, iterations, peer) {
  const r = perftest(test, size, iterations, peer);
  return r === null ? null : test === "tag_lat" ? r.latencyUs * 2 : r.MBps;
}

const rows = [];
const record = (system, mode, errorHandling, r) => rows.push({ system, mode, errorHandling, ...r });

if (!hasPerftest()) console.log("ucx_perftest not found: no ucx_perftest baseline");
else
  for (const e of errors) {
    for (const [size, it] of plan.latency) {
      const v = perftestValue("tag_lat", size, it * 5, e === "peer");
      if (v !== null) record("ucx_perftest", "-", e, { kind: "rtt_us_median", size, value: v, iterations: it * 5 });
    }
    // ucp_am_bw for the AM rows and for amMany sizes the AM rows do not have.
    const amPoints = [...plan.am, ...plan.amMany.filter((p) => !plan.am.some((q) => q[0] === p[0]))];
    for (const [kind, points] of [["bw_MBps", plan.bandwidth], ["am_bw_MBps", amPoints]])
      for (const [size, w, rounds] of points) {
        const v = perftestValue(perftestOf[kind], size, w * rounds, e === "peer");
        if (v !== null) record("ucx_perftest", "-", e, { kind, size, value: v, iterations: w * rounds });
      }
  }

for (const r of await pair(["node", "bench/net-peer.mjs", "server"], (port) => ["node", "bench/net-peer.mjs", "client", String(port), JSON.stringify(plan)], {}))
  record("node:net", "-", "-", r);

// Each runtime's FFI floor (bench/ffi-floor-peer.ts): the same UCX calls through the same
// backend, no engine. Every ucx-ts row is shown against its runtime's floor too.
for (const runtime of runtimes)
  for (const e of errors) {
    const peer = [...runtimeArgv(runtime), "bench/ffi-floor-peer.ts"];
    try {
      for (const r of await pair([...peer, "server", e], (port) => [...peer, "client", e, String(port), JSON.stringify(plan)], {}))
        record(`ffi-floor/${runtime}`, "-", e, r);
    } catch (err) {
      console.log(`ffi-floor/${runtime} ${e}: FAILED ${err.message}`);
    }
    // The Promise floor (the same peer with UCX_TS_FLOOR_PROMISE=1): the least a round trip costs
    // through any API with one Promise per receive; latency rows only.
    if (plan.latency.length === 0) continue;
    const latencyOnly = JSON.stringify({ latency: plan.latency, bandwidth: [] });
    try {
      for (const r of await pair([...peer, "server", e], (port) => [...peer, "client", e, String(port), latencyOnly], { UCX_TS_FLOOR_PROMISE: "1" }))
        record(`promise-floor/${runtime}`, "-", e, r);
    } catch (err) {
      console.log(`promise-floor/${runtime} ${e}: FAILED ${err.message}`);
    }
  }

for (const runtime of runtimes)
  for (const mode of modes)
    for (const e of errors) {
      const peer = [...runtimeArgv(runtime), "bench/p2p-peer.ts"];
      try {
        const results = await pair([...peer, "server", mode, e], (port) => [...peer, "client", mode, e, String(port), JSON.stringify(plan)], dist ? { UCX_TS_BENCH_DIST: "1" } : {});
        for (const r of results) record(`ucx-ts/${runtime}`, mode, e, r);
      } catch (err) {
        console.log(`ucx-ts/${runtime} ${mode} ${e}: FAILED ${err.message}`);
      }
    }

// Idle CPU of a connected worker pair in a self-driving mode (thread, hybrid): the process's CPU
// time over 2 s of idleness, after 1 s for its threads to start (a thread's start-up under tsx
// costs a few hundred milliseconds of CPU, which is not idleness).
async function idleCpu(runtime, mode) {
  const script = `
    const lib = ${JSON.stringify(dist ? "../dist/index.js" : "../src/index.ts")};
    const { Worker } = await import(new URL(lib, ${JSON.stringify(new URL("./", import.meta.url).href)}).href);
    const a = await Worker.create({ progressMode: "${mode}" }); const b = await Worker.create({ progressMode: "${mode}" });
    const ep = await a.connect(await b.address());
    await Promise.all([b.recv(new Uint8Array(8), 1), ep.send(new Uint8Array(8), 1)]);
    await new Promise((r) => setTimeout(r, 1000));
    const t0 = process.cpuUsage(); const w0 = performance.now();
    await new Promise((r) => setTimeout(r, 2000));
    const u = process.cpuUsage(t0); const wall = performance.now() - w0;
    console.log(JSON.stringify({ cpuPercent: ((u.user + u.system) / 1000 / wall) * 100 }));
    await a.close(); await b.close();`;
  writeFileSync("bench/.idle-cpu.mts", script);
  const out = await run([...runtimeArgv(runtime), "bench/.idle-cpu.mts"]);
  return JSON.parse(out.trim().split("\n").pop()).cpuPercent;
}
const idle = {};
for (const runtime of flag("rtt8") || opt("plan", undefined) ? [] : runtimes)
  for (const mode of ["thread", "hybrid"].filter((m) => modes.includes(m)))
    (idle[runtime] ??= {})[mode] = await idleCpu(runtime, mode).catch((e) => `failed: ${e.message}`);

// The table: each ucx-ts row against ucx_perftest with the same error handling, and node:net.
const key = (r) => `${r.kind}/${r.size}`;
/** The baseline row for `r`: same kind, else (the windowed API, AM against node:net) the kind it stands in for. */
const base = (system, e, r) => {
  const match = (k) => rows.find((x) => x.system === system && (e === "-" || x.errorHandling === e) && x.kind === k && x.size === r.size);
  // The FFI floor, like ucx_perftest, runs the AM rows once per size (am_bw), not amSendMany too.
  if (system === "ucx_perftest" || system.startsWith("ffi-floor/")) return match(r.kind) ?? (perftestKind[r.kind] ? match(perftestKind[r.kind]) : undefined);
  return match(r.kind) ?? (baseKind[r.kind] ? match(baseKind[r.kind]) : undefined);
};
const metric = { rtt_us_median: "round trip us", rtt_us_p90: "rtt p90 us", rtt_us_p99: "rtt p99 us", rtt_us_p999: "rtt p99.9 us", tail_slow_pct: "% rtt > 5x median", tail_slow_run: "longest such run", bw_MBps: "bandwidth MB/s", bw_many_MBps: "sendMany MB/s", am_bw_MBps: "AM MB/s", am_many_MBps: "amSendMany MB/s" };
const fmtSize = (s) => (s >= 1 << 20 ? `${s >> 20} MiB` : s >= 1024 ? `${s >> 10} KiB` : `${s} B`);
console.log(`\nPoint to point, two processes on 127.0.0.1, ${cpus().length} cores, ${new Date().toISOString()}`);
console.log("system               mode      errors  metric            size        value   vs perftest  vs node:net  vs FFI floor  vs Promise floor");
for (const r of rows) {
  // The tail's shape (bench/rtt-tail.ts) is no speed: no ratios against the baselines.
  if (r.kind.startsWith("tail_")) {
    console.log(`${r.system.padEnd(20)} ${r.mode.padEnd(9)} ${r.errorHandling.padEnd(7)} ${metric[r.kind].padEnd(17)} ${fmtSize(r.size).padStart(7)} ${r.value.toFixed(2).padStart(10)}`);
    continue;
  }
  const p = base("ucx_perftest", r.errorHandling, r);
  const net = base("node:net", "-", r);
  const better = (a, b) => (r.kind.startsWith("rtt_") ? b / a : a / b); // > 1: faster than the baseline
  const vp = p && r.system !== "ucx_perftest" ? better(r.value, p.value).toFixed(2) + "x" : "";
  const vn = net && r.system !== "node:net" ? better(r.value, net.value).toFixed(1) + "x" : "";
  const floor = r.system.startsWith("ucx-ts/") ? base(r.system.replace("ucx-ts/", "ffi-floor/"), r.errorHandling, r) : undefined;
  const vf = floor ? better(r.value, floor.value).toFixed(2) + "x" : "";
  const pfloor = r.system.startsWith("ucx-ts/") ? base(r.system.replace("ucx-ts/", "promise-floor/"), r.errorHandling, r) : undefined;
  const vpf = pfloor ? better(r.value, pfloor.value).toFixed(2) + "x" : "";
  console.log(
    `${r.system.padEnd(20)} ${r.mode.padEnd(9)} ${r.errorHandling.padEnd(7)} ${metric[r.kind].padEnd(17)} ${fmtSize(r.size).padStart(7)} ${r.value.toFixed(2).padStart(10)}   ${vp.padStart(9)}  ${vn.padStart(9)}  ${vf.padStart(11)}  ${vpf.padStart(14)}`,
  );
}
console.log(`\nidle CPU of a connected worker pair (% of one core over 2 s): ${JSON.stringify(idle)}`);
console.log("(vs columns: > 1 means faster than the baseline: ratio of round trips, or of bandwidths)");
mkdirSync("bench/results", { recursive: true });
const file = `bench/results/p2p-${new Date().toISOString().replace(/[:.]/g, "-")}.json`;
writeFileSync(file, JSON.stringify({ plan, cores: cpus().length, idleCpuPercent: idle, rows }, null, 2));
console.log(`written ${file}`);

/**
 * `--profile`: bench/profile.ts per runtime and mode, twice: without UCX_TS_PROFILE (the true
 * time: the probes cost a timestamp each) and with it (the breakdown, medians per phase over the
 * rounds). Prints one table per run and writes bench/results/profile-<time>.json.
 */
async function profile() {
  const rounds = opt("rounds", ["10000"])[0];
  const profModes = opt("modes", ["polling", "hybrid", "thread"]);
  const runs = [];
  for (const runtime of runtimes)
    for (const mode of profModes) {
      const argv = [...runtimeArgv(runtime), "bench/profile.ts", mode, rounds];
      try {
        const plain = JSON.parse((await run(argv)).trim().split("\n").pop());
        const prof = JSON.parse((await run(argv, { UCX_TS_PROFILE: "1" })).trim().split("\n").pop());
        runs.push({ runtime, mode, plain, prof });
      } catch (e) {
        console.log(`${runtime} ${mode}: FAILED ${e.message.slice(0, 300)}`);
      }
    }
  const f = (x) => (x === undefined ? "" : x.toFixed(2));
  console.log(`\nOne 8 B send+receive through a worker's endpoint to itself (bench/profile.ts), ${rounds} rounds, ${new Date().toISOString()}, load ${loadavg().map((l) => l.toFixed(2)).join(" ")}`);
  console.log("us per operation; phases and C functions: median over rounds (profiled run); 'C call cost' = calls x the runtime's cost of a trivial C call (ucs_status_string, unprofiled run)");
  const phaseNames = ["api", "record", "execute", "progress", "completionRecord", "deliver", "settle", "other", "ffi", "callback"];
  console.log(["runtime", "mode", "p50", "p99", "p99.9", "prof p50", ...phaseNames, "C calls", "C call cost", "UCX (ffi - cost)"].map((h) => h.padStart(9)).join(" "));
  for (const { runtime, mode, plain, prof } of runs) {
    const ph = prof.phasesUs;
    const count = Object.values(prof.calls).reduce((a, c) => a + c.perOp, 0);
    // The bare run's trivial call: the profiled one carries the wrapper's own timestamps.
    const callCost = count * plain.trivialCallUs;
    const cells = [runtime, mode, f(plain.p50Us), f(plain.p99Us), f(plain.p999Us), f(prof.p50Us), ...phaseNames.map((p) => f(ph[p].median)), count.toFixed(1), f(callCost), f(Math.max(0, ph.ffi.median - callCost))];
    console.log(cells.map((c) => String(c).padStart(9)).join(" "));
  }
  console.log("\nC calls per operation (count, median us):");
  for (const { runtime, mode, plain, prof } of runs)
    console.log(`  ${runtime} ${mode}: ` + Object.entries(prof.calls).map(([k, c]) => `${k} ${c.perOp.toFixed(2)} (${c.usMedian.toFixed(2)})`).join(", ") + `; trivial C call ${prof.trivialCallUs.toFixed(3)} us profiled, ${plain.trivialCallUs.toFixed(3)} bare`);
  mkdirSync("bench/results", { recursive: true });
  const file = `bench/results/profile-${new Date().toISOString().replace(/[:.]/g, "-")}.json`;
  writeFileSync(file, JSON.stringify({ rounds: Number(rounds), load: loadavg(), cores: cpus().length, runs }, null, 2));
  console.log(`written ${file}`);
}

/**
 * `--turnaround`: 8 B ping-pongs between two processes with UCX_TS_TURNAROUND=1, the FFI floor's
 * and ucx-ts's per runtime, mode and error handling; each side writes its marks' stages
 * (UCX_TS_BENCH_RTT files), and this prints, per side, the median of its turnaround (UCX reported
 * the receive -> the next send posted: its share of the round trip) and of the parts between,
 * beside the round trip itself. Writes bench/results/turnaround-<time>.json.
 */
async function turnaround() {
  const rounds = Number(opt("rounds", ["20000"])[0]);
  const taModes = opt("modes", ["polling", "hybrid", "thread"]);
  const taErrors = opt("errors", ["none"]);
  const latencyPlan = JSON.stringify({ latency: [[8, rounds]], bandwidth: [], am: [], amMany: [] });
  const dir = mkdtempSync(join(tmpdir(), "ucx-ts-turnaround-"));
  const env = { UCX_TS_TURNAROUND: "1", ...(dist ? { UCX_TS_BENCH_DIST: "1" } : {}) };
  const runs = [];
  const one = async (system, mode, e, peer, serverArgs, clientArgs, fileTag) => {
    const prefix = join(dir, `${runs.length}`);
    try {
      const results = await pair([...peer, "server", ...serverArgs], (port) => [...peer, "client", ...clientArgs(port), latencyPlan], { ...env, UCX_TS_BENCH_RTT: prefix });
      const side = (role) => {
        try {
          return JSON.parse(readFileSync(`${prefix}.${fileTag}-${role}.json`, "utf8")).turnaround;
        } catch {
          return undefined;
        }
      };
      runs.push({ system, mode, errorHandling: e, rttMedianUs: results.find((r) => r.kind === "rtt_us_median")?.value, client: side("client"), server: side("server") });
    } catch (err) {
      console.log(`${system} ${mode} ${e}: FAILED ${err.message.slice(0, 300)}`);
    }
  };
  for (const runtime of runtimes)
    for (const e of taErrors) {
      const floor = [...runtimeArgv(runtime), "bench/ffi-floor-peer.ts"];
      await one(`ffi-floor/${runtime}`, "-", e, floor, [e], (port) => [e, String(port)], `floor-${runtime}`);
      for (const mode of taModes) {
        const peer = [...runtimeArgv(runtime), "bench/p2p-peer.ts"];
        await one(`ucx-ts/${runtime}`, mode, e, peer, [mode, e], (port) => [mode, e, String(port)], `${runtime}-${mode}`);
      }
    }
  rmSync(dir, { recursive: true, force: true });
  const stages = ["turnaround", "arrivedToFinished", "finishedToResumed", "resumedToPosted", "away"];
  const f = (s) => (s === undefined ? "-" : s.median.toFixed(2));
  console.log(`\n8 B round trips between two processes (${rounds} a run), ${new Date().toISOString()}, load ${loadavg().map((l) => l.toFixed(2)).join(" ")}`);
  console.log("us, medians per side: turnaround = UCX reported the receive -> the next send posted (= arrived->finished + finished->resumed + resumed->posted); away = that send -> the next receive reported");
  console.log(["system", "mode", "errors", "rtt", "side", ...stages].map((h, i) => (i < 3 ? h.padEnd(i === 0 ? 16 : 8) : h.padStart(i === 4 ? 7 : 12))).join(" "));
  for (const r of runs)
    for (const role of ["client", "server"]) {
      const s = r[role]?.stages ?? {};
      console.log([r.system.padEnd(16), r.mode.padEnd(8), r.errorHandling.padEnd(8), (r.rttMedianUs?.toFixed(2) ?? "-").padStart(12), role.padStart(7), ...stages.map((k) => f(s[k]).padStart(12))].join(" "));
    }
  mkdirSync("bench/results", { recursive: true });
  const file = `bench/results/turnaround-${new Date().toISOString().replace(/[:.]/g, "-")}.json`;
  writeFileSync(file, JSON.stringify({ rounds, cores: cpus().length, load: loadavg(), runs }, null, 2));
  console.log(`written ${file}`);
}
