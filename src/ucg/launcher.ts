/**
 * `ucx-ts run -n N script`: N processes of the current runtime on this machine, each with
 * UCX_TS_RANK, UCX_TS_SIZE and UCX_TS_ROOT_ADDR set (rte.ts), their output forwarded line by
 * line with a "[rank] " prefix. The first rank that fails (non-zero exit or a signal) ends the
 * others (SIGTERM, then SIGKILL after a grace period), and the launch fails with its status.
 * For one machine only: across machines use mpirun or srun with UCX_TS_ROOT_ADDR exported.
 * The ranks share a fresh bootstrap secret (UCX_TS_BOOTSTRAP_SECRET) unless one is given.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { readFileSync } from "node:fs";
import { createServer } from "node:net";
import process from "node:process";
import { runtime } from "../ffi/index.ts";
import { markCloseOnExec } from "../core/close-on-exec.ts";
import { UcxError } from "../core/errors.ts";
import { jobSecretEnv } from "./bootstrap-secret.ts";
import { allowedCpus, bindPolicy, bindPrefix, findTaskset, type BindPolicy } from "./binding.ts";
import { rankProgress, type LaunchProgress } from "./oversubscription.ts";

export interface LaunchOptions {
  readonly n: number;
  readonly script: string;
  readonly args?: readonly string[];
  /** Extra environment for every rank (over this process's). */
  readonly env?: Readonly<Record<string, string | undefined>>;
  /** Each output line, prefixed; default: written to this process's stdout/stderr. */
  readonly onLine?: (rank: number, stream: "stdout" | "stderr", line: string) => void;
  /** Kill everything after this long (ms); default none. */
  readonly timeoutMs?: number;
  readonly cwd?: string;
  /** argv before the script (default: this runtime's: `node [--import tsx]`, `deno run -A`, `bun`). */
  readonly command?: readonly string[];
  /** A rank's own argv prefix and environment (e.g. `ip netns exec ns ...` to put ranks on other "hosts"). */
  readonly rankCommand?: (rank: number, command: readonly string[]) => readonly string[];
  readonly rankEnv?: (rank: number) => Readonly<Record<string, string | undefined>>;
  /**
   * "core" (default: UCX_TS_BIND_TO, else core): each rank bound to a core of its own when this
   * host has a core per rank, as mpirun binds (binding.ts); "none": left to the scheduler.
   */
  readonly bindTo?: BindPolicy;
  /**
   * The ranks' collectives progress mode (their UCX_TS_UCG_PROGRESS). "auto" (default): "polling"
   * (poll and sched_yield, never sleep, as Open MPI's ranks) when the launch has more ranks than
   * allowed CPUs and UCX_TS_UCG_PROGRESS is not set, else the context's default
   * (oversubscription.ts).
   */
  readonly progress?: LaunchProgress;
  /** The address rank 0 is reached at (default 127.0.0.1); the port is picked free here. */
  readonly rootHost?: string;
  /** Aborting stops every rank (SIGTERM, then SIGKILL): `ucx-ts run` ties it to its own SIGINT/SIGTERM so no rank outlives it. */
  readonly signal?: AbortSignal;
}

export interface LaunchResult {
  /** 0 when every rank exited 0, else the first failure's exit status (128 + signal for a signal). */
  readonly code: number;
  /** Each rank's exit status (null: killed by a signal) and signal. */
  readonly ranks: readonly { code: number | null; signal: NodeJS.Signals | null }[];
  /** The rank that failed first, if any. */
  readonly failedRank: number | undefined;
}

/** argv that runs a script under the runtime running this code. */
export function runtimeCommand(script: string): string[] {
  if (runtime === "deno") return [process.execPath, "run", "-A"];
  if (runtime === "bun") return [process.execPath];
  // Node 20 runs TypeScript only through a loader: tsx (a dev dependency here).
  const options = nodeOptionsOnly(process.execArgv);
  const ts = /\.(ts|mts|cts)$/.test(script) && !options.some((a) => a.includes("tsx"));
  return [process.execPath, ...options, ...(ts ? ["--import", "tsx"] : [])];
}

/**
 * Node's execArgv without the code of `node -e/-p '...'`: passed on, every rank would run the
 * launching code again instead of the script, and launch ranks of its own (a process storm).
 */
function nodeOptionsOnly(execArgv: readonly string[]): string[] {
  const out: string[] = [];
  for (let i = 0; i < execArgv.length; i++) {
    const a = execArgv[i]!;
    if (a === "-e" || a === "--eval" || a === "-p" || a === "--print") i++;
    else if (!/^--(eval|print)=/.test(a)) out.push(a);
  }
  return out;
}

/**
 * A free TCP port for rank 0's bootstrap listener. Rank 0 binds it only after its runtime has
 * started (seconds under mpirun), so the port must not be one the kernel is likely to hand out
 * meanwhile: a port from the ephemeral range (what `listen(0)` returns) can become the source
 * port of any outgoing connection on the machine (UCX's tcp transport opens many), and rank 0's
 * listen then fails with EADDRINUSE. So pick at random below the ephemeral range
 * (/proc/sys/net/ipv4/ip_local_port_range), check it is free now by binding it, and retry on a
 * port in use. Falls back to the kernel's pick where no such port is found.
 */
export async function freePort(): Promise<number> {
  const ephemeralLow = ephemeralRangeStart();
  const low = 10_000;
  if (ephemeralLow - low >= 1_000) {
    for (let attempt = 0; attempt < 50; attempt++) {
      const port = low + Math.floor(Math.random() * (ephemeralLow - low));
      if (await canBind(port)) return port;
    }
  }
  return bindAndRelease(0);
}

/** The first port of the kernel's ephemeral range (32768 when it cannot be read). */
function ephemeralRangeStart(): number {
  try {
    const first = Number(readFileSync("/proc/sys/net/ipv4/ip_local_port_range", "utf8").trim().split(/\s+/)[0]);
    return Number.isInteger(first) && first > 0 ? first : 32_768;
  } catch {
    return 32_768;
  }
}

function canBind(port: number): Promise<boolean> {
  return bindAndRelease(port).then(
    () => true,
    () => false,
  );
}

/** Binds 127.0.0.1:port (0: the kernel picks), closes it, and returns the port bound. */
function bindAndRelease(port: number): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(port, "127.0.0.1", () => {
      const bound = (server.address() as { port: number }).port;
      server.close(() => resolve(bound));
    });
  });
}

export async function launch(options: LaunchOptions): Promise<LaunchResult> {
  const { n, script } = options;
  if (!Number.isInteger(n) || n < 1 || n > 4096) throw new UcxError("UCX_TS_INVALID_ARGUMENT", `-n must be an integer 1..4096, got ${n}`);
  const port = await freePort();
  const command = options.command ?? runtimeCommand(script);
  const policy = options.bindTo ?? bindPolicy({ ...process.env, ...options.env });
  const allowed = allowedCpus();
  const cpus = policy === "none" ? undefined : allowed;
  const taskset = policy === "none" ? undefined : findTaskset();
  const progress = rankProgress(n, allowed, options.progress, { ...process.env, ...options.env });
  const onLine = options.onLine ?? ((rank, stream, line) => (stream === "stdout" ? process.stdout : process.stderr).write(`[${rank}] ${line}\n`));
  const children: ChildProcess[] = [];
  const ranks: { code: number | null; signal: NodeJS.Signals | null }[] = [];
  let failedRank: number | undefined;
  let failCode = 0;
  const killAll = () => {
    for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill("SIGTERM");
    const hard = setTimeout(() => {
      for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill("SIGKILL");
    }, 2000);
    hard.unref?.();
  };
  const exits: Promise<void>[] = [];
  // One secret for the job's bootstrap (bootstrap-secret.ts): no other process joins it.
  const secret = jobSecretEnv({ ...process.env, ...options.env });
  for (let rank = 0; rank < n; rank++) {
    const env: Record<string, string | undefined> = {
      ...process.env,
      ...options.env,
      ...secret,
      ...(progress ? { UCX_TS_UCG_PROGRESS: progress } : {}),
      ...options.rankEnv?.(rank),
      UCX_TS_RANK: String(rank),
      UCX_TS_SIZE: String(n),
      UCX_TS_ROOT_ADDR: `${options.rootHost ?? "127.0.0.1"}:${port}`,
      UCX_TS_LOCAL_RANK: String(rank),
    };
    for (const [k, v] of Object.entries(env)) if (v === undefined) delete env[k];
    const [cmd, ...pre] = [...bindPrefix(rank, n, policy, cpus, taskset), ...(options.rankCommand?.(rank, command) ?? command)];
    markCloseOnExec(); // a caller's open workers: the ranks inherit none of UCX's sockets (close-on-exec.ts)
    const child = spawn(cmd!, [...pre, script, ...(options.args ?? [])], { cwd: options.cwd, env: env as NodeJS.ProcessEnv, stdio: ["ignore", "pipe", "pipe"] });
    children.push(child);
    for (const stream of ["stdout", "stderr"] as const) {
      let rest = "";
      child[stream]!.setEncoding("utf8");
      child[stream]!.on("data", (d: string) => {
        const lines = (rest + d).split("\n");
        rest = lines.pop()!;
        for (const l of lines) onLine(rank, stream, l);
      });
      child[stream]!.on("end", () => rest && onLine(rank, stream, rest));
    }
    exits.push(
      new Promise<void>((resolve) => {
        child.on("error", (e) => {
          onLine(rank, "stderr", `ucx-ts run: cannot start ${cmd}: ${e.message}`);
          ranks[rank] = { code: 127, signal: null };
          if (failedRank === undefined) (failedRank = rank), (failCode = 127), killAll();
          resolve();
        });
        child.on("close", (code, signal) => {
          ranks[rank] ??= { code, signal };
          if ((code !== 0 || signal) && failedRank === undefined) {
            failedRank = rank;
            failCode = code ?? 128 + (signal ? (({ SIGTERM: 15, SIGKILL: 9, SIGSEGV: 11, SIGABRT: 6, SIGINT: 2 } as Record<string, number>)[signal] ?? 1) : 1);
            killAll();
          }
          resolve();
        });
      }),
    );
  }
  const onAbort = () => {
    if (failedRank === undefined) (failedRank = 0), (failCode = 130);
    killAll();
  };
  options.signal?.addEventListener("abort", onAbort);
  if (options.signal?.aborted) onAbort();
  let timer: ReturnType<typeof setTimeout> | undefined;
  if (options.timeoutMs !== undefined) {
    timer = setTimeout(() => {
      if (failedRank === undefined) {
        failedRank = children.findIndex((c) => c.exitCode === null && c.signalCode === null);
        failCode = 124;
        onLine(failedRank, "stderr", `ucx-ts run: timed out after ${options.timeoutMs} ms`);
      }
      for (const c of children) c.kill("SIGKILL");
    }, options.timeoutMs);
  }
  await Promise.all(exits);
  clearTimeout(timer);
  options.signal?.removeEventListener("abort", onAbort);
  return { code: failedRank === undefined ? 0 : failCode || 1, ranks, failedRank };
}
