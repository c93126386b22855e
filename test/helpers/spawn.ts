/**
 * Running a TypeScript file in a child process of the same runtime as the test (Node through
 * tsx, Deno, Bun), with a watchdog so a hung peer fails the test instead of hanging the suite.
 */
import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import process from "node:process";
import { runtime } from "../../src/ffi/index.ts";

export const repoRoot = fileURLToPath(new URL("../../", import.meta.url));

/** argv to run `script` (path relative to the repo root) under the current runtime. */
export function runtimeArgv(script: string): [string, ...string[]] {
  if (runtime === "deno") return [process.execPath, "run", "-A", script];
  if (runtime === "bun") return [process.execPath, script];
  return [process.execPath, "--import", "tsx", script];
}

/** argv to run plain JavaScript `file` (a bundle: no TypeScript loader needed) under the current runtime. */
export function javascriptArgv(file: string): [string, ...string[]] {
  return runtime === "deno" ? [process.execPath, "run", "-A", file] : [process.execPath, file];
}

export interface ChildResult {
  readonly code: number | null;
  /** The signal that ended the child, if one did. */
  readonly signal: NodeJS.Signals | null;
  readonly stdout: string;
  readonly stderr: string;
}

export interface RunOptions {
  readonly env?: Record<string, string | undefined>;
  readonly timeoutMs?: number;
}

/** Run `script` (path relative to the repo root) under the current runtime, to its end. */
export function runScript(script: string, args: readonly string[] = [], options: RunOptions = {}): Promise<ChildResult> {
  return runArgv(runtimeArgv(script), args, options, script);
}

/**
 * Run `argv` + `args` from the repo root to its end, collecting its output; past `timeoutMs`
 * (default 60 s) it is killed and the promise rejects with what it printed, named by `label`.
 */
export function runArgv(argv: readonly [string, ...string[]], args: readonly string[], options: RunOptions, label: string): Promise<ChildResult> {
  const [cmd, ...pre] = argv;
  const env = { ...process.env, ...options.env };
  for (const [k, v] of Object.entries(env)) if (v === undefined) delete env[k];
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, [...pre, ...args], { cwd: repoRoot, env, stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout!.on("data", (d) => (stdout += d));
    child.stderr!.on("data", (d) => (stderr += d));
    const timeoutMs = options.timeoutMs ?? 60_000;
    const watchdog = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error(`${label} ${args.join(" ")} did not finish in ${timeoutMs} ms\nstdout: ${stdout}\nstderr: ${stderr}`));
    }, timeoutMs);
    child.on("error", (e) => {
      clearTimeout(watchdog);
      reject(e);
    });
    child.on("close", (code, signal) => {
      clearTimeout(watchdog);
      resolve({ code, signal, stdout, stderr });
    });
  });
}
