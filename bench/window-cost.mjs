// Where a windowed 8 B message's time goes on each side (issue 21's message rate): runs
// bench/p2p-peer.ts pairs with UCX_TS_PROFILE=1 and only the sendMany row (windows of `window`
// 8 B messages, one sendMany / recvMany each, acknowledged per window), then prints per side and
// per message: wall time, process CPU, the application thread's phases (src/core/profile.ts) and
// the C calls by function (count and us). In polling mode waiting is spinning: it shows as
// ucp_worker_progress calls and the "progress"/"other" phases, not as posting cost; the posting
// cost is api + record + execute + the tag calls. Probes cost a timestamp each: compare rows of
// the same run, and the counts exactly.
// --size N breaks down windows of N-byte messages instead (64 KiB: issue 21's bandwidth rows).
//   node bench/window-cost.mjs [--runtimes node,bun] [--modes polling,hybrid,thread] [--window 256] [--rounds 400] [--size 8]
import { mkdtempSync, readFileSync, existsSync } from "node:fs";
import { tmpdir, loadavg } from "node:os";
import { join } from "node:path";
import { options, pair, runtimeArgv } from "./processes.mjs";

const { opt } = options(process.argv.slice(2), import.meta.url, ["runtimes", "modes", "window", "rounds", "size"]);
const runtimes = opt("runtimes", ["node", "bun"]);
const modes = opt("modes", ["polling", "hybrid", "thread"]);
const window = Number(opt("window", ["256"])[0]);
const rounds = Number(opt("rounds", ["400"])[0]);
const size = Number(opt("size", ["8"])[0]);
const plan = JSON.stringify({ latency: [], bandwidth: [[size, window, rounds]], am: [] });
const dir = mkdtempSync(join(tmpdir(), "window-cost-"));
const f = (x, d = 2) => x.toFixed(d);
console.log(`windows of ${window} x ${size} B, ${rounds} timed, ${new Date().toISOString()}, load ${loadavg().map((l) => l.toFixed(2)).join(" ")}`);
for (const runtime of runtimes)
  for (const mode of modes) {
    const prefix = join(dir, "p");
    const peer = [...runtimeArgv(runtime), "bench/p2p-peer.ts"];
    const env = { UCX_TS_PROFILE: "1", UCX_TS_BENCH_PROFILE: prefix };
    let rate = "";
    try {
      const r = await pair([...peer, "server", mode, "none"], (port) => [...peer, "client", mode, "none", String(port), plan], env);
      rate = r.filter((x) => x.kind === "bw_many_MBps" || x.kind === "bw_MBps").map((x) => `${x.kind === "bw_MBps" ? "send each" : "sendMany"} ${f(x.value)} MB/s`).join(", ");
    } catch (e) {
      console.log(`${runtime} ${mode}: FAILED ${e.message.slice(0, 300)}`);
      continue;
    }
    console.log(`\n${runtime} ${mode}: ${rate}, load ${f(loadavg()[0])}`);
    for (const side of ["client-each", "server-each", "client", "server"]) {
      const file = `${prefix}.${runtime}-${mode}-${side}.json`;
      if (!existsSync(file)) continue;
      const p = JSON.parse(readFileSync(file, "utf8"));
      const us = (ms) => f((ms * 1000) / p.messages);
      const phases = Object.entries(p.phases).filter(([, ms]) => ms > 0).map(([k, ms]) => `${k} ${us(ms)}`).join(", ");
      const calls = Object.entries(p.calls).filter(([, c]) => c.count > 0).sort((a, b) => b[1].ms - a[1].ms)
        .map(([k, c]) => `${k} ${f(c.count / p.messages)} (${us(c.ms)})`).join(", ");
      console.log(`  ${side}: per message wall ${us(p.wallMs)} us, process CPU ${us(p.cpuMs)} us; phases us: ${phases}`);
      console.log(`  ${side}: C calls per message (us): ${calls}`);
    }
  }
