/**
 * One side of the recvMany benchmark (issue 21: recvMany windows at 1 MiB looked 4-8x slower than
 * per-message receives in bench/p2p-peer.ts, whose windows went into fresh memory, timed), run
 * by the runtime being measured:
 *   <runtime> bench/recv-many-peer.ts server <mode> <errorHandling>
 *   <runtime> bench/recv-many-peer.ts client <mode> <errorHandling> <port> <plan-json>
 * The client sends windows of `window` messages of `size` bytes (per-message sends, all in
 * flight) and waits for the server's acknowledgement of each; the server takes each window one
 * of these ways, into the SAME buffers (two sets of `window`, alternated, the next window's
 * receives posted before the current one is acknowledged), so only the receive path differs:
 *   many   one recvMany per window
 *   recvs  one recv per message, all of a window's posted at once (Promise.all)
 *   serial one recv per message, each awaited before the next is posted
 *   reuse  as serial, every message into the same one buffer (what bench/p2p-peer.ts's
 *          per-message rows do: its 1 MiB may stay in the CPU's caches, 2 x 16 MiB do not)
 * The warm-up rounds are not timed: they take the first touch of the buffers, by the kernel too
 * (the first process_vm_readv into a page is ~10x slower on this project's VM, docs/benchmarks.md).
 * A control message (tag 1: variant, size, window, rounds, warm-up rounds) tells the server what
 * comes. The client prints one JSON line: per variant, MB/s over the timed rounds and each side's
 * CPU time (user + system) per message in the timed rounds, which a loaded machine disturbs less
 * than the wall clock (the receiver's includes the copy: rendezvous over shared memory reads the
 * sender's buffer from the receiving process; in polling and hybrid modes it includes spinning).
 */
import process from "node:process";
import { startBenchPeer } from "./bench-peer.ts";

const { role, wait, ep, plan } = await startBenchPeer<{ size: number; window: number; rounds: number; warmup: number; variants: string[] }>();
const VARIANTS = ["many", "recvs", "serial", "reuse"];
const TAG_CONTROL = 1;
const TAG_DATA = 3;
const TAG_ACK = 5;
const TAG_CPU = 7;
const cpuMicros = () => {
  const u = process.cpuUsage();
  return u.user + u.system;
};

if (role === "server") {
  const control = new Float64Array(5);
  const ack = new Uint8Array(8);
  for (;;) {
    await wait(ep.recv(control, TAG_CONTROL));
    const [variant, size, window, rounds, warmup] = control as unknown as [number, number, number, number, number];
    if (variant < 0) break;
    const memory = new Uint8Array(2 * window * size).fill(1); // pages touched before the timed rounds
    const sets = [0, 1].map((k) => Array.from({ length: window }, (_, i) => memory.subarray((k * window + i) * size, (k * window + i + 1) * size)));
    const take = (set: Uint8Array[]): Promise<unknown> =>
      VARIANTS[variant] === "many"
        ? ep.recvMany(set, TAG_DATA)
        : VARIANTS[variant] === "recvs"
        ? Promise.all(set.map((b) => ep.recv(b, TAG_DATA)))
        : (async () => {
            for (const b of set) await wait(ep.recv(VARIANTS[variant] === "reuse" ? sets[0]![0]! : b, TAG_DATA));
          })();
    let next = take(sets[0]!);
    let cpu0 = cpuMicros();
    for (let r = 0; r < rounds; r++) {
      if (r === warmup) cpu0 = cpuMicros();
      await wait(next);
      if (r + 1 < rounds && !VARIANTS[variant]!.match(/serial|reuse/)) next = take(sets[(r + 1) % 2]!);
      await wait(ep.send(ack, TAG_ACK));
      if (r + 1 < rounds && VARIANTS[variant]!.match(/serial|reuse/)) next = take(sets[(r + 1) % 2]!);
    }
    await wait(ep.send(new Float64Array([cpuMicros() - cpu0]), TAG_CPU));
  }
} else {
  const out = new Uint8Array(plan.size).fill(7);
  const ack = new Uint8Array(8);
  const results: { kind: string; size: number; value: number; iterations: number; serverCpuUs: number; clientCpuUs: number }[] = [];
  for (const name of plan.variants) {
    const rounds = plan.warmup + plan.rounds;
    await wait(ep.send(new Float64Array([VARIANTS.indexOf(name), plan.size, plan.window, rounds, plan.warmup]), TAG_CONTROL));
    let t0 = performance.now();
    let cpu0 = cpuMicros();
    for (let r = 0; r < rounds; r++) {
      if (r === plan.warmup) {
        t0 = performance.now();
        cpu0 = cpuMicros();
      }
      const a = ep.recv(ack, TAG_ACK);
      const sends: Promise<void>[] = [];
      for (let i = 0; i < plan.window; i++) sends.push(ep.send(out, TAG_DATA));
      await wait(Promise.all(sends));
      await wait(a);
    }
    const seconds = (performance.now() - t0) / 1000;
    const clientCpu = cpuMicros() - cpu0;
    const serverCpu = new Float64Array(1);
    await wait(ep.recv(serverCpu, TAG_CPU));
    const messages = plan.rounds * plan.window;
    results.push({
      kind: name,
      size: plan.size,
      value: (messages * plan.size) / seconds / 1e6,
      iterations: messages,
      serverCpuUs: serverCpu[0]! / messages,
      clientCpuUs: clientCpu / messages,
    });
  }
  await wait(ep.send(new Float64Array([-1, 0, 0, 0, 0]), TAG_CONTROL));
  console.log(JSON.stringify(results));
}
process.exit(0);
