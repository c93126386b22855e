/**
 * One side of the point-to-point benchmark, run by the runtime being measured:
 *   <runtime> bench/p2p-peer.ts server <mode> <errorHandling>
 *   <runtime> bench/p2p-peer.ts client <mode> <errorHandling> <port> <plan-json>
 * The server listens on 127.0.0.1, prints {"port"}, and echoes: tag 1 comes back as tag 2
 * (ping-pong); tag 3 messages are counted and tag 4 acknowledges a bandwidth round; tag 6 announces
 * windows ([count, size, rounds] as f64) that the server takes with one recvMany each (the next
 * one posted ahead) and acknowledges one by one; tag 8
 * announces [count] active messages (amSend each, or one amSendMany: plan rows "am" / "amMany"),
 * taken with one amRecvMany and acknowledged; tag 9 ends.
 * The client runs the plan and prints one JSON line of results. Imports the built package when
 * UCX_TS_BENCH_DIST=1 (`--dist`: measure the build), else the sources. UCX_TS_BENCH_FAULTS=<file>:
 * the server's minor page faults per recvMany window and AM window (bench/page-faults.ts).
 * UCX_TS_BENCH_WINDOWS=<prefix>: both sides' per-window evidence (bench/window-trace.ts).
 * UCX_TS_PROFILE=1 with UCX_TS_BENCH_PROFILE=<prefix>: both sides' phases and C calls over the
 * timed windows of the sendMany row and of the per-message bandwidth row (sides "-each"; tag 13
 * tells the server where that row's timed rounds start), written to <prefix>.<runtime>-<mode>-<role>.json
 * (bench/window-cost.mjs runs the pairs and prints them per message).
 * UCX_TS_BENCH_RTT=<prefix>: both sides' counts over the latency rows (round trips, wall and CPU
 * time, event-loop turns (counted with the sources, not --dist), thread mode's takeover counts, and with UCX_TS_PROFILE=1 the phases and C calls), written to
 * <prefix>.<runtime>-<mode>-<role>.json (with UCX_TS_TURNAROUND=1 also where each side's share of a
 * round trip went: src/core/turnaround.ts; `npm run bench -- --turnaround` runs the pairs); the client sends tag 10 before its timed rows to start the
 * server's count, which ends at the next message that is not a ping (after the latency rows, tag
 * 12, answered once the server's file is written).
 */
import { startBenchPeer } from "./bench-peer.ts";
import { rttResults } from "./rtt-tail.ts";
import { faultLog } from "./page-faults.ts";
import { PROFILING, profileSnapshot, resetProfile } from "../src/core/profile.ts";
import { eventLoopTurns } from "../src/core/engine/event-loop.ts";
import { markResumed, resetTurnaround, TURNAROUND, turnaroundSnapshot } from "../src/core/turnaround.ts";
import { windowTrace } from "./window-trace.ts";
import { warmUp } from "./warm-up.ts";
import { writeFileSync } from "node:fs";
import type { UcxRequest } from "../src/index.ts";

type Window = [size: number, window: number, rounds: number];
const { role, worker, wait, ep, plan, requests } = await startBenchPeer<{ latency: [number, number][]; bandwidth: Window[]; am?: Window[]; amMany?: Window[] }>();
const MAX = 4 << 20;
/** Mode "requests": progress until `r` is done (polling mode, no Promise), and its result. */
function finish<T>(r: UcxRequest<T>): T {
  while (!r.done) worker.progress();
  return r.result();
}
const trace = windowTrace(`ucx-ts-${process.argv[3]}-${role}`); // argv[3]: the progress mode
/**
 * UCX_TS_BENCH_PROFILE (with UCX_TS_PROFILE=1): one row's timed part, per side. Two rows are
 * profiled: the first per-message bandwidth row (`eachProfile`, sides "client-each" and
 * "server-each") and the first sendMany row (`windowProfile`).
 */
function rowProfile() {
  const prefix = process.env.UCX_TS_BENCH_PROFILE;
  const on = PROFILING && !!prefix;
  let t0 = 0;
  let cpu0 = 0;
  let written = false;
  const rt = (globalThis as { Bun?: unknown; Deno?: unknown }).Bun ? "bun" : (globalThis as { Deno?: unknown }).Deno ? "deno" : "node";
  return {
    enabled: on,
    get running() {
      return on && !written && t0 !== 0;
    },
    start() {
      if (!on || written) return;
      resetProfile();
      t0 = performance.now();
      cpu0 = process.cpuUsage().user + process.cpuUsage().system;
    },
    /** Only the first row of a run is written (the plan's first size). */
    write(side: string, size: number, messages: number) {
      if (!on || t0 === 0 || written) return;
      const c = process.cpuUsage();
      const file = `${prefix}.${rt}-${process.argv[3]}-${side}.json`;
      writeFileSync(file, JSON.stringify({ side, size, messages, wallMs: performance.now() - t0, cpuMs: (c.user + c.system - cpu0) / 1000, ...profileSnapshot() }));
      written = true;
    },
  };
}
const eachProfile = rowProfile();
const windowProfile = rowProfile();

/** UCX_TS_BENCH_RTT: what one side did over the latency rows (round trips counted by `ping`). */
const rttStats = (() => {
  const prefix = process.env.UCX_TS_BENCH_RTT;
  const rt = (globalThis as { Bun?: unknown; Deno?: unknown }).Bun ? "bun" : (globalThis as { Deno?: unknown }).Deno ? "deno" : "node";
  let on = false;
  let count = 0;
  let t0 = 0;
  let cpu0 = 0;
  let takeover0 = worker.takeoverStats;
  let turns0 = 0;
  return {
    enabled: !!prefix,
    start() {
      if (!prefix) return;
      on = true;
      count = 0;
      if (PROFILING) resetProfile();
      if (TURNAROUND) resetTurnaround();
      takeover0 = worker.takeoverStats;
      turns0 = eventLoopTurns();
      t0 = performance.now();
      const c = process.cpuUsage();
      cpu0 = c.user + c.system;
    },
    ping() {
      count++;
    },
    write(side: string) {
      if (!on) return;
      on = false;
      const c = process.cpuUsage();
      const t = worker.takeoverStats;
      const takeover = t && takeover0 ? Object.fromEntries(Object.entries(t).map(([k, v]) => [k, v - takeover0![k as keyof typeof t]])) : null;
      const file = `${prefix}.${rt}-${process.argv[3]}-${side}.json`;
      writeFileSync(file, JSON.stringify({ side, roundTrips: count, wallMs: performance.now() - t0, cpuMs: (c.user + c.system - cpu0) / 1000, eventLoopTurns: eventLoopTurns() - turns0, takeover, ...(PROFILING ? profileSnapshot() : {}), ...(TURNAROUND ? { turnaround: turnaroundSnapshot() } : {}) }));
    },
  };
})();

if (role === "server") {
  const buf = new Uint8Array(MAX);
  let windowBuf = new Uint8Array(MAX);
  const ack = new Uint8Array(8);
  const faults = faultLog();
  let eachMessages = 0;
  let eachSize = 0;
  for (;;) {
    const { tag, length } = requests ? finish(ep.recvRequest(buf, 0, 0)) : await wait(ep.recv(buf, 0, 0));
    markResumed();
    if (tag === 1) {
      rttStats.ping();
      if (requests) finish(ep.sendRequest(buf.subarray(0, length), 2));
      else await wait(ep.send(buf.subarray(0, length), 2));
      continue;
    }
    if (tag === 3) {
      if (eachProfile.running) eachMessages++;
      continue;
    }
    if (eachProfile.running && tag !== 4) eachProfile.write("server-each", eachSize, eachMessages);
    rttStats.write("server");
    if (tag === 9) break;
    if (tag === 13) {
      // The client's per-message bandwidth row starts its timed rounds (profiling runs only).
      eachSize = new Float64Array(buf.buffer, 0, 1)[0]!;
      eachProfile.start();
      await wait(ep.send(ack, 5));
      continue;
    }
    if (tag === 10) {
      rttStats.start();
      await wait(ep.send(ack, 5));
    }
    // The client's counts are done: ours are written (above) before the answer.
    if (tag === 12) await wait(ep.send(ack, 5));
    if (tag === 4) {
      await wait(ep.send(ack, 5));
      trace.mark("send");
    }
    else if (tag === 6) {
      // Windows ([count, size, rounds]): each taken with one recvMany, the next one posted before
      // the current one is acknowledged (two sets of buffers), as a receiver of a stream would.
      const [count, size, rounds] = new Float64Array(buf.buffer, 0, 3) as unknown as [number, number, number];
      // The timed announcement says from which window on the client times (a 4th f64).
      const profileFrom = length >= 32 ? new Float64Array(buf.buffer, 24, 1)[0]! : -1;
      if (2 * count * size > windowBuf.length) windowBuf = new Uint8Array(2 * count * size).fill(1); // pages touched: no first-touch faults in the timed rounds
      const sets = [0, 1].map((k) => Array.from({ length: count }, (_, i) => windowBuf.subarray((k * count + i) * size, (k * count + i + 1) * size)));
      let next = ep.recvMany(sets[0]!, 3);
      for (let r = 0; r < rounds; r++) {
        if (r === profileFrom) windowProfile.start();
        faults.start();
        await wait(next);
        faults.end("many", count);
        if (r + 1 < rounds) next = ep.recvMany(sets[(r + 1) % 2]!, 3);
        await wait(ep.send(ack, 5));
        trace.mark("many");
      }
      if (profileFrom >= 0) windowProfile.write("server", size, count * (rounds - profileFrom));
    } else if (tag === 8) {
      const count = new Float64Array(buf.buffer, 0, 1)[0]!;
      // Each message given back once read (AmMessage.release): later ones reuse its memory.
      faults.start();
      if (PROFILING) resetProfile();
      // One window, one Promise (amRecvMany): per-message amRecvs cost a Promise and an await each.
      for (const m of await wait(ep.amRecvMany(count))) m.release();
      faults.end("am", count);
      // UCX_TS_PROFILE=1: the server's phases per message of each AM window, on stderr.
      if (PROFILING) process.stderr.write(JSON.stringify({ am: count, ...profileSnapshot() }) + "\n");
      await wait(ep.send(ack, 5));
      trace.mark("am");
    }
  }
} else {
  const out = new Uint8Array(MAX).fill(7);
  const back = new Uint8Array(MAX);
  const results: { kind: string; size: number; value: number; iterations: number }[] = [];
  // Warm up until the connection's wire-up is done: a client-server endpoint starts on UCX's
  // connection-manager lane (milliseconds a round trip, seen here) before its own lanes are up.
  /** Mode "requests": one round trip through UcxRequests and this thread's own progress loop. */
  const requestRoundTrip = (size: number) => {
    const r = ep.recvRequest(back, 2);
    finish(ep.sendRequest(out.subarray(0, size), 1));
    finish(r);
  };
  const warmUntil = performance.now() + 2000;
  while (performance.now() < warmUntil) {
    if (requests) {
      requestRoundTrip(8);
      continue;
    }
    const r = ep.recv(back, 2);
    await wait(ep.send(out.subarray(0, 8), 1));
    await wait(r);
  }
  if (rttStats.enabled && plan.latency.length > 0) {
    const r = ep.recv(back, 5);
    await wait(ep.send(out.subarray(0, 0), 10));
    await wait(r);
    rttStats.start();
  }
  for (const [size, iterations] of plan.latency) {
    const rtts: number[] = [];
    for (let i = 0; i < iterations + 20; i++) {
      const t0 = performance.now();
      if (requests) requestRoundTrip(size);
      else {
        const r = ep.recv(back, 2);
        await wait(ep.send(out.subarray(0, size), 1));
        await wait(r);
      }
      markResumed();
      if (i >= 20) rtts.push((performance.now() - t0) * 1000); // 20 warm-up rounds
      rttStats.ping();
    }
    // The tail too (issue 21: p99 at most 5x the median) and what kind of tail (rtt-tail.ts).
    results.push(...rttResults(size, iterations, rtts));
  }
  rttStats.write("client");
  if (rttStats.enabled && plan.latency.length > 0) {
    // Wait until the server has written its counts: it may be killed as soon as this process ends.
    const r = ep.recv(back, 5);
    await wait(ep.send(out.subarray(0, 0), 12));
    await wait(r);
  }
  // Every windowed row warms up first, untimed, for a second (warm-up.ts), as ucx_perftest does.
  // Unwarmed, the timed rounds (20 with --quick) measured the engine's first compilation: the
  // first ~16 windows of 256 x 8 B took 20-97 ms each against ~0.2-0.4 ms warm (two processes,
  // load ~3, 2026-11-26), so the 8 B rate row read 0.05-0.3 MB/s with 20 rounds and 2-3 MB/s
  // with 400 in the same minutes.
  for (const [size, window, rounds] of plan.bandwidth) {
    const ack = new Uint8Array(8);
    const round = async () => {
      const sends: Promise<void>[] = [];
      for (let i = 0; i < window; i++) sends.push(ep.send(out.subarray(0, size), 3));
      const a = ep.recv(ack, 5);
      await wait(Promise.all(sends));
      await wait(ep.send(ack, 4));
      await wait(a);
    };
    await warmUp(round);
    trace.mark("warm");
    if (eachProfile.enabled) {
      // Profiling: the server starts its count with ours (tag 13, answered once started).
      const a = ep.recv(ack, 5);
      await wait(ep.send(new Float64Array([size]), 13));
      await wait(a);
      eachProfile.start();
    }
    let bytes = 0;
    const t0 = performance.now();
    for (let r = 0; r < rounds; r++) {
      await round();
      trace.mark(`send/${size}`);
      bytes += size * window;
    }
    const seconds = (performance.now() - t0) / 1000;
    eachProfile.write("client-each", size, rounds * window);
    results.push({ kind: "bw_MBps", size, value: bytes / seconds / 1e6, iterations: rounds * window });
  }
  // The same windows through the windowed API: one sendMany (one Promise) and, on the server,
  // one recvMany per window, where the loop above pays a Promise and a record per message.
  // The first WINDOW_WARMUP windows are not timed: the server allocates its two sets of window
  // buffers when the windows are announced, and both the first touch of fresh memory and the
  // kernel's first write into a page (the shared-memory rendezvous copies with
  // process_vm_readv) cost ~15-25 us a page on this VM; timed, they made 1 MiB windows look
  // 3-4x slower than the per-message loop above, whose one receive buffer is long warm
  // (bench/run-recv-many.mjs compares the two into the same buffers).
  const WINDOW_WARMUP = 2;
  for (const [size, window, rounds] of plan.bandwidth) {
    const ack = new Uint8Array(8);
    const frames = Array.from({ length: window }, () => out.subarray(0, size));
    // The code's warm-up (warm-up.ts), in announced batches of at most 10 windows: the
    // server takes exactly the announced count. The 2 untimed windows below stay for the pages.
    await warmUp(async () => {
      const batch = Math.min(10, rounds);
      await wait(ep.send(new Float64Array([window, size, batch]), 6));
      for (let r = 0; r < batch; r++) {
        const a = ep.recv(ack, 5);
        await wait(ep.sendMany(frames, 3));
        await wait(a);
      }
    });
    let bytes = 0;
    let t0 = performance.now();
    trace.mark("warm");
    await wait(ep.send(new Float64Array([window, size, rounds + WINDOW_WARMUP, WINDOW_WARMUP]), 6));
    for (let r = 0; r < rounds + WINDOW_WARMUP; r++) {
      if (r === WINDOW_WARMUP) {
        t0 = performance.now();
        bytes = 0;
        windowProfile.start();
      }
      const a = ep.recv(ack, 5);
      await wait(ep.sendMany(frames, 3));
      await wait(a);
      trace.mark(`many/${size}`);
      bytes += size * window;
    }
    const seconds = (performance.now() - t0) / 1000;
    windowProfile.write("client", size, rounds * window);
    results.push({ kind: "bw_many_MBps", size, value: bytes / seconds / 1e6, iterations: rounds * window });
  }
  // Active messages (UCXX's format, AM id 0): `window` in flight, the server takes each window
  // with one amRecvMany and acknowledges it. Rows "am": one amSend per message; rows "amMany":
  // one amSendMany per window (one record, one completion, one Promise).
  const amRows: [kind: string, points: Window[], many: boolean][] = [["am_bw_MBps", plan.am ?? [], false], ["am_many_MBps", plan.amMany ?? [], true]];
  for (const [kind, points, many] of amRows) for (const [size, window, rounds] of points) {
    const ack = new Uint8Array(8);
    const announce = new Float64Array([window]);
    const messages = Array.from({ length: window }, () => out.subarray(0, size));
    const round = async () => {
      const a = ep.recv(ack, 5);
      await wait(ep.send(announce, 8));
      if (many) await wait(ep.amSendMany(messages));
      else {
        const sends: Promise<void>[] = [];
        for (let i = 0; i < window; i++) sends.push(ep.amSend(out.subarray(0, size)));
        await wait(Promise.all(sends));
      }
      await wait(a);
    };
    // Warm-up, untimed (warm-up.ts). Without it the timed rounds (20-100 with --quick) measured
    // the AM path's first compilation and the receiver's buffer pool filling up: 64 KiB windows
    // in one process ran at 0.33 GB/s over 100 windows and at 1.4 GB/s over 1,500 (2026-11-26).
    await warmUp(round);
    let bytes = 0;
    if (PROFILING) resetProfile();
    const t0 = performance.now();
    trace.mark("warm");
    for (let r = 0; r < rounds; r++) {
      await round();
      trace.mark(`am/${size}`);
      bytes += size * window;
    }
    const seconds = (performance.now() - t0) / 1000;
    // UCX_TS_PROFILE=1: the sender's phases and C calls over the timed windows, on stderr.
    if (PROFILING) process.stderr.write(JSON.stringify({ amSent: rounds * window, ...profileSnapshot() }) + "\n");
    results.push({ kind, size, value: bytes / seconds / 1e6, iterations: rounds * window });
  }
  await wait(ep.send(new Uint8Array(1), 9));
  await wait(ep.flush()).catch(() => {});
  process.stdout.write(JSON.stringify(results) + "\n");
}
await trace.write();
await worker.close();
process.exit(0);
