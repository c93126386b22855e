/**
 * `ucx-ts perf`: our ucx_perftest. Local by default (it starts its own server process of the
 * same runtime on 127.0.0.1), or against `ucx-ts perf --server` on another host.
 */
import { spawn } from "node:child_process";
import { writeFileSync } from "node:fs";
import { cpus } from "node:os";
import process from "node:process";
import { runtimeVersion } from "../../ffi/index.ts";
import { defaultProgressMode, PROGRESS_MODES, runtime, ucxVersion, Worker, type ErrorHandling, type ProgressMode } from "../../index.ts";
import { parseSize } from "../demo-protocol.ts";
import { choiceOption, flag, parseCommandArgs, stringOption, UsageError, type Parsed } from "../args.ts";
import { selfArgv } from "../self.ts";
import { measureNet, perftestRows, serveNet } from "./baselines.ts";
import { plotSvg } from "./plot.ts";
import { DEFAULT_SIZES, isLatency, MAX_SIZE, TESTS, type PerfPlan, type PerfRow, type TestName } from "./tests.ts";
import { measure, serve } from "./ucx-side.ts";
import { uctPerfCommand, uctPerfHelp } from "./uct-perf.ts";

export const perfHelp = `Usage: ucx-ts perf [HOST:PORT] [options]
       ucx-ts perf --server [--port P] [--host H] [options]

Measure latency and bandwidth the way ucx_perftest does: tag_lat (half the median ping-pong),
tag_bw, stream_bw, am_bw, put_bw (windows of 16 messages). Without HOST:PORT it starts its own
server process on 127.0.0.1; with it, it measures against 'ucx-ts perf --server' there.

Options:
  --tests T,...       tests to run (default all: ${TESTS.join(",")})
  --sizes S,...       message sizes (default 8,256,4K,64K,1M; at most 4M)
  --iterations N      round trips per latency point (default 1000); bandwidth rounds: N/10
  --mode M            progress mode: thread, polling, blocking, hybrid (default: the library's,
                      thread on Node and Deno, hybrid on Bun)
  --error-handling E  peer (default) or none (same-host shared memory)
  --spin US           thread mode: how long the application thread spins for a completion
  --thread-spin US    thread mode: how long the progress thread busy-polls after work
  --adaptive-thread-spin on|off
                      thread mode: the progress thread learns its spin (default: on from 4 cores)
  --compare           also run ucx_perftest and node:net on the same sizes (local runs only)
  --json FILE         write the results as JSON
  --plot FILE.svg     draw latency and bandwidth against size, one line per system and test

Examples:
  ucx-ts perf --compare --plot perf.svg
  ucx-ts perf --tests tag_lat --sizes 8,1K --mode polling --error-handling none
  ucx-ts perf --server --port 13350          # then, elsewhere: ucx-ts perf host:13350

${uctPerfHelp}`;

interface PerfOptions {
  server: boolean;
  netServer: boolean;
  target?: { host: string; port: number };
  port: number;
  host: string;
  plan: PerfPlan;
  mode: ProgressMode;
  errorHandling: ErrorHandling;
  compare: boolean;
  /** Worker spin budgets (µs), for tuning thread mode; unset: the library's defaults. */
  spin?: number;
  threadSpin?: number;
  adaptiveThreadSpin?: boolean;
  json?: string;
  plot?: string;
}

const PERF_OPTIONS = {
  server: { type: "boolean" },
  "net-server": { type: "boolean" }, // the node:net baseline's server process (not in --help)
  compare: { type: "boolean" },
  port: { type: "string" },
  host: { type: "string" },
  json: { type: "string" },
  plot: { type: "string" },
  mode: { type: "string" },
  "error-handling": { type: "string" },
  spin: { type: "string" },
  "thread-spin": { type: "string" },
  "adaptive-thread-spin": { type: "string" },
  iterations: { type: "string" },
  tests: { type: "string" },
  sizes: { type: "string" },
} as const;

/** A numeric option: a finite number, or a usage error naming the option. */
function numberOption(p: Parsed, name: string): number | undefined {
  const text = stringOption(p, name);
  if (text === undefined) return undefined;
  const v = Number(text);
  if (text.trim() === "" || !Number.isFinite(v)) throw new UsageError(`perf: --${name} must be a number, got '${text}'`);
  return v;
}

function parseOptions(args: readonly string[]): PerfOptions {
  const p = parseCommandArgs("perf", args, PERF_OPTIONS, { max: 1 });
  const o: PerfOptions = {
    server: flag(p, "server"),
    netServer: flag(p, "net-server"),
    port: numberOption(p, "port") ?? 0,
    host: stringOption(p, "host") ?? "0.0.0.0",
    plan: { tests: [...TESTS], sizes: DEFAULT_SIZES, iterations: numberOption(p, "iterations") ?? 1000 },
    mode: choiceOption("perf", p, "mode", PROGRESS_MODES) ?? defaultProgressMode(),
    errorHandling: choiceOption("perf", p, "error-handling", ["peer", "none"] as const) ?? "peer",
    compare: flag(p, "compare"),
    spin: numberOption(p, "spin"),
    threadSpin: numberOption(p, "thread-spin"),
    json: stringOption(p, "json"),
    plot: stringOption(p, "plot"),
  };
  const adaptive = choiceOption("perf", p, "adaptive-thread-spin", ["on", "off"] as const);
  if (adaptive !== undefined) o.adaptiveThreadSpin = adaptive === "on";
  const tests = stringOption(p, "tests");
  if (tests !== undefined) {
    const list = tests.split(",") as TestName[];
    const bad = list.find((t) => !TESTS.includes(t));
    if (bad) throw new UsageError(`perf: unknown test '${bad}' (tests: ${TESTS.join(", ")})`);
    o.plan = { ...o.plan, tests: list };
  }
  const sizes = stringOption(p, "sizes");
  if (sizes !== undefined) {
    const list = sizes.split(",").map(parseSize);
    if (list.some((s) => !Number.isInteger(s) || s < 1 || s > MAX_SIZE)) throw new UsageError(`perf: sizes are 1 B to 4M, e.g. 8,1K,64K`);
    o.plan = { ...o.plan, sizes: list };
  }
  const target = p.positionals[0];
  if (target !== undefined) {
    const m = /^(.+):(\d+)$/.exec(target);
    if (!m) throw new UsageError(`perf: '${target}' is not HOST:PORT`);
    o.target = { host: m[1]!, port: Number(m[2]) };
  }
  if (!(Number.isInteger(o.plan.iterations) && o.plan.iterations >= 1)) throw new UsageError("perf: --iterations must be a positive integer");
  if (!(Number.isInteger(o.port) && o.port >= 0 && o.port < 65536)) throw new UsageError("perf: --port must be 0..65535");
  if (o.compare && o.target) throw new UsageError("perf: --compare runs the baselines locally; use it without HOST:PORT");
  return o;
}

function workerOptions(o: PerfOptions) {
  return { progressMode: o.mode, errorHandling: o.errorHandling, spinMicroseconds: o.spin, threadSpinMicroseconds: o.threadSpin, adaptiveThreadSpin: o.adaptiveThreadSpin };
}

/** Start `ucx-ts perf <args>` as a child and read the port from its first stdout line. */
async function startChild(args: readonly string[]): Promise<{ port: number; exited: Promise<number | null>; kill(): void; stderr(): string }> {
  const [cmd, ...pre] = selfArgv();
  const child = spawn(cmd!, [...pre, "perf", ...args], { stdio: ["ignore", "pipe", "pipe"] });
  let out = "";
  let err = "";
  child.stderr!.on("data", (d) => (err += d));
  const exited = new Promise<number | null>((resolve) => child.on("close", resolve));
  const port = await new Promise<number>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`perf server did not start: ${err}`)), 30_000);
    child.stdout!.on("data", (d) => {
      out += d;
      const line = out.split("\n").find((l) => l.startsWith('{"port"'));
      if (line) {
        clearTimeout(timer);
        resolve(JSON.parse(line).port);
      }
    });
    child.on("close", (code) => reject(new Error(`perf server exited (${code}): ${err}`)));
  });
  return { port, exited, kill: () => void child.kill("SIGKILL"), stderr: () => err };
}

export async function perfCommand(args: readonly string[], write: (t: string) => void): Promise<number> {
  if (args.includes("--layer")) return uctPerfCommand(args, write); // UCT level: its own module
  const o = parseOptions(args);
  if (o.netServer) {
    await serveNet((port) => process.stdout.write(JSON.stringify({ port }) + "\n"));
    return 0;
  }
  if (o.server) {
    const worker = await Worker.create(workerOptions(o));
    try {
      const listener = await worker.settled(worker.listen({ host: o.host, port: o.port }));
      process.stdout.write(JSON.stringify({ port: listener.port }) + "\n");
      const ep = await worker.settled(listener.accept());
      await worker.settled(listener.close());
      await serve(worker, ep);
      await worker.settled(ep.close()).catch(() => {});
    } finally {
      await worker.close();
    }
    return 0;
  }

  const rows: PerfRow[] = [];
  const system = `ucx-ts/${runtime}`;
  const local = o.target ? undefined : await startChild([
        "--server", "--port", "0", "--host", "127.0.0.1", "--mode", o.mode, "--error-handling", o.errorHandling,
        ...(o.spin !== undefined ? ["--spin", String(o.spin)] : []),
        ...(o.threadSpin !== undefined ? ["--thread-spin", String(o.threadSpin)] : []),
        ...(o.adaptiveThreadSpin !== undefined ? ["--adaptive-thread-spin", o.adaptiveThreadSpin ? "on" : "off"] : []),
      ]);
  const worker = await Worker.create(workerOptions(o));
  try {
    try {
      const ep = await worker.settled(worker.connect(o.target ?? { host: "127.0.0.1", port: local!.port }));
      await measure(worker, ep, o.plan, system, (r) => rows.push(r));
      await worker.settled(ep.close()).catch(() => {});
    } catch (e) {
      // The server's own words say more than "connection reset" on this side.
      const said = local?.stderr().trim();
      if (said && e instanceof Error) e.message += `\n(the perf server process said: ${said.split("\n").slice(-5).join(" | ")})`;
      throw e;
    }
  } finally {
    await worker.close();
    if (local && (await Promise.race([local.exited, new Promise((r) => setTimeout(() => r("timeout"), 5000))])) === "timeout") local.kill();
  }
  const notes: string[] = [];
  if (o.compare) {
    const perftest = perftestRows(o.plan, o.errorHandling === "peer");
    if (typeof perftest === "string") notes.push(`no ucx_perftest baseline: ${perftest}`);
    else rows.push(...perftest);
    const net = await startChild(["--net-server"]);
    await measureNet(net.port, o.plan, (r) => rows.push(r));
    await net.exited;
  }

  const title = `ucx-ts perf, ${system} ${runtimeVersion()}, UCX ${ucxVersion().text}, ${o.mode} mode, error handling ${o.errorHandling}, ${o.target ? `${o.target.host}:${o.target.port}` : "127.0.0.1"}, ${cpus().length} cores, ${new Date().toISOString()}`;
  write(title);
  write(table(rows, system));
  for (const n of notes) write(n);
  if (o.json) {
    writeFileSync(o.json, JSON.stringify({ title, runtime, mode: o.mode, errorHandling: o.errorHandling, plan: o.plan, rows }, null, 2) + "\n");
    write(`results written to ${o.json}`);
  }
  if (o.plot) {
    writeFileSync(o.plot, plotSvg(rows, title));
    write(`plot written to ${o.plot}`);
  }
  return 0;
}

/** Three significant digits without exponents: 0.137, 12.9, 378, 2260. */
function figure(v: number): string {
  return v >= 100 ? v.toFixed(0) : v >= 10 ? v.toFixed(1) : v >= 1 ? v.toFixed(2) : v.toPrecision(3);
}

/** One line per test and size: the value of each system, and ucx-ts against each baseline. */
function table(rows: readonly PerfRow[], ours: string): string {
  const systems = [...new Set(rows.map((r) => r.system))];
  const lines = [`${"test".padEnd(10)} ${"size".padStart(8)}  ${systems.map((s) => s.padStart(14)).join(" ")}${systems.length > 1 ? "   ucx-ts vs each" : ""}`];
  const keys = [...new Set(rows.map((r) => `${r.test}|${r.size}`))];
  for (const key of keys) {
    const [test, sizeText] = key.split("|") as [TestName, string];
    const size = Number(sizeText);
    const value = (s: string) => {
      const r = rows.find((x) => x.system === s && x.test === test && x.size === size);
      return r ? (isLatency(test) ? r.latencyUs! : r.MBps!) : undefined;
    };
    const mine = value(ours);
    const cells = systems.map((s) => {
      const v = value(s);
      return (v === undefined ? "-" : `${figure(v)} ${isLatency(test) ? "us" : "MB/s"}`).padStart(14);
    });
    const ratios = systems
      .filter((s) => s !== ours)
      .map((s) => {
        const v = value(s);
        if (v === undefined || mine === undefined) return "-";
        return `${(isLatency(test) ? v / mine : mine / v).toFixed(2)}x`;
      });
    lines.push(`${test.padEnd(10)} ${String(size).padStart(8)}  ${cells.join(" ")}${ratios.length ? "   " + ratios.join(" ") : ""}`);
  }
  lines.push("(ucx-ts vs each: > 1 means ucx-ts is faster; latency is one way, half the median round trip)");
  return lines.join("\n");
}
