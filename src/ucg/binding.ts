/**
 * Binding `ucx-ts run`'s ranks to cores, as Open MPI's mpirun does by default (--bind-to core
 * for up to 2 ranks, and whenever each rank has a core of its own; none when oversubscribed).
 *
 * Why: a collective's waiting rank polls (step-spin.ts), so a small collective's latency is the
 * time both ranks spend on a core at once. Unbound, the scheduler may put both ranks of a
 * 2-rank job on one core (the other busy with another process) for long stretches: then every
 * message waits for a context switch. Measured 2026-11-27 09:15 (2 cores, load 6-9 from other
 * processes, alternated runs of bench/ucg.ts --compare-mpi --ranks 2 --sizes 8): 8 B allreduce /
 * bcast / alltoall medians bound 13.3 / 5.6 / 7.8 and 14.7 / 7.5 / 8.5 us, unbound 55 / 166 / 79
 * and 10.5 / 140 / 103 us, while Open MPI's bound ranks took 2.0-3.3 us throughout.
 *
 * Each rank's whole process (every thread: the runtime's, UCX's) is bound, through `taskset -c`
 * put before its command (Node, Deno and Bun have no affinity call of their own; a process bound
 * before it starts binds the threads it makes). Where taskset or the allowed CPU list is not
 * there (not Linux), nothing is bound.
 */
import { existsSync, readFileSync } from "node:fs";
import { delimiter, join } from "node:path";
import process from "node:process";
import { UcxError } from "../core/errors.ts";

/** `core`: each rank on a core of its own when there are enough; `none`: never bound. */
export type BindPolicy = "core" | "none";

/** UCX_TS_BIND_TO (core | none), else "core". */
export function bindPolicy(env: Readonly<Record<string, string | undefined>> = process.env): BindPolicy {
  const v = env.UCX_TS_BIND_TO;
  if (v === undefined || v === "") return "core";
  if (v === "core" || v === "none") return v;
  throw new UcxError("UCX_TS_INVALID_ARGUMENT", `UCX_TS_BIND_TO must be core or none, got ${JSON.stringify(v)}`);
}

/** A Linux CPU list ("0-3,6,8-9") as CPU numbers; undefined when it does not parse. */
export function parseCpuList(list: string): number[] | undefined {
  const cpus: number[] = [];
  for (const part of list.trim().split(",")) {
    const m = /^(\d+)(?:-(\d+))?$/.exec(part);
    if (!m) return undefined;
    const from = Number(m[1]);
    const to = m[2] === undefined ? from : Number(m[2]);
    if (to < from || to - from > 65536) return undefined;
    for (let c = from; c <= to; c++) cpus.push(c);
  }
  return cpus.length > 0 ? cpus : undefined;
}

/** The CPUs this process may run on (its affinity: /proc/self/status), or undefined off Linux. */
export function allowedCpus(): number[] | undefined {
  try {
    const m = /^Cpus_allowed_list:\s*(\S+)\s*$/m.exec(readFileSync("/proc/self/status", "utf8"));
    return m ? parseCpuList(m[1]!) : undefined;
  } catch {
    return undefined;
  }
}

/** taskset's path on PATH, or undefined. */
export function findTaskset(path = process.env.PATH ?? ""): string | undefined {
  for (const dir of path.split(delimiter)) {
    if (!dir) continue;
    const p = join(dir, "taskset");
    if (existsSync(p)) return p;
  }
  return undefined;
}

/**
 * The argv prefix binding rank `rank` of `n` (all on this host) to a core: rank r to the r-th
 * allowed CPU, when the policy is "core", there are at least `n` allowed CPUs and taskset
 * exists; else [] (oversubscribed ranks are left to the scheduler, as mpirun leaves them).
 */
export function bindPrefix(rank: number, n: number, policy: BindPolicy, cpus: readonly number[] | undefined, taskset: string | undefined): string[] {
  if (policy === "none" || !cpus || !taskset || n > cpus.length) return [];
  return [taskset, "-c", String(cpus[rank]!)];
}
