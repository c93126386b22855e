/**
 * The soak's collectives lane: while the point-to-point traffic runs, jobs of N ranks (launched
 * as `ucx-ts run` does, ucg-rank.ts) run seeded random collectives, every result checked. Faults:
 * in some jobs one rank SIGKILLs itself before a chosen collective; the others must reject with a
 * typed error (or be stopped by the launcher), never hang or return a wrong result. Each job's
 * rank 0 samples its RSS (after GC and malloc_trim) against collectives done; the report gives the
 * longest clean job's growth per 100k collectives after its warm-up.
 */
import { fileURLToPath } from "node:url";
import { launch } from "../../src/ucg/launcher.ts";
import { growth, round, type Sample } from "./samples.ts";
import { soakScript } from "./files.ts";

export interface CollectivesReport {
  ranks: number;
  jobs: number;
  killedJobs: number;
  collectives: number;
  elementsVerified: number;
  expected: Record<string, number>;
  unexpected: Record<string, number>;
  firstUnexpected: string[];
  /** Rank 0 of the longest job that ran to its end: RSS after trim over its collectives. */
  longestCleanJob?: { seconds: number; collectives: number; trimmedRssMiB: { first: number; last: number }; miBPer100k: number };
}

const root = fileURLToPath(new URL("../../", import.meta.url));
const bump = (m: Record<string, number>, k: string) => (m[k] = (m[k] ?? 0) + 1);

export async function collectivesLane(options: {
  ranks: number;
  deadline: number;
  seed: number;
  rand: () => number;
  /** Faults on: about a third of the jobs after the first lose a rank. */
  faults: boolean;
}): Promise<CollectivesReport> {
  const report: CollectivesReport = { ranks: options.ranks, jobs: 0, killedJobs: 0, collectives: 0, elementsVerified: 0, expected: {}, unexpected: {}, firstUnexpected: [] };
  const unexpected = (key: string, detail: string) => {
    bump(report.unexpected, key);
    if (report.firstUnexpected.length < 5) report.firstUnexpected.push(detail);
  };
  // At least one job, even when the soak is shorter than a job's start-up (npm test's short soak).
  do {
    const job = report.jobs++;
    const left = (options.deadline - Date.now()) / 1000;
    // Short jobs (10 s + an eighth of what is left), so that kills and restarts recur in a long soak.
    const seconds = Math.max(2, Math.min(left - 2, 10 + left / 8));
    const kill = options.faults && job > 0 && options.rand() < 0.35;
    const victim = Math.floor(options.rand() * options.ranks);
    const killAt = 5 + Math.floor(options.rand() * 60);
    const done = new Map<number, { collectives: number; elements: number }>();
    const reached = new Array<number>(options.ranks).fill(0);
    const samples: Sample[] = [];
    const started = Date.now();
    const result = await launch({
      n: options.ranks,
      script: soakScript("ucg-rank"),
      cwd: root,
      timeoutMs: (seconds + 120) * 1000,
      env: {
        UCX_TS_SOAK_UCG_SEED: String(options.seed * 1000 + job),
        UCX_TS_SOAK_UCG_SECONDS: String(seconds),
        UCX_TS_SOAK_UCG_KILL_AT: kill ? String(killAt) : "-1",
        UCX_TS_SOAK_UCG_VICTIM: String(victim),
        // Waiting ranks sleep rather than poll-and-yield (step-spin.ts): with more ranks than
        // cores the spin would starve the soak's point-to-point processes, which it is not about.
        UCX_TS_UCG_STEP_SPIN_US: "0",
        // That budget is blocking mode's: an oversubscribed launch would otherwise poll (oversubscription.ts).
        UCX_TS_UCG_PROGRESS: process.env.UCX_TS_UCG_PROGRESS || "blocking",
      },
      onLine: (rank, stream, line) => {
        if (stream === "stderr") {
          if (!line.includes("UCX  WARN") && /Error|Assertion|Segmentation/.test(line) && !kill) unexpected("rank stderr", `job ${job} rank ${rank}: ${line}`);
          return;
        }
        const [tag, ...rest] = line.split(" ");
        const body = rest.join(" ");
        if (tag === "SOAK_UCG_SAMPLE") {
          const s = JSON.parse(body) as Sample;
          reached[rank] = Math.max(reached[rank]!, s.ops);
          if (rank === 0) samples.push(s);
        } else if (tag === "SOAK_UCG_DONE") done.set(rank, JSON.parse(body));
        else if (tag === "SOAK_UCG_CORRUPT") unexpected("wrong result", `job ${job}: ${body}`);
        else if (tag === "SOAK_UCG_REJECTED") {
          if (kill) bump(report.expected, `rank killed: ${rest[0]}`);
          else unexpected(`rejected: ${rest[0]}`, `job ${job} rank ${rank}: ${body}`);
        }
      },
    });
    for (const [rank, d] of done) {
      reached[rank] = Math.max(reached[rank]!, d.collectives);
      report.elementsVerified += d.elements;
    }
    report.collectives += Math.max(...reached);
    if (kill && result.code !== 0) {
      report.killedJobs++;
      bump(report.expected, "job ended by its killed rank");
    } else if (result.code !== 0) unexpected(`job failed: status ${result.code}`, `job ${job}: rank ${result.failedRank} exited with status ${result.code} (${seconds} s job, ${round((Date.now() - started) / 1000)} s)`);
    else if (done.size !== options.ranks || new Set([...done.values()].map((d) => d.collectives)).size !== 1) {
      unexpected("ranks disagree", `job ${job}: ranks reported ${JSON.stringify([...done])}`);
    } else if (samples.length >= 8 && (!report.longestCleanJob || samples.at(-1)!.ops > report.longestCleanJob.collectives)) {
      const g = growth(samples, 0.25);
      report.longestCleanJob = {
        seconds: round(samples.at(-1)!.seconds),
        collectives: samples.at(-1)!.ops,
        trimmedRssMiB: { first: g.trimmedRssMiB.first, last: g.trimmedRssMiB.last },
        miBPer100k: g.trimmedRssMiBPer100kOps,
      };
    }
  } while (Date.now() + 4000 < options.deadline);
  return report;
}
