// Protocol selection benchmark (issue 6): the ping-pong and bandwidth sweep of the point-to-point
// benchmark (bench/p2p-peer.ts, two processes on 127.0.0.1, error handling "none"), once with
// the engine choosing each send's protocol and once with each protocol forced
// (UCX_TS_PROTO=inline|bounce|zcopy|zcopy-reg, in both processes). For every size it prints the engine's
// figure, the best fixed protocol's, and their ratio; "worse" marks the engine losing to the best
// fixed choice by more than the spread between repeated runs (of the engine or of that best
// choice: on 2 cores the same code varies 1.5-2x from run to run). "uses" is the engine's
// protocol at that size; a forced protocol that cannot carry a size uses the table there too.
// Writes bench/results/proto-<time>.json.
//   node bench/run-proto.mjs [--runtimes node] [--modes polling,thread] [--repeat 2] [--quick]
//                            [--calibration PATH|none]
import { options, pair, run, runtimeArgv } from "./processes.mjs";
import { mkdirSync, writeFileSync } from "node:fs";
import { cpus } from "node:os";

const { opt, flag } = options(process.argv.slice(2), import.meta.url, ["calibration", "modes", "quick", "repeat", "runtimes"]);
const quick = flag("quick");
const runtimes = opt("runtimes", ["node"]);
const modes = opt("modes", ["polling", "thread"]);
const repeat = Number(opt("repeat", ["3"])[0]);
const calibration = opt("calibration", [""])[0];
const n = (x) => (quick ? Math.max(20, Math.round(x / 10)) : x);
// Sizes around the default tables' boundaries (inline up to 192 B, bounce chunks of 64 KiB).
const plan = {
  latency: [[8, n(2000)], [192, n(2000)], [1024, n(2000)], [16384, n(1000)], [65536, n(500)], [1 << 20, n(100)]],
  bandwidth: [[1024, 16, n(200)], [16384, 16, n(200)], [65536, 16, n(100)], [1 << 20, 16, n(20)]],
};
const variants = ["engine", "inline", "bounce", "zcopy", "zcopy-reg"];

/** The protocol the engine's table gives each size, per mode (from `ucx-ts proto-info --json`). */
const engineChoice = {};
for (const mode of modes) {
  const env = calibration ? { UCX_TS_PROTO_CALIBRATION: calibration } : {};
  const info = JSON.parse(await run([...runtimeArgv("node"), "src/cli/index.ts", "proto-info", "--mode", mode, "--json"], env));
  const table = info.tables.find((t) => t.operation === "tag-send").table;
  engineChoice[mode] = (size) => table.find((e) => size <= e.maxSize).protocol;
}

const rows = [];
for (const runtime of runtimes)
  for (const mode of modes)
    for (let r = 0; r < repeat; r++)
      // Each repeat starts with another variant: the first run of a series is often the slowest.
      for (const variant of [...variants.slice(r % variants.length), ...variants.slice(0, r % variants.length)]) {
        const peer = [...runtimeArgv(runtime), "bench/p2p-peer.ts"];
        const env = variant === "engine" ? {} : { UCX_TS_PROTO: variant };
        if (calibration) env.UCX_TS_PROTO_CALIBRATION = calibration;
        try {
          const results = await pair([...peer, "server", mode, "none"], (port) => [...peer, "client", mode, "none", String(port), JSON.stringify(plan)], env);
          for (const x of results) rows.push({ runtime, mode, variant, run: r, ...x });
        } catch (err) {
          console.log(`${runtime} ${mode} ${variant}: FAILED ${err.message}`);
        }
      }

/** The protocol a forced variant really uses at `size`: its own where it can carry it, else the table's. */
function effective(variant, mode, size) {
  const carries = { inline: size <= 192, bounce: size <= 65536, zcopy: true, "zcopy-reg": size >= 1 }[variant];
  return carries ? variant : engineChoice[mode](size);
}

const better = (kind, a, b) => (kind.startsWith("bw") ? a > b : a < b);
const summary = [];
const line = (cells) => console.log(cells.map((c, i) => String(c).padEnd([8, 8, 15, 9, 10, 10, 20, 8, 8][i] ?? 10)).join(" "));
line(["runtime", "mode", "measure", "size", "uses", "engine", "best fixed", "ratio", "verdict"]);
for (const runtime of runtimes)
  for (const mode of modes)
    for (const kind of [...new Set(rows.map((x) => x.kind))])
      for (const size of [...new Set(rows.filter((x) => x.kind === kind).map((x) => x.size))]) {
        const of = (v) => rows.filter((x) => x.runtime === runtime && x.mode === mode && x.kind === kind && x.size === size && x.variant === v).map((x) => x.value);
        // Each variant's best run (least disturbed by the other process on 2 cores).
        const best = (vals) => vals.reduce((a, b) => (better(kind, a, b) ? a : b));
        const engineVals = of("engine");
        if (engineVals.length === 0) continue;
        const engine = best(engineVals);
        let fixed = null;
        for (const v of variants.slice(1)) {
          const vals = of(v);
          if (vals.length === 0) continue;
          const b = best(vals);
          if (!fixed || better(kind, b, fixed.value)) fixed = { variant: v, value: b, spread: Math.max(...vals) / Math.min(...vals) };
        }
        const ratio = kind.startsWith("bw") ? fixed.value / engine : engine / fixed.value; // > 1: engine worse
        const noise = Math.max(1.1, fixed.spread, Math.max(...engineVals) / Math.min(...engineVals));
        // Forcing the protocol the engine picks runs the engine's code: any gap there is noise.
        const verdict = effective(fixed.variant, mode, size) === engineChoice[mode](size) ? "same" : ratio <= noise ? "ok" : "worse";
        const uses = engineChoice[mode](size);
        summary.push({ runtime, mode, kind, size, uses, engine, best: fixed.variant, bestValue: fixed.value, ratio, noise, verdict });
        line([runtime, mode, kind, size, uses, engine.toFixed(2), `${fixed.variant} ${fixed.value.toFixed(2)}`, ratio.toFixed(2), verdict]);
      }

mkdirSync("bench/results", { recursive: true });
const file = `bench/results/proto-${new Date().toISOString().replace(/[:.]/g, "-")}.json`;
writeFileSync(file, JSON.stringify({ date: new Date().toISOString(), cores: cpus().length, plan, rows, summary }, null, 2));
console.log(`\nwrote ${file}`);
