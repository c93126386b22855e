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

/**
 * The JSON objects a child printed on stdout, one per line, in order. UCX logs to stdout too
 * (UCX_LOG_FILE's default) through C's stdio, which writes to a pipe in blocks of 4 KiB, not in
 * lines: a block can end inside a warning, and the child's next console.log then goes on that
 * same line (a fuzz report read as missing in CI, 2026-12-07), or the rest of UCX's buffer comes
 * after the report at exit. So a report is looked for at every '{' of every line.
 */
export function jsonLines<T = Record<string, any>>(stdout: string): T[] {
  const out: T[] = [];
  for (const line of stdout.split("\n")) {
    for (let at = line.indexOf("{"); at >= 0; at = line.indexOf("{", at + 1)) {
      try {
        out.push(JSON.parse(line.slice(at)) as T);
        break;
      } catch {
        // Not JSON from here (a brace inside a UCX line): try the next one.
      }
    }
  }
  return out;
}

/** The last JSON object a child printed (its report), or undefined: see jsonLines. */
export function lastJson<T = Record<string, any>>(stdout: string): T | undefined {
  return jsonLines<T>(stdout).pop();
}

/** The child's report (its last JSON line); a child that printed none is an Error naming `label` and its output. */
export function reportOf<T = Record<string, any>>(r: ChildResult, label: string): T {
  const report = lastJson<T>(r.stdout);
  if (report === undefined) throw new Error(`${label}: no report (exit ${r.code}, signal ${r.signal})\nstdout: ${r.stdout.slice(-2000)}\nstderr: ${r.stderr.slice(-2000)}`);
  return report;
}
