/**
 * One side of the point-to-point benchmark, run by the runtime being measured:
 *   <runtime> bench/p2p-peer.ts server <mode> <errorHandling>
 *   <runtime> bench/p2p-peer.ts client <mode> <errorHandling> <port> <plan-json>
 * The server listens on 127.0.0.1, prints {"port"}, and echoes: tag 1 comes back as tag 2
 * (ping-pong); tag 3 messages are counted and tag 4 acknowledges a bandwidth round; tag 9 ends.
 * The client runs the plan and prints one JSON line of results. Imports the built package when
 * UCX_TS_BENCH_DIST=1 (`--dist`: measure the build), else the sources.
 */
import { startBenchPeer } from "./bench-peer.ts";

const { role, worker, wait, ep, plan } = await startBenchPeer<{ latency: [number, number][]; bandwidth: [number, number, number][] }>();
const MAX = 4 << 20;

if (role === "server") {
  const buf = new Uint8Array(MAX);
  const ack = new Uint8Array(8);
  for (;;) {
    const { tag, length } = await wait(ep.recv(buf, 0, 0));
    if (tag === 9) break;
    if (tag === 1) await wait(ep.send(buf.subarray(0, length), 2));
    else if (tag === 4) await wait(ep.send(ack, 5));
  }
} else {
  const out = new Uint8Array(MAX).fill(7);
  const back = new Uint8Array(MAX);
  const results: { kind: string; size: number; value: number; iterations: number }[] = [];
  // Warm up until the connection's wire-up is done: a client-server endpoint starts on UCX's
  // connection-manager lane (milliseconds a round trip, seen here) before its own lanes are up.
  const warmUntil = performance.now() + 2000;
  while (performance.now() < warmUntil) {
    const r = ep.recv(back, 2);
    await wait(ep.send(out.subarray(0, 8), 1));
    await wait(r);
  }
  for (const [size, iterations] of plan.latency) {
    const rtts: number[] = [];
    for (let i = 0; i < iterations + 20; i++) {
      const t0 = performance.now();
      const r = ep.recv(back, 2);
      await wait(ep.send(out.subarray(0, size), 1));
      await wait(r);
      if (i >= 20) rtts.push((performance.now() - t0) * 1000); // 20 warm-up rounds
    }
    rtts.sort((a, b) => a - b);
    // The tail too (issue 21: p99 at most 5x the median): where a GC pause or a sleep shows.
    const at = (q: number) => rtts[Math.min(rtts.length - 1, Math.floor(q * rtts.length))]!;
    results.push({ kind: "rtt_us_median", size, value: at(0.5), iterations });
    results.push({ kind: "rtt_us_p99", size, value: at(0.99), iterations });
    results.push({ kind: "rtt_us_p999", size, value: at(0.999), iterations });
  }
  for (const [size, window, rounds] of plan.bandwidth) {
    const ack = new Uint8Array(8);
    let bytes = 0;
    const t0 = performance.now();
    for (let r = 0; r < rounds; r++) {
      const sends: Promise<void>[] = [];
      for (let i = 0; i < window; i++) sends.push(ep.send(out.subarray(0, size), 3));
      const a = ep.recv(ack, 5);
      await wait(Promise.all(sends));
      await wait(ep.send(ack, 4));
      await wait(a);
      bytes += size * window;
    }
    const seconds = (performance.now() - t0) / 1000;
    results.push({ kind: "bw_MBps", size, value: bytes / seconds / 1e6, iterations: rounds * window });
  }
  await wait(ep.send(new Uint8Array(1), 9));
  await wait(ep.flush()).catch(() => {});
  process.stdout.write(JSON.stringify(results) + "\n");
}
await worker.close();
process.exit(0);
