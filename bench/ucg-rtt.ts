// A collective's message against a plain point-to-point one, between the same two processes
// (issue 23): see bench/ucg-rtt-rank.ts for the paths. Prints rank 0's medians (us) per path.
//   node --import tsx bench/ucg-rtt.ts [--progress blocking|polling|hybrid] [--errors none|peer] [--iters 3000] [--paths step,exchange] [--profile]
import process from "node:process";
import { loadavg } from "node:os";
import { launch } from "../src/ucg/launcher.ts";

const arg = (name: string, dflt: string) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 && process.argv[i + 1] !== undefined ? process.argv[i + 1]! : dflt;
};
const lines: string[] = [];
const r = await launch({
  n: 2,
  script: import.meta.url.endsWith(".ts") ? "bench/ucg-rtt-rank.ts" : "bench/ucg-rtt-rank.mjs",
  env: {
    UCG_RTT_ITERS: arg("iters", "3000"),
    UCG_RTT_PATHS: arg("paths", "") || undefined,
    UCG_BENCH_PROGRESS: arg("progress", "") || undefined,
    UCG_BENCH_ERRORS: arg("errors", "none"),
    UCX_TS_PROFILE: process.argv.includes("--profile") ? "1" : undefined,
  },
  timeoutMs: 300_000,
  onLine: (rank, _s, l) => lines.push(`[${rank}] ${l}`),
});
const line = lines.find((l) => l.includes("UCG_RTT "));
if (r.code !== 0 || !line) {
  console.log(`failed (${r.code}):\n${lines.slice(-20).join("\n")}`);
  process.exitCode = 1;
} else {
  const o = JSON.parse(line.slice(line.indexOf("UCG_RTT ") + 8)) as Record<string, unknown>;
  console.log(`2 ranks, ${o.mode} mode, errors ${o.errors}, load ${loadavg().map((l) => l.toFixed(2)).join(" ")} (rank 0, us per iteration)`);
  for (const [k, v] of Object.entries(o)) if (typeof v === "object") console.log(`  ${k.padEnd(10)} ${JSON.stringify(v)}`);
}
