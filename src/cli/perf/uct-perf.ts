/**
 * `ucx-ts perf --layer uct`: UCT-level am_lat, am_bw and put_bw between two processes, the tests
 * `ucx_perftest -t am_lat|am_bw|put_bw -x TRANSPORT -d DEVICE` runs (its uct-level tests), with
 * `--compare` running ucx_perftest on the same sizes in the same run.
 *
 * The measuring process starts its peer (`--uct-server`, the same CLI under the same runtime),
 * reads the peer's addresses and memory key from its stdout and gives its own on the peer's
 * stdin; both then poll their UCT worker on their one thread (src/core/uct/worker.ts).
 * Operations follow ucx_perftest's data layouts: short when the size fits the transport's
 * max_short, else bcopy, else zcopy.
 */
import { spawn } from "node:child_process";
import { writeFileSync } from "node:fs";
import process from "node:process";
import { createInterface } from "node:readline";
import {
  UCS_ERR_NO_RESOURCE,
  UCS_INPROGRESS,
  UCS_OK,
  UctComponent,
  UctInterface,
  UctMemory,
  UctRemoteKey,
  UctWorker,
  type UctEndpoint,
} from "../../core/uct/index.ts";
import { runtime } from "../../index.ts";
import { parseSize } from "../demo-protocol.ts";
import { flag, parseCommandArgs, stringOption, UsageError } from "../args.ts";
import { selfArgv } from "../self.ts";
import { runPerftest } from "./baselines.ts";

export const uctPerfHelp = `Usage: ucx-ts perf --layer uct --transport T --device D [options]

UCT-level latency and bandwidth between two processes on this host, like
'ucx_perftest -t am_lat|am_bw|put_bw -x T -d D' (short, bcopy or zcopy by size, as the
transport allows). Transports and devices: 'ucx-ts info' (UCT section).

Options:
  --tests T,...      am_lat, am_bw, put_bw (default all three)
  --sizes S,...      message sizes (default 8,4K)
  --iterations N     messages per point (default 20000)
  --compare          also run ucx_perftest with the same test, transport, device, size and count
  --json FILE        write the results as JSON

Example:
  ucx-ts perf --layer uct --transport posix --device memory --compare`;

type UctTest = "am_lat" | "am_bw" | "put_bw";
const TESTS: readonly UctTest[] = ["am_lat", "am_bw", "put_bw"];
const AM_ID = 1;
const ACK_ID = 2;

interface Options {
  transport: string;
  device: string;
  tests: UctTest[];
  sizes: number[];
  iterations: number;
  compare: boolean;
  json?: string;
  server: boolean;
}

export interface UctPerfRow {
  readonly system: string;
  readonly test: UctTest;
  readonly size: number;
  /** short, bcopy or zcopy */
  readonly layout: string;
  readonly latencyUs?: number;
  readonly MBps?: number;
}

const UCT_PERF_OPTIONS = {
  layer: { type: "string" },
  transport: { type: "string" },
  device: { type: "string" },
  compare: { type: "boolean" },
  "uct-server": { type: "boolean" }, // the peer process (not in --help)
  json: { type: "string" },
  iterations: { type: "string" },
  tests: { type: "string" },
  sizes: { type: "string" },
} as const;

function parse(args: readonly string[]): Options {
  const p = parseCommandArgs("perf", args, UCT_PERF_OPTIONS);
  if (stringOption(p, "layer") !== "uct") throw new UsageError("perf: --layer is uct (UCP is the default layer)");
  const iterationsText = stringOption(p, "iterations");
  const o: Options = {
    transport: stringOption(p, "transport") ?? "",
    device: stringOption(p, "device") ?? "",
    tests: [...TESTS],
    sizes: [8, 4096],
    iterations: iterationsText === undefined ? 20_000 : Number(iterationsText),
    compare: flag(p, "compare"),
    json: stringOption(p, "json"),
    server: flag(p, "uct-server"),
  };
  const tests = stringOption(p, "tests");
  if (tests !== undefined) {
    o.tests = tests.split(",") as UctTest[];
    const bad = o.tests.find((t) => !TESTS.includes(t));
    if (bad) throw new UsageError(`perf: unknown UCT test '${bad}' (tests: ${TESTS.join(", ")})`);
  }
  const sizes = stringOption(p, "sizes");
  if (sizes !== undefined) {
    o.sizes = sizes.split(",").map(parseSize);
    if (o.sizes.some((s) => !Number.isInteger(s) || s < 8 || s > 4 << 20)) throw new UsageError("perf: UCT sizes are 8 B to 4M");
  }
  if (!o.transport || !o.device) throw new UsageError("perf: --layer uct needs --transport and --device (see 'ucx-ts info')");
  if (!(Number.isInteger(o.iterations) && o.iterations >= 1)) throw new UsageError("perf: --iterations must be a positive integer");
  return o;
}

const hex = (b: Uint8Array) => Array.from(b, (x) => x.toString(16).padStart(2, "0")).join("");
const unhex = (s: string) => new Uint8Array((s.match(/../g) ?? []).map((x) => parseInt(x, 16)));

/** One side: a worker, an interface on the transport, memory for puts, and an endpoint to the other. */
class Side {
  readonly component: UctComponent;
  readonly worker = UctWorker.create();
  readonly iface: UctInterface;
  readonly target: UctMemory;
  readonly source: UctMemory;
  ep: UctEndpoint | undefined;
  received = 0;
  acks = 0;

  constructor(o: Options, maxSize: number) {
    const found = UctComponent.list().flatMap((c) =>
      c.memoryDomainNames.map((md) => ({ c, md })),
    );
    let opened: { c: UctComponent; iface: UctInterface } | undefined;
    for (const { c, md: mdName } of found) {
      const md = c.openMemoryDomain(mdName);
      if (md.transportResources().some((r) => r.transport === o.transport && r.device === o.device)) {
        opened = { c, iface: UctInterface.open(this.worker, md, o.transport, o.device) };
        break;
      }
      md.close();
    }
    if (!opened) throw new UsageError(`perf: no UCT transport ${o.transport} on device ${o.device} here (see 'ucx-ts info')`);
    this.component = opened.c;
    this.iface = opened.iface;
    this.target = this.iface.memoryForRemoteAccess(maxSize);
    this.source = this.iface.memoryForRemoteAccess(maxSize);
    if (this.iface.attributes.capabilities.some((c) => c.startsWith("am_"))) {
      this.iface.setAmHandler(AM_ID, () => void this.received++);
      this.iface.setAmHandler(ACK_ID, () => void this.acks++);
    }
    if (this.iface.attributes.connectToEndpoint && !this.iface.attributes.connectToInterface) this.ep = this.iface.createEndpoint();
  }

  hello(): Record<string, unknown> {
    const a = this.iface.address();
    return {
      deviceAddress: hex(a.deviceAddress),
      interfaceAddress: hex(a.interfaceAddress),
      endpointAddress: this.ep && this.iface.attributes.connectToEndpoint && !this.iface.attributes.connectToInterface ? hex(this.ep.address()) : "",
      rkey: hex(this.target.packRemoteKey()),
      address: this.target.address,
    };
  }

  connect(peer: Record<string, string>): void {
    if (this.ep) this.ep.connectToEndpoint(unhex(peer.deviceAddress!), unhex(peer.endpointAddress!));
    else this.ep = this.iface.connect({ deviceAddress: unhex(peer.deviceAddress!), interfaceAddress: unhex(peer.interfaceAddress!) });
  }

  amLayout(size: number): string | undefined {
    const a = this.iface.attributes;
    if (a.capabilities.includes("am_short") && size <= a.am.maxShort) return "short";
    if (a.capabilities.includes("am_bcopy") && size <= a.am.maxBcopy) return "bcopy";
    return undefined;
  }

  putLayout(size: number): string | undefined {
    const a = this.iface.attributes;
    if (a.capabilities.includes("put_short") && size <= a.put.maxShort) return "short";
    if (a.capabilities.includes("put_bcopy") && size <= a.put.maxBcopy) return "bcopy";
    if (a.capabilities.includes("put_zcopy") && size <= a.put.maxZcopy) return "zcopy";
    return undefined;
  }

  /** Send one AM of `size` bytes with `layout`, progressing while UCT has no resources. */
  sendAm(id: number, layout: string, size: number): void {
    const ep = this.ep!;
    const payload = this.source.bytes.subarray(0, size - 8);
    const whole = this.source.bytes.subarray(0, size);
    for (;;) {
      const s = layout === "short" ? ep.amShort(id, 0, payload) : ep.amBcopy(id, whole);
      if (s !== UCS_ERR_NO_RESOURCE) return;
      this.worker.progress();
    }
  }

  /** Progress until `done()`, synchronously (the measurement loops), with a deadline. */
  spin(done: () => boolean, what: string): void {
    const deadline = Date.now() + 60_000;
    let n = 0;
    while (!done()) {
      this.worker.progress();
      if (++n % 4096 === 0 && Date.now() > deadline) throw new Error(`UCT perf: ${what} did not happen in 60 s`);
    }
  }

  close(): void {
    this.source.release();
    this.target.release();
    const md = this.iface.memoryDomain;
    this.worker.close();
    md.close();
  }
}

/** The peer: answers pings (am_lat), counts and acknowledges (am_bw), holds memory (put_bw). */
async function serve(o: Options): Promise<void> {
  const side = new Side(o, Math.max(...o.sizes));
  const commands: Array<Record<string, string | number>> = [];
  const lines = createInterface({ input: process.stdin });
  lines.on("line", (l) => commands.push(JSON.parse(l)));
  lines.on("close", () => commands.push({ cmd: "quit" }));
  process.stdout.write(JSON.stringify(side.hello()) + "\n");
  try {
    for (;;) {
      await side.worker.progressUntil(() => commands.length > 0, { timeoutMs: 600_000, what: "a command" });
      const c = commands.shift()!;
      if (c.cmd === "quit") return;
      if (c.cmd === "connect") side.connect(c as Record<string, string>);
      else if (c.cmd === "am_lat" || c.cmd === "am_bw") {
        const n = c.n as number;
        const size = c.size as number;
        const layout = side.amLayout(size)!;
        side.received = 0;
        process.stdout.write('{"ready":true}\n');
        if (c.cmd === "am_lat") {
          for (let i = 0; i < n; i++) {
            side.spin(() => side.received > i, "a ping");
            side.sendAm(AM_ID, layout, size);
          }
        } else {
          side.spin(() => side.received >= n, "all messages");
          side.sendAm(ACK_ID, "short", 8);
        }
        continue;
      }
      process.stdout.write('{"ready":true}\n');
    }
  } finally {
    lines.close();
    side.close();
  }
}

async function measure(o: Options, write: (t: string) => void): Promise<UctPerfRow[]> {
  const side = new Side(o, Math.max(...o.sizes)); // first: a transport this host lacks fails before any child starts
  const [cmd, ...pre] = selfArgv();
  const child = spawn(cmd!, [...pre, "perf", "--layer", "uct", "--uct-server", "--transport", o.transport, "--device", o.device, "--sizes", o.sizes.join(",")], {
    stdio: ["pipe", "pipe", "pipe"],
  });
  let stderr = "";
  child.stderr!.on("data", (d) => (stderr += d));
  const answers: Array<Record<string, unknown>> = [];
  createInterface({ input: child.stdout! }).on("line", (l) => {
    try {
      answers.push(JSON.parse(l));
    } catch {
      /* not ours */
    }
  });
  let exited = false;
  child.on("exit", () => (exited = true));
  const next = async () => {
    await side.worker.progressUntil(() => answers.length > 0 || exited, { timeoutMs: 60_000, what: "the peer process" });
    if (answers.length === 0) throw new Error(`UCT perf peer ended: ${stderr.trim()}`);
    return answers.shift()!;
  };
  const ask = async (c: Record<string, unknown>) => {
    child.stdin!.write(JSON.stringify(c) + "\n");
    return next();
  };
  const rows: UctPerfRow[] = [];
  try {
    const peer = (await next()) as Record<string, string>;
    side.connect(peer);
    await ask({ cmd: "connect", ...side.hello() });
    const rkey = UctRemoteKey.unpack(side.component, unhex(peer.rkey!));
    const remote = Number(peer.address);
    const system = `ucx-ts/${runtime}`;
    for (const test of o.tests) {
      for (const size of o.sizes) {
        const layout = test === "put_bw" ? side.putLayout(size) : side.amLayout(size);
        if (!layout) {
          write(`  ${test} ${size} B: ${o.transport} has no layout for it, skipped`);
          continue;
        }
        const n = o.iterations;
        await ask({ cmd: test, n, size });
        const t0 = performance.now();
        // am_lat reports the median half round trip, as ucx_perftest's "typical" latency column
        // (its 50th percentile): on a shared 2-core host the mean is the scheduler's, not UCT's.
        const roundTrips = test === "am_lat" ? new Float64Array(n) : undefined;
        if (roundTrips) {
          side.received = 0;
          for (let i = 0; i < n; i++) {
            const t = performance.now();
            side.sendAm(AM_ID, layout, size);
            side.spin(() => side.received > i, "a pong");
            roundTrips[i] = performance.now() - t;
          }
        } else if (test === "am_bw") {
          side.acks = 0;
          for (let i = 0; i < n; i++) side.sendAm(AM_ID, layout, size);
          side.spin(() => side.acks > 0, "the peer's acknowledgement");
        } else {
          putAll(side, layout, size, n, remote, rkey);
        }
        const us = (performance.now() - t0) * 1000;
        rows.push(roundTrips ? { system, test, size, layout, latencyUs: (roundTrips.sort()[n >> 1]! * 1000) / 2 } : { system, test, size, layout, MBps: (n * size) / us });
        if (o.compare) {
          const m = runPerftest(["-t", test, "-x", o.transport, "-d", o.device, "-s", String(size), "-n", String(n), "-D", layout]);
          if (m) rows.push(test === "am_lat" ? { system: "ucx_perftest", test, size, layout, latencyUs: Number(m[1]) } : { system: "ucx_perftest", test, size, layout, MBps: (Number(m[2]) * 1048576) / 1e6 });
          else write(`  ucx_perftest ${test} ${size} B (${layout}): no result`);
        }
      }
    }
    rkey.release();
    child.stdin!.write('{"cmd":"quit"}\n');
    await side.worker.progressUntil(() => exited, { timeoutMs: 10_000, what: "the peer's exit" }).catch(() => child.kill("SIGKILL"));
  } finally {
    if (!exited) child.kill("SIGKILL");
    side.close();
  }
  return rows;
}

/** put_bw: `n` puts of `size` bytes, retried on NO_RESOURCE, then a flush until done. */
function putAll(side: Side, layout: string, size: number, n: number, remote: number, rkey: UctRemoteKey): void {
  const ep = side.ep!;
  const data = side.source.bytes.subarray(0, size);
  const iov = [{ buffer: data, memory: side.source }];
  for (let i = 0; i < n; i++) {
    for (;;) {
      const s = layout === "short" ? ep.putShort(data, remote, rkey) : layout === "bcopy" ? ep.putBcopy(data, remote, rkey) : ep.putZcopy(iov, remote, rkey);
      if (s !== UCS_ERR_NO_RESOURCE) break;
      side.worker.progress();
    }
  }
  let f: number = UCS_INPROGRESS;
  side.spin(() => (f = ep.flush()) === UCS_OK, "the flush");
  void f;
}

export async function uctPerfCommand(args: readonly string[], write: (t: string) => void): Promise<number> {
  const o = parse(args);
  if (o.server) {
    await serve(o);
    return 0;
  }
  const rows = await measure(o, write);
  write(`UCT ${o.transport}/${o.device}, two processes, ${o.iterations} messages a point, ${runtime}`);
  write("system             test     size  layout       latency us        MB/s   ucx-ts / ucx_perftest");
  for (const r of rows) {
    const base = rows.find((b) => b.system === "ucx_perftest" && b.test === r.test && b.size === r.size);
    const ratio =
      base && r.system !== "ucx_perftest" ? (r.latencyUs !== undefined ? r.latencyUs / base.latencyUs! : r.MBps! / base.MBps!).toFixed(2) : "";
    write(
      `${r.system.padEnd(18)} ${r.test.padEnd(7)} ${String(r.size).padStart(6)}  ${r.layout.padEnd(6)} ${(r.latencyUs?.toFixed(3) ?? "").padStart(14)} ${(r.MBps?.toPrecision(4) ?? "").padStart(11)}   ${ratio}`,
    );
  }
  if (o.json) writeFileSync(o.json, JSON.stringify({ transport: o.transport, device: o.device, runtime, iterations: o.iterations, rows }, null, 2));
  return 0;
}
