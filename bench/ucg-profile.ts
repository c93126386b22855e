// Where one 8 B allreduce's time goes, per call (issue 23): N ranks (launch(), this runtime)
// run back-to-back allreduces (bench/ucg-profile-rank.ts); rank 0 reports wall time and, with
// --profile, the exclusive phases and C calls per allreduce (UCX_TS_PROFILE=1, src/core/profile.ts).
//   node --import tsx bench/ucg-profile.ts [--ranks 2,4] [--calls 2000] [--profile] [--progress blocking|hybrid|polling]
import process from "node:process";
import { loadavg } from "node:os";
import { launch } from "../src/ucg/launcher.ts";

const arg = (name: string, dflt: string) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 && process.argv[i + 1] !== undefined ? process.argv[i + 1]! : dflt;
};
for (const n of arg("ranks", "2,4").split(",").map(Number)) {
  const lines: string[] = [];
  const r = await launch({
    n,
    script: "bench/ucg-profile-rank.ts",
    env: { UCG_PROFILE_CALLS: arg("calls", "2000"), UCG_BENCH_PROGRESS: arg("progress", "") || undefined, UCX_TS_PROFILE: process.argv.includes("--profile") ? "1" : undefined },
    timeoutMs: 300_000,
    onLine: (rank, _s, l) => lines.push(`[${rank}] ${l}`),
  });
  const line = lines.find((l) => l.includes("UCG_PROFILE "));
  if (r.code !== 0 || !line) console.log(`${n} ranks failed (${r.code}):\n${lines.slice(-20).join("\n")}`);
  else console.log(`load ${loadavg().map((l) => l.toFixed(2)).join(" ")} ${line.slice(line.indexOf("UCG_PROFILE ") + 12)}`);
}
