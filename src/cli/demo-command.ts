/**
 * `ucx-ts demo`: a real transfer between two processes. This process listens (UCX listener and a
 * node:net server on 127.0.0.1), starts a second process of the same runtime running this same
 * command as a peer (`--peer`, see demo-peer.ts), then for each size measures tag send/recv
 * round trips and bandwidth, and the same transfers over node:net, verifying every byte.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { createServer, type Server, type Socket } from "node:net";
import process from "node:process";
import { runtimeVersion } from "../ffi/index.ts";
import { defaultProgressMode, PROGRESS_MODES, runtime, ucxVersion, USER_TAG_MASK, Worker, type Endpoint, type ErrorHandling, type ProgressMode } from "../index.ts";
import { choiceOption, flag, parseCommandArgs, stringOption, UsageError } from "./args.ts";
import { selfArgv } from "./self.ts";
import { ackFor, runPeer, type PeerReport } from "./demo-peer.ts";
import {
  BULK_ROUNDS,
  bulkSeed,
  DEFAULT_SIZES,
  formatSize,
  parseSize,
  patternFor,
  plan,
  receiveBuffer,
  sizesUpTo,
  StreamReader,
  TAG_ACK,
  TAG_BULK,
  TAG_BYE,
  TAG_FIN,
  TAG_PING,
  TAG_PONG,
  verify,
  VerifyError,
  window,
  type Plan,
} from "./demo-protocol.ts";

export const demoHelp = `Usage: ucx-ts demo [--mode thread|polling|hybrid] [--error-handling peer|none] [--max-size SIZE] [--json]

A transfer between two processes on 127.0.0.1: this one listens, a second one (the same runtime
running the same command) connects, and for each message size (8 B, 1 KiB, 64 KiB, 1 MiB,
16 MiB, 64 MiB) they exchange tagged messages with deterministic content. Every byte received
on either side is compared with what was sent; any difference fails the demo (exit 1).

For each size it prints the median round-trip time of a series of ping-pongs and the bandwidth
of a series of one-way transfers, for ucx-ts and for the same exchange over node:net (a TCP
socket between the same two processes), and which UCX transports the endpoint used.

Options:
  --mode MODE              progress mode of both workers: hybrid (the application thread
                           drives UCX by itself while it waits; the default), thread (a
                           progress thread) or polling (the application progresses the worker)
  --error-handling EH      peer: UCX detects a dead peer (the library's default); on UCX 1.13
                           this restricts two processes to tcp over loopback.
                           none: no peer failure detection; UCX may use shared memory.
                           Without this option the demo runs both, peer first.
  --max-size SIZE          largest message (default 64MiB; e.g. 4096, 64KiB, 16M)
  --json                   print the results as JSON

Examples:
  npx ucx-ts demo
  npx ucx-ts demo --mode polling --error-handling none --max-size 1MiB
  deno run -A bin/ucx-ts.mjs demo --json`;

const HOST = "127.0.0.1";
/** Bound on one pass (the child is killed and the demo fails past it). */
const PASS_TIMEOUT_MS = 60_000;

interface DemoOptions {
  readonly mode: ProgressMode;
  readonly errorHandling: ErrorHandling | undefined;
  readonly sizes: readonly number[];
  readonly json: boolean;
  readonly corrupt: boolean;
}

export interface Measurement {
  /** Median round trip (µs) over the counted ping-pongs, and the fastest one. */
  readonly rttMedianUs: number;
  readonly rttMinUs: number;
  /** Bandwidth of the one-way transfers, 10^6 bytes per second. */
  readonly mbPerSecond: number;
}

export interface Row {
  readonly size: number;
  readonly pingPongs: number;
  readonly transfers: number;
  readonly ucx: Measurement;
  readonly tcp: Measurement;
  /** node:net time over ucx-ts time: above 1, ucx-ts is faster. */
  readonly speedup: { readonly rtt: number; readonly bandwidth: number };
}

export interface PassResult {
  readonly errorHandling: ErrorHandling;
  readonly transports: { readonly listener: string[]; readonly peer: string[] };
  readonly rows: Row[];
  readonly verified: { messages: number; bytes: number };
}

const DEMO_OPTIONS = {
  json: { type: "boolean" },
  mode: { type: "string" },
  "error-handling": { type: "string" },
  "max-size": { type: "string" },
  // The peer process's own options (not in --help).
  peer: { type: "string" },
  "tcp-port": { type: "string" },
  corrupt: { type: "boolean" }, // tests: the peer damages one byte of its first pong
  sizes: { type: "string" },
} as const;

// Every mode but blocking: the demo awaits through worker.settled(), which drives a blocking
// worker exactly as a polling one (worker/progress-driver.ts), so it would measure polling twice.
const DEMO_MODES = PROGRESS_MODES.filter((m) => m !== "blocking");

function parseOptions(args: readonly string[]): DemoOptions & { peer?: string; tcpPort?: number } {
  const p = parseCommandArgs("demo", args, DEMO_OPTIONS);
  const mode: ProgressMode = choiceOption("demo", p, "mode", DEMO_MODES) ?? defaultProgressMode();
  const errorHandling = choiceOption("demo", p, "error-handling", ["peer", "none"] as const);
  let maxSize = DEFAULT_SIZES[DEFAULT_SIZES.length - 1]!;
  const maxText = stringOption(p, "max-size");
  if (maxText !== undefined) {
    maxSize = parseSize(maxText);
    if (!Number.isSafeInteger(maxSize) || maxSize < 1 || maxSize > 1024 ** 3) {
      throw new UsageError(`demo: --max-size must be a size from 1 byte to 1GiB (e.g. 4096, 64KiB, 16M), got '${maxText}'`);
    }
  }
  const sizesText = stringOption(p, "sizes");
  const sizes = sizesText?.split(",").map(Number);
  if (sizes?.some((s) => !Number.isSafeInteger(s) || s < 1)) throw new UsageError(`demo: bad --sizes`);
  const tcpPortText = stringOption(p, "tcp-port");
  return {
    mode,
    errorHandling,
    sizes: sizes ?? sizesUpTo(maxSize),
    json: flag(p, "json"),
    peer: stringOption(p, "peer"),
    tcpPort: tcpPortText === undefined ? undefined : Number(tcpPortText),
    corrupt: flag(p, "corrupt"),
  };
}

export async function demoCommand(args: readonly string[], write: (text: string) => void): Promise<number> {
  const o = parseOptions(args);
  if (o.peer !== undefined) {
    const m = /^(.+):(\d+)$/.exec(o.peer);
    if (!m || o.tcpPort === undefined || !(o.tcpPort > 0)) throw new UsageError("demo: --peer needs HOST:PORT and --tcp-port");
    return runPeer(
      { host: m[1]!, port: Number(m[2]), tcpPort: o.tcpPort, sizes: o.sizes, mode: o.mode, errorHandling: o.errorHandling ?? "peer", timeoutMs: PASS_TIMEOUT_MS - 5_000, corrupt: o.corrupt },
      write,
    );
  }

  const started = performance.now();
  const version = ucxVersion().text;
  const ffi = { node: "koffi", deno: "Deno.dlopen", bun: "bun:ffi" }[runtime];
  const passes: ErrorHandling[] = o.errorHandling ? [o.errorHandling] : ["peer", "none"];
  const text = !o.json;
  if (text) {
    write(`ucx-ts demo: tag send/recv between two ${runtime} processes on ${HOST}, and the same over node:net`);
    write(`UCX ${version}, ${runtime} ${runtimeVersion()} (${ffi}), progress mode ${o.mode}, sizes ${o.sizes.map(formatSize).join(", ")}`);
  }
  const results: PassResult[] = [];
  for (const errorHandling of passes) {
    if (text) write(`\n${passHeading(errorHandling)}\n${tableHeader()}`);
    const result = await runPass(o, errorHandling, (row) => text && write(formatRow(row)));
    results.push(result);
    if (text) {
      write(`  UCX transports: ${result.transports.listener.join(", ") || "?"} (listener side), ${result.transports.peer.join(", ") || "?"} (peer side)`);
    }
  }
  const seconds = (performance.now() - started) / 1000;
  const verified = results.reduce((t, r) => ({ messages: t.messages + r.verified.messages, bytes: t.bytes + r.verified.bytes }), { messages: 0, bytes: 0 });
  if (o.json) {
    write(JSON.stringify({ ucx: version, runtime, runtimeVersion: runtimeVersion(), ffi, host: HOST, progressMode: o.mode, sizes: o.sizes, passes: results, verified, seconds }, null, 2));
  } else {
    write("");
    write(`RTT: median round trip of the ping-pongs; MB/s: 10^6 bytes/s of one-way transfers, sent by`);
    write(`ucx-ts in windows with ep.sendMany and received with ep.recvMany (256 messages a window up to 1 KiB,`);
    write(`all windows at once, as node:net's writes; 32 to 64 KiB, 8 to 1 MiB, then 2, two windows in`);
    write(`flight), by node:net as socket writes; each phase run twice on both, the second timed (the`);
    write(`first warms up); the receiver checks every byte after it has acknowledged the transfers,`);
    write(`outside the timed part;`);
    write(`speed-up: node:net time / ucx-ts time, for RTT and for MB/s.`);
    if (results.length === 2) {
      const used = (r: PassResult) => r.transports.listener.join(", ") || "?";
      write(`UCX chose ${used(results[0]!)} with error handling "peer" and ${used(results[1]!)} with "none":`);
      write(`on UCX ${version}, only transports that can detect a dead peer qualify for "peer".`);
    } else {
      write(`(without --error-handling the demo runs both "peer" and "none", to compare the transports)`);
    }
    write(`verified: ${verified.messages} messages, ${verified.bytes >= 2 ** 20 ? `${(verified.bytes / 2 ** 20).toFixed(1)} MiB` : `${(verified.bytes / 1024).toFixed(1)} KiB`}, every byte received compared with what was sent (${seconds.toFixed(1)} s)`);
  }
  return 0;
}

function passHeading(eh: ErrorHandling): string {
  return eh === "peer"
    ? `error handling "peer" (the library's default): UCX detects a dead peer`
    : `error handling "none": no peer failure detection`;
}

// --- one pass: a peer process, its connections, every size -------------------------------------

async function runPass(o: DemoOptions, errorHandling: ErrorHandling, onRow: (row: Row) => void): Promise<PassResult> {
  const worker = await Worker.create({ progressMode: o.mode, errorHandling });
  let server: Server | undefined;
  let peer: Peer | undefined;
  let socket: Socket | undefined;
  try {
    const listener = await worker.listen({ host: HOST, port: 0 });
    server = createServer();
    const tcpPort = await new Promise<number>((resolve, reject) => {
      server!.once("error", reject);
      server!.listen(0, HOST, () => resolve((server!.address() as { port: number }).port));
    });
    const connection = new Promise<Socket>((resolve) => server!.once("connection", resolve));

    peer = startPeer([
      "demo",
      "--peer",
      `${HOST}:${listener.port}`,
      "--tcp-port",
      String(tcpPort),
      "--sizes",
      o.sizes.join(","),
      "--mode",
      o.mode,
      "--error-handling",
      errorHandling,
      ...(o.corrupt ? ["--corrupt"] : []),
    ]);
    const guard = peer.guard;

    // In polling mode nothing moves unless this process progresses its worker, so every wait
    // that the peer's UCX side may depend on is a `worker.settled` (the node:net phases are not:
    // UCX is idle then, and progressing it would slow node:net down).
    const ep = await guard(worker.settled(listener.accept()));
    socket = await guard(worker.settled(connection)); // the peer connects once UCX has wired up
    socket.setNoDelay(true);
    const reader = new StreamReader(socket);
    // Posted now, on the worker (not the endpoint, whose receives would keep progressing in
    // polling mode): the peer may close right after sending it.
    // The peer's endpoint came through the hello: its tags carry this endpoint's receive scope
    // above the 48 bits USER_TAG_MASK keeps, which a worker-wide receive must not insist on.
    const bye = worker.recv(new Uint8Array(8), TAG_BYE, USER_TAG_MASK);
    bye.catch(() => {});
    const link: Link = { worker, ep, socket, reader, guard, verified: { messages: 0, bytes: 0 } };

    const rows: Row[] = [];
    for (const size of o.sizes) {
      const row = await measureSize(link, plan(size));
      rows.push(row);
      onRow(row);
    }

    const transports = await guard(ep.transports());
    await guard(ep.send(new Uint8Array(8), TAG_FIN));
    await guard(worker.settled(withTimeout(bye, 20_000, "waiting for the peer's goodbye")));
    await guard(withTimeout(ep.close(), 10_000, "closing the endpoint"));
    await guard(withTimeout(listener.close(), 10_000, "closing the listener"));
    socket.end();
    const exit = await worker.settled(withTimeout(peer.exit, 20_000, "waiting for the peer process to exit"));
    if (exit !== "status 0") throw peer.failure(exit);
    const report = JSON.parse(peer.stdout().trim().split("\n").pop() ?? "{}") as PeerReport;
    return {
      errorHandling,
      transports: { listener: transports, peer: report.transports ?? [] },
      rows,
      verified: { messages: link.verified.messages + report.verified.messages, bytes: link.verified.bytes + report.verified.bytes },
    };
  } catch (e) {
    // A peer that died is the news, not the reset connection this process saw because of it.
    const exit = peer && (await Promise.race([peer.exit, new Promise<undefined>((r) => setTimeout(() => r(undefined), 500))]));
    throw exit && exit !== "status 0" && !(e instanceof VerifyError || e instanceof PeerFailure) ? peer!.failure(exit, e) : e;
  } finally {
    peer?.kill();
    socket?.destroy();
    server?.close();
    await withTimeout(worker.close(), 10_000, "closing the worker").catch(() => {});
  }
}

interface Link {
  readonly worker: Worker;
  readonly ep: Endpoint;
  readonly socket: Socket;
  readonly reader: StreamReader;
  readonly guard: <T>(p: Promise<T>) => Promise<T>;
  readonly verified: { messages: number; bytes: number };
}

async function measureSize(l: Link, p: Plan): Promise<Row> {
  const pattern = patternFor(p.size);
  const check = (got: Uint8Array, seed: number, what: string) => {
    verify(got, pattern, p.size, seed, `${what} of ${formatSize(p.size)} (message ${seed})`);
    l.verified.messages++;
    l.verified.bytes += got.length;
  };
  const ack = ackFor(p);
  const checkAck = (got: Uint8Array, what: string) => {
    if (!got.every((b, i) => b === ack[i])) throw new Error(`${what}: the peer's acknowledgement is wrong`);
  };
  const { ep, socket, reader, guard } = l;

  // ucx-ts: ping-pongs, then one-way transfers acknowledged at the end.
  const into = receiveBuffer(p.size);
  const ucxRtts: number[] = [];
  for (let i = 0; i < p.pings; i++) {
    const pong = ep.recv(into, TAG_PONG);
    const t0 = performance.now();
    const [, r] = await guard(Promise.all([ep.send(window(pattern, p.size, i), TAG_PING), pong]));
    const t1 = performance.now();
    if (i >= p.warmup) ucxRtts.push(t1 - t0);
    check(into.subarray(0, r.length), i, "ucx-ts pong");
  }
  // The bulk phase as a stream of messages is sent: windows of `p.window` messages, one
  // sendMany each, `p.inFlight` windows in flight. The peer verifies what it received after it has
  // acknowledged, so the time is the transport's, not the checker's. BULK_ROUNDS times, the
  // last one timed (demo-protocol.ts: the first is a warm-up, for node:net too).
  const ucxBulk = async (): Promise<number> => {
    const ucxAck = new Uint8Array(8);
    const ucxAckRecv = ep.recv(ucxAck, TAG_ACK);
    const t0 = performance.now();
    const windows: Promise<void>[] = [];
    for (let i = 0; i < p.transfers; i += p.window) {
      if (windows.length >= p.inFlight) await guard(windows.shift()!);
      const batch: Uint8Array[] = [];
      for (let k = i; k < Math.min(i + p.window, p.transfers); k++) batch.push(window(pattern, p.size, bulkSeed(p, k)));
      windows.push(ep.sendMany(batch, TAG_BULK));
    }
    await guard(Promise.all([...windows, ucxAckRecv]));
    const seconds = (performance.now() - t0) / 1000;
    checkAck(ucxAck, "ucx-ts");
    return seconds;
  };
  let ucxSeconds = 0;
  for (let round = 0; round < BULK_ROUNDS; round++) ucxSeconds = await ucxBulk();

  // node:net: the same schedule on the socket.
  const tcpRtts: number[] = [];
  for (let i = 0; i < p.pings; i++) {
    const t0 = performance.now();
    socket.write(window(pattern, p.size, i));
    await guard(reader.read(into));
    const t1 = performance.now();
    if (i >= p.warmup) tcpRtts.push(t1 - t0);
    check(into, i, "node:net pong");
  }
  const tcpBulk = async (): Promise<number> => {
    const tcpAck = new Uint8Array(8);
    const t0 = performance.now();
    for (let i = 0; i < p.transfers; i++) socket.write(window(pattern, p.size, bulkSeed(p, i)));
    await guard(reader.read(tcpAck));
    const seconds = (performance.now() - t0) / 1000;
    checkAck(tcpAck, "node:net");
    return seconds;
  };
  let tcpSeconds = 0;
  for (let round = 0; round < BULK_ROUNDS; round++) tcpSeconds = await tcpBulk();

  const bytes = p.size * p.transfers;
  const ucx = measurement(ucxRtts, bytes, ucxSeconds);
  const tcp = measurement(tcpRtts, bytes, tcpSeconds);
  return {
    size: p.size,
    pingPongs: ucxRtts.length,
    transfers: p.transfers,
    ucx,
    tcp,
    speedup: { rtt: round(tcp.rttMedianUs / ucx.rttMedianUs), bandwidth: round(ucx.mbPerSecond / tcp.mbPerSecond) },
  };
}

function measurement(rttsMs: number[], bytes: number, seconds: number): Measurement {
  const sorted = [...rttsMs].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  const median = sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
  return { rttMedianUs: round(median * 1000), rttMinUs: round(sorted[0]! * 1000), mbPerSecond: round(bytes / seconds / 1e6) };
}

function round(x: number): number {
  return Number(x.toPrecision(4));
}

// --- the table -----------------------------------------------------------------------------------

const COLUMNS = [
  ["size", 8],
  ["ucx-ts RTT", 11],
  ["node:net RTT", 12],
  ["ucx-ts MB/s", 11],
  ["node:net MB/s", 13],
  ["speed-up RTT | MB/s", 19],
] as const;

function tableHeader(): string {
  const head = COLUMNS.map(([name, width], i) => (i === 0 ? name.padEnd(width) : name.padStart(width))).join(" | ");
  const rule = COLUMNS.map(([, width]) => "-".repeat(width)).join("-+-");
  return `  ${head}\n  ${rule}`;
}

function formatRow(r: Row): string {
  const cells = [
    formatSize(r.size),
    formatTime(r.ucx.rttMedianUs),
    formatTime(r.tcp.rttMedianUs),
    formatRate(r.ucx.mbPerSecond),
    formatRate(r.tcp.mbPerSecond),
    `${r.speedup.rtt.toFixed(2)}x | ${r.speedup.bandwidth.toFixed(2)}x`,
  ];
  return `  ${cells.map((c, i) => (i === 0 ? c.padEnd(COLUMNS[i]![1]) : c.padStart(COLUMNS[i]![1]))).join(" | ")}`;
}

function formatTime(us: number): string {
  return us >= 1000 ? `${(us / 1000).toFixed(2)} ms` : `${us.toFixed(1)} µs`;
}

function formatRate(mbps: number): string {
  return mbps >= 100 ? mbps.toFixed(0) : mbps >= 1 ? mbps.toFixed(1) : mbps.toFixed(2);
}

// --- the peer process ----------------------------------------------------------------------------

interface Peer {
  /** Resolves with how the peer ended: `status N` or `signal SIG`. */
  readonly exit: Promise<string>;
  /** The error for a peer that ended with `exit`, with its stderr. */
  failure(exit: string, cause?: unknown): Error;
  /** Race `p` against the peer's death: a peer that exits before the end fails the awaiting step. */
  guard<T>(p: Promise<T>): Promise<T>;
  stdout(): string;
  stderr(): string;
  kill(): void;
}

/** argv that runs this same CLI under this same runtime. */
function startPeer(args: readonly string[]): Peer {
  const [cmd, ...pre] = selfArgv();
  const child: ChildProcess = spawn(cmd!, [...pre, ...args], { stdio: ["ignore", "pipe", "pipe"] });
  let out = "";
  let err = "";
  child.stdout!.on("data", (d) => (out += d));
  child.stderr!.on("data", (d) => (err += d));
  let running = true;
  const watchdog = setTimeout(() => {
    err += `\n(killed by the demo's watchdog after ${PASS_TIMEOUT_MS} ms)`;
    child.kill("SIGKILL");
  }, PASS_TIMEOUT_MS);
  const exit = new Promise<string>((resolve) => {
    child.on("error", (e) => {
      err += `\n${e.message}`;
      running = false;
      clearTimeout(watchdog);
      resolve("not started");
    });
    child.on("close", (code, signal) => {
      running = false;
      clearTimeout(watchdog);
      resolve(signal ? `signal ${signal}` : `status ${code}`);
    });
  });
  const failure = (how: string, cause?: unknown) => {
    const seen = cause instanceof Error ? ` (here: ${cause.message})` : "";
    return new PeerFailure(`the peer process failed (${how})${seen}${err.trim() ? `:\n${err.trim()}` : ""}`);
  };
  // Rejects when the peer fails (it exits 0 only once the demo is done with it).
  const died = exit.then((how) => {
    if (how === "status 0") return new Promise<never>(() => {});
    throw failure(how);
  });
  died.catch(() => {});
  return {
    exit,
    failure,
    guard: <T>(p: Promise<T>) => Promise.race([p, died]),
    stdout: () => out,
    stderr: () => err.trim(),
    kill: () => {
      if (running) child.kill("SIGKILL");
    },
  };
}

class PeerFailure extends Error {
  override name = "PeerFailure";
}

function withTimeout<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`demo: timed out ${what} (${ms} ms)`)), ms);
  });
  return Promise.race([p, timeout]).finally(() => clearTimeout(timer));
}
