/** `ucx-ts run -n N script` (the collectives' launcher) and `ucx-ts ucg-info` (their plan selection). */
import process from "node:process";
import { launch } from "../ucg/launcher.ts";
import type { BindPolicy } from "../ucg/binding.ts";
import { LAUNCH_PROGRESS, parseLaunchProgress, type LaunchProgress } from "../ucg/oversubscription.ts";
import { configRegistry } from "../ucg/context.ts";
import { COLLECTIVES, type CollType } from "../ucg/coll-type.ts";
import { DECISION_TREES, formatTree, PlanPool, prune, PLAN_TEMPLATES } from "../ucg/ppool.ts";
import { listWords } from "./args.ts";
import { UsageError } from "./info-command.ts";

export const runHelp = `Usage: ucx-ts run -n N [--timeout SECONDS] [--bind-to core|none] [--progress MODE] script.(ts|js|mjs) [script args...]

Start N processes of this runtime (node, deno or bun) running the script, each with
UCX_TS_RANK, UCX_TS_SIZE and UCX_TS_ROOT_ADDR set, so that UcgContext.create() finds its rank,
the group size, and rank 0's bootstrap port. Output lines are prefixed with "[rank] ". When a
rank fails, the others are stopped and ucx-ts run exits with that rank's status.
Under Node a .ts script needs tsx (npm i -D tsx). One machine only: across machines use
mpirun or srun with UCX_TS_ROOT_ADDR=<rank 0's host>:<port> exported.
--bind-to core (the default, or UCX_TS_BIND_TO): each rank bound to a core of its own when the
machine has a core per rank, as mpirun binds its ranks; none: never bound.
--progress auto (the default): with more ranks than CPUs (and UCX_TS_UCG_PROGRESS unset) the
ranks' collectives poll and yield their core between polls, never sleeping (polling), as
Open MPI's oversubscribed ranks do; otherwise the collectives' default (blocking: poll and
yield, then sleep). blocking|polling|hybrid|thread: that mode for every rank
(UCX_TS_UCG_PROGRESS); a script's own progressMode option still wins.

Examples:
  npx ucx-ts run -n 4 allreduce.ts
  npx ucx-ts run -n 8 --timeout 60 bench.mjs --sizes 8,1M`;

export async function runCommand(args: readonly string[], write: (t: string) => void): Promise<number> {
  let n: number | undefined;
  let timeoutMs: number | undefined;
  let bindTo: BindPolicy | undefined;
  let progress: LaunchProgress | undefined;
  let i = 0;
  for (; i < args.length; i++) {
    const a = args[i]!;
    if (a === "-n" || a === "--np") n = Number(args[++i]);
    else if (a.startsWith("-n") && a.length > 2) n = Number(a.slice(2));
    else if (a === "--timeout") timeoutMs = Number(args[++i]) * 1000;
    else if (a === "--bind-to") {
      const v = args[++i];
      if (v !== "core" && v !== "none") throw new UsageError(`run: --bind-to takes core or none, got '${v ?? ""}'`);
      bindTo = v;
    } else if (a === "--progress") {
      const v = args[++i];
      try {
        progress = parseLaunchProgress(v);
      } catch {
        throw new UsageError(`run: --progress takes ${listWords(LAUNCH_PROGRESS)}, got '${v ?? ""}'`);
      }
    } else if (a === "--") {
      i++;
      break;
    } else if (a.startsWith("-")) throw new UsageError(`run: unknown option '${a}'`);
    else break;
  }
  const script = args[i];
  if (n === undefined || !Number.isInteger(n) || n < 1) throw new UsageError("run: -n N (a number of processes, 1 or more) is required");
  if (!script) throw new UsageError("run: which script?");
  if (timeoutMs !== undefined && !(timeoutMs > 0)) throw new UsageError("run: --timeout takes a number of seconds");
  // Ctrl-C or a kill of ucx-ts run stops the ranks too, instead of leaving them orphaned.
  const stop = new AbortController();
  const onSignal = () => stop.abort();
  process.once("SIGINT", onSignal);
  process.once("SIGTERM", onSignal);
  const result = await launch({ n, script, args: args.slice(i + 1), timeoutMs, bindTo, progress, signal: stop.signal }).finally(() => {
    process.off("SIGINT", onSignal);
    process.off("SIGTERM", onSignal);
  });
  if (result.code !== 0) write(`ucx-ts run: rank ${result.failedRank} failed (status ${result.code}); the other ranks were stopped`);
  return result.code;
}

export const ucgInfoHelp = `Usage: ucx-ts ucg-info [--size N] [--bytes B] [--coll NAME] [--non-commutative]

Print the collectives' plans (ids per collective, for UCX_TS_<COLL>_PLAN), their config tables
with the values in effect, each collective's decision tree, the tree pruned for a group of N
members (default 8), and the plan picked for a call of B bytes (default 8; the vector for
allreduce/reduce/bcast, the result for allgather, one block for alltoall).

Examples:
  npx ucx-ts ucg-info --size 5 --bytes 1MiB
  UCX_TS_ALLREDUCE_PLAN=1 npx ucx-ts ucg-info --coll allreduce --bytes 8`;

function parseBytes(s: string): number {
  const m = /^(\d+(?:\.\d+)?)(k|kib|m|mib|g|gib|b)?$/i.exec(s.trim());
  if (!m) throw new UsageError(`ucg-info: --bytes takes a size like 8, 64KiB, 1MiB; got '${s}'`);
  const unit = { "": 1, b: 1, k: 1024, kib: 1024, m: 1 << 20, mib: 1 << 20, g: 1 << 30, gib: 1 << 30 }[(m[2] ?? "").toLowerCase()]!;
  return Math.round(Number(m[1]) * unit);
}

export function ucgInfoCommand(args: readonly string[], write: (t: string) => void): number {
  let size = 8;
  let bytes = 8;
  let colls: CollType[] = [...COLLECTIVES];
  let commutative = true;
  for (let i = 0; i < args.length; i++) {
    const a = args[i]!;
    if (a === "--size") size = Number(args[++i]);
    else if (a === "--bytes") bytes = parseBytes(args[++i] ?? "");
    else if (a === "--coll") {
      const c = (args[++i] ?? "").replace("-", "_") as CollType;
      if (!COLLECTIVES.includes(c)) throw new UsageError(`ucg-info: --coll is one of ${COLLECTIVES.join(", ")}`);
      colls = [c];
    } else if (a === "--non-commutative") commutative = false;
    else throw new UsageError(`ucg-info: unknown argument '${a}'`);
  }
  if (!Number.isInteger(size) || size < 1) throw new UsageError("ucg-info: --size takes a member count, 1 or more");
  const registry = configRegistry();
  const config = registry.resolve(process.env);
  const pool = new PlanPool(config);
  write("Plans (UCX_TS_<COLL>_PLAN=id,...):");
  for (const c of colls) {
    write(`  ${c}: ${PLAN_TEMPLATES.filter((t) => t.coll === c).map((t) => `${t.id} ${t.name}${t.commutativeOnly ? " (commutative ops)" : ""}`).join(", ")}`);
  }
  write("\nConfig tables:");
  for (const t of registry.list()) {
    const values = config.table(t.name);
    write(`  ${t.name} (prefix ${t.prefix}):`);
    for (const [f, def] of Object.entries(t.fields)) {
      if (t.name === "plans" && !colls.some((c) => `${c.toUpperCase()}_PLAN` === f)) continue;
      write(`    ${t.prefix}${f}=${values[f] === "" ? "(all)" : values[f]}  ${def.doc}`);
    }
  }
  for (const c of colls) {
    write(`\n${c}: decision tree`);
    for (const l of formatTree(c, DECISION_TREES[c], pool.thresholds)) write(l);
    write(`  pruned for ${size} members:`);
    for (const l of formatTree(c, prune(DECISION_TREES[c], size), pool.thresholds, "    ")) write(l);
    const elements = Math.max(1, Math.floor(bytes / 8));
    const pick = pool.select(c, size, { commutative, bytes, count: c === "allgather" || c === "alltoall" ? elements : elements });
    write(`  picks for ${size} members, ${bytes} bytes, ${commutative ? "commutative" : "non-commutative"} op: ${pick.id} ${pick.name}`);
  }
  return 0;
}
