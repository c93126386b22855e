// Multi-buffer benchmark (issue: sendMulti within 20% of one large send): 100 frames of 64 KiB
// moved by one sendMulti/recvMulti, by 100 awaited send/recv pairs, and as one 6.4 MiB send, in
// the same run, between two processes on 127.0.0.1, per runtime and progress mode. Prints a
// table and writes bench/results/multi-<time>.json.
//   node bench/run-multi.mjs [--runtimes node,deno,bun] [--modes thread,polling]
//                            [--errors none] [--frames 100] [--frame-size 65536] [--quick] [--dist]
import { mkdirSync, writeFileSync } from "node:fs";
import { cpus } from "node:os";
import { options, pair, runtimeArgv } from "./processes.mjs";

const { opt, flag } = options(process.argv.slice(2), import.meta.url, ["dist", "errors", "frame-size", "frames", "modes", "quick", "runtimes"]);
const quick = flag("quick");
const dist = flag("dist");
const runtimes = opt("runtimes", ["node", "deno", "bun"]);
const modes = opt("modes", ["thread", "polling"]);
const errors = opt("errors", ["none"]);
const plan = {
  frames: Number(opt("frames", ["100"])[0]),
  frameSize: Number(opt("frame-size", ["65536"])[0]),
  rounds: quick ? 20 : 200,
  warmup: quick ? 5 : 30,
};

const rows = [];
for (const runtime of runtimes)
  for (const mode of modes)
    for (const e of errors) {
      const peer = [...runtimeArgv(runtime), "bench/multi-peer.ts"];
      try {
        const results = await pair([...peer, "server", mode, e], (port) => [...peer, "client", mode, e, String(port), JSON.stringify(plan)], dist ? { UCX_TS_BENCH_DIST: "1" } : {});
        for (const r of results) rows.push({ runtime, mode, errorHandling: e, ...r });
      } catch (err) {
        console.log(`${runtime} ${mode} ${e}: FAILED ${err.message}`);
      }
    }

const mib = ((plan.frames * plan.frameSize) / 2 ** 20).toFixed(2);
console.log(`\nMulti-buffer: ${plan.frames} frames of ${plan.frameSize} B (${mib} MiB) a round, two processes on 127.0.0.1, ${cpus().length} cores, ${new Date().toISOString()}`);
console.log("runtime  mode      errors  variant        median ms     MB/s   vs single   vs single-fresh");
for (const r of rows) {
  const same = (variant) => rows.find((x) => x.runtime === r.runtime && x.mode === r.mode && x.errorHandling === r.errorHandling && x.variant === variant);
  const ratio = (b) => (b ? (r.medianMs / b.medianMs).toFixed(2) + "x" : "");
  console.log(
    `${r.runtime.padEnd(8)} ${r.mode.padEnd(9)} ${r.errorHandling.padEnd(7)} ${r.variant.padEnd(13)} ${r.medianMs.toFixed(3).padStart(10)} ${r.MBps.toFixed(0).padStart(8)}   ${ratio(same("single")).padStart(9)}   ${ratio(same("single-fresh")).padStart(15)}`,
  );
}
console.log("(time of a round against one send of the same bytes into a reused buffer / into a new buffer; 1.20x is the target for multi)");
mkdirSync("bench/results", { recursive: true });
const file = `bench/results/multi-${new Date().toISOString().replace(/[:.]/g, "-")}.json`;
writeFileSync(file, JSON.stringify({ plan, cores: cpus().length, rows }, null, 2));
console.log(`written ${file}`);
