/**
 * The baselines `ucx-ts perf --compare` measures in the same run: UCX's own ucx_perftest (C,
 * same test, size and error handling) and node:net over 127.0.0.1 (what a JS program would use
 * without ucx-ts: ping-pong for latency, a window of writes per round for bandwidth).
 */
import { spawn, spawnSync } from "node:child_process";
import { createConnection, createServer, type Socket } from "node:net";
import { bandwidthRounds, isLatency, PERFTEST_NAME, WINDOW, type PerfPlan, type PerfRow } from "./tests.ts";

/** ucx_perftest rows, or a reason it could not run. */
export function perftestRows(plan: PerfPlan, errorHandlingPeer: boolean): PerfRow[] | string {
  if (spawnSync("ucx_perftest", ["-h"]).error) return "ucx_perftest is not installed (ucx-utils)";
  const rows: PerfRow[] = [];
  for (const test of plan.tests) {
    for (const size of plan.sizes) {
      const n = isLatency(test) ? plan.iterations : bandwidthRounds(plan) * WINDOW;
      const m = runPerftest(["-t", PERFTEST_NAME[test], "-s", String(size), "-n", String(n), ...(errorHandlingPeer ? ["-e"] : [])]);
      if (!m) continue;
      rows.push(isLatency(test) ? { system: "ucx_perftest", test, size, latencyUs: Number(m[1]) } : { system: "ucx_perftest", test, size, MBps: (Number(m[2]) * 1048576) / 1e6 });
    }
  }
  return rows;
}

/**
 * One ucx_perftest client run against a server of its own; the "Final:" line's match, or null.
 * The server is given longer to start on each of a few tries, on a new port each time: with a
 * fixed 0.3 s, a loaded machine (the Deno suite of a CI run) had the client find no server and a
 * row went missing now and then.
 */
export function runPerftest(args: string[]): RegExpExecArray | null {
  for (let attempt = 1; attempt <= 4; attempt++) {
    const port = 20000 + Math.floor(Math.random() * 20000);
    const server = spawn("ucx_perftest", ["-p", String(port)], { stdio: "ignore" });
    spawnSync("sleep", [String(0.3 * attempt)]);
    const r = spawnSync("ucx_perftest", ["127.0.0.1", "-p", String(port), ...args], { encoding: "utf8", timeout: 120_000 });
    server.kill("SIGKILL");
    // Final: iterations, typical lat, avg lat, overall lat, avg bw (MB/s = 2^20 B/s), ...
    const m = /Final:\s+\d+\s+([\d.]+)\s+[\d.]+\s+[\d.]+\s+([\d.]+)/.exec(r.stdout ?? "");
    if (m) return m;
  }
  return null;
}

/** Reads exactly n bytes at a time from a socket. */
class Reader {
  private chunks: Buffer[] = [];
  private have = 0;
  private waiting: { n: number; resolve: (b: Buffer) => void } | undefined;

  constructor(socket: Socket) {
    socket.on("data", (d: Buffer) => {
      this.chunks.push(d);
      this.have += d.length;
      this.pump();
    });
  }

  read(n: number): Promise<Buffer> {
    return new Promise((resolve) => {
      this.waiting = { n, resolve };
      this.pump();
    });
  }

  private pump(): void {
    const w = this.waiting;
    if (!w || this.have < w.n) return;
    const all = Buffer.concat(this.chunks);
    this.chunks = [all.subarray(w.n)];
    this.have -= w.n;
    this.waiting = undefined;
    w.resolve(all.subarray(0, w.n));
  }
}

/** The node:net side that answers: [kind, size, count] then ping-pong (1) or windows + ack (2). */
export function serveNet(onPort: (port: number) => void): Promise<void> {
  return new Promise((resolve) => {
    const server = createServer({ noDelay: true }, async (socket) => {
      const reader = new Reader(socket);
      for (;;) {
        const head = await reader.read(24);
        const [kind, size, count] = [head.readDoubleLE(0), head.readDoubleLE(8), head.readDoubleLE(16)];
        if (kind === 0) break;
        for (let i = 0; i < count; i++) {
          if (kind === 1) socket.write(await reader.read(size));
          else {
            await reader.read(size * WINDOW);
            socket.write(Buffer.alloc(1));
          }
        }
      }
      socket.end();
      server.close();
      resolve();
    });
    server.listen(0, "127.0.0.1", () => onPort((server.address() as { port: number }).port));
  });
}

export async function measureNet(port: number, plan: PerfPlan, onRow: (r: PerfRow) => void): Promise<void> {
  const socket = createConnection({ host: "127.0.0.1", port, noDelay: true });
  await new Promise((resolve, reject) => socket.once("connect", resolve).once("error", reject));
  const reader = new Reader(socket);
  const head = (kind: number, size: number, count: number) => {
    const b = Buffer.alloc(24);
    b.writeDoubleLE(kind, 0);
    b.writeDoubleLE(size, 8);
    b.writeDoubleLE(count, 16);
    socket.write(b);
  };
  for (const test of plan.tests) {
    for (const size of plan.sizes) {
      const data = Buffer.alloc(size, 0x5a);
      if (isLatency(test)) {
        const count = 20 + plan.iterations;
        head(1, size, count);
        const rtts: number[] = [];
        for (let i = 0; i < count; i++) {
          const t0 = performance.now();
          socket.write(data);
          await reader.read(size);
          if (i >= 20) rtts.push((performance.now() - t0) * 1000);
        }
        rtts.sort((a, b) => a - b);
        onRow({ system: "node:net", test, size, latencyUs: rtts[rtts.length >> 1]! / 2 });
        continue;
      }
      const rounds = bandwidthRounds(plan);
      head(2, size, rounds + 1);
      let t0 = 0;
      for (let r = 0; r <= rounds; r++) {
        if (r === 1) t0 = performance.now();
        for (let k = 0; k < WINDOW; k++) socket.write(data);
        await reader.read(1);
      }
      onRow({ system: "node:net", test, size, MBps: (size * WINDOW * rounds) / ((performance.now() - t0) / 1000) / 1e6 });
    }
  }
  head(0, 0, 0);
  socket.end();
}
