/**
 * How `ucx-ts run`'s ranks wait inside a collective when the launch is oversubscribed (more
 * ranks than the CPUs the launcher may run on): they poll and `sched_yield()` between empty
 * polls and never sleep (progress mode "polling"), as Open MPI's ranks do there (mpirun turns on
 * `mpi_yield_when_idle` and binds nothing when it oversubscribes). With a CPU per rank nothing
 * is chosen here: the context's default ("blocking": poll and yield for
 * UCX_TS_UCG_STEP_SPIN_US, then sleep in ucp_worker_wait) applies, and binding.ts binds each
 * rank to a CPU of its own.
 *
 * Why: it is what Open MPI's oversubscribed ranks do, and a yielding rank never pays the wake-up
 * of a sleep in ucp_worker_wait. Measured against blocking at 4 and 8 ranks on 2 cores
 * (docs/benchmarks.md, "Oversubscribed launches", 2026-11-27): within the noise, because the
 * blocking ranks there hardly ever slept; what those ranks wait for is the CPU their core's other
 * ranks spend per step (bench/ucg-cpu.ts). A yielding rank gives its core away at every empty
 * poll (a rank that computes loses a poll's worth per turn of each waiting rank: not measured
 * apart); what polling costs is a runnable process per waiting rank (load), which is why the
 * test suite and the soaks, which run 8
 * processes next to other work, ask for "blocking".
 *
 * The override, strongest first: the script's own `progressMode` option to UcgContext.create;
 * `ucx-ts run --progress MODE` (`LaunchOptions.progress`); UCX_TS_UCG_PROGRESS in the launcher's
 * environment (passed on unchanged); `--progress auto` (the default) is this choice.
 */
import { cpus as osCpus } from "node:os";
import { UcxError } from "../core/errors.ts";
import { PROGRESS_MODES, type ProgressMode } from "../core/engine/engine.ts";

/** What `ucx-ts run` gives oversubscribed ranks when nothing else is asked for. */
export const OVERSUBSCRIBED_PROGRESS: ProgressMode = "polling";

/** `--progress`: a mode for every rank, or "auto" (this module's choice). */
export type LaunchProgress = ProgressMode | "auto";

export const LAUNCH_PROGRESS: readonly LaunchProgress[] = ["auto", ...PROGRESS_MODES];

/** A `--progress` value, checked (UcxError UCX_TS_INVALID_ARGUMENT otherwise). */
export function parseLaunchProgress(raw: string | undefined): LaunchProgress {
  const v = raw?.trim().toLowerCase();
  const found = LAUNCH_PROGRESS.find((m) => m === v);
  if (!found) throw new UcxError("UCX_TS_INVALID_ARGUMENT", `--progress takes one of ${LAUNCH_PROGRESS.join(", ")}, got ${JSON.stringify(raw ?? "")}`);
  return found;
}

/** More ranks than CPUs: `cpus` is the launcher's allowed CPU list (binding.ts), else the host's count. */
export function isOversubscribed(n: number, cpus: readonly number[] | undefined): boolean {
  return n > (cpus?.length ?? osCpus().length);
}

/**
 * The UCX_TS_UCG_PROGRESS each rank is started with, or undefined to leave the ranks' environment
 * as it is (the variable the caller set, if any, or the context's default).
 */
export function rankProgress(n: number, cpus: readonly number[] | undefined, given: LaunchProgress | undefined, env: Readonly<Record<string, string | undefined>>): ProgressMode | undefined {
  if (given !== undefined && given !== "auto") return given;
  if ((env.UCX_TS_UCG_PROGRESS ?? "").trim() !== "") return undefined;
  return isOversubscribed(n, cpus) ? OVERSUBSCRIBED_PROGRESS : undefined;
}
