// Where one small collective's time goes across its ranks (issue 23): per collective, the medians
// of each rank's start skew, posting, a message's flight from the peer's send to the completion
// here, and the settlement up to the caller (bench/ucg-timeline-rank.ts stamps them).
// With --bytes (default 8) at 1 MiB it is the large-message breakdown: each step's post, wait and
// local (copy/reduce) time per rank, the sends per protocol and the registrations per call.
//   node --import tsx bench/ucg-timeline.ts [--ranks 2] [--calls 400] [--bytes 8] [--plan ID] [--colls allreduce,bcast,alltoall] [--progress blocking|polling|hybrid] [--errors peer|none]
import process from "node:process";
import { loadavg } from "node:os";
import { launch } from "../src/ucg/launcher.ts";

const arg = (name: string, dflt: string) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 && process.argv[i + 1] !== undefined ? process.argv[i + 1]! : dflt;
};
for (const n of arg("ranks", "2").split(",").map(Number)) {
  const lines: string[] = [];
  const r = await launch({
    n,
    script: "bench/ucg-timeline-rank.ts",
    env: { UCG_TIMELINE_CALLS: arg("calls", "400"), UCG_TIMELINE_COLLS: arg("colls", "allreduce,bcast,alltoall"), UCG_TIMELINE_BYTES: arg("bytes", "8"), UCG_TIMELINE_PLAN: arg("plan", "") || undefined, UCG_BENCH_PROGRESS: arg("progress", "") || undefined, UCG_BENCH_ERRORS: arg("errors", "peer") },
    timeoutMs: 300_000,
    onLine: (rank, _s, l) => lines.push(`[${rank}] ${l}`),
  });
  const line = lines.find((l) => l.includes("UCG_TIMELINE "));
  if (r.code !== 0 || !line) {
    console.log(`${n} ranks failed (${r.code}):\n${lines.slice(-20).join("\n")}`);
    continue;
  }
  const out = JSON.parse(line.slice(line.indexOf("UCG_TIMELINE ") + 13)) as Record<string, unknown>;
  console.log(`${n} ranks, ${out.mode} mode, errors ${arg("errors", "peer")}, load ${loadavg().map((l) => l.toFixed(2)).join(" ")} (medians, us)`);
  for (const [coll, v] of Object.entries(out)) {
    if (typeof v !== "object") continue;
    console.log(`  ${coll}`);
    for (const [k, x] of Object.entries(v as Record<string, number>)) console.log(`    ${k.padEnd(42)} ${typeof x === "object" ? JSON.stringify(x) : x}`);
  }
}
