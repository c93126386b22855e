/**
 * One side of the put/AM bandwidth benchmark, run by the runtime being measured:
 *   <runtime> bench/onesided-peer.ts server <mode> <errorHandling>
 *   <runtime> bench/onesided-peer.ts client <mode> <errorHandling> <port> <plan-json>
 * The server registers memory and sends its key (tag 1), then receives active messages: after
 * each round of `window` messages it acknowledges with tag 2; tag 9 ends it.
 * The client measures, per size: put_bw (windows of puts into the server's memory, one flush
 * at the end) and am_bw (windows of amSend, each ended by the server's acknowledgement; the
 * server releases each message, so later ones reuse its memory, and warm-up rounds go untimed).
 * UCX_TS_BENCH_FAULTS=<file>: each round's minor page faults (bench/page-faults.ts).
 */
import process from "node:process";
import { startBenchPeer } from "./bench-peer.ts";
import { faultLog } from "./page-faults.ts";
import { warmUp } from "./warm-up.ts";

const { role, worker, wait, ep, plan } = await startBenchPeer<{ sizes: number[]; window: number; rounds: number }>();
const MAX = 4 << 20;

if (role === "server") {
  // Memory allocated by UCX, as ucx_perftest's: shared-memory transports write it directly.
  const mem = await wait(worker.memMap(MAX, { allocator: process.env.UCX_TS_BENCH_ALLOCATOR === "js" ? "js" : "ucx" }));
  await wait(ep.send(await wait(mem.packRkey()), 1));
  const control = new Float64Array(1);
  const faults = faultLog();
  for (;;) {
    await wait(ep.recv(control, 3)); // window size of the next AM round, or -1
    if (control[0]! < 0) break;
    faults.start();
    // Each message given back once read (AmMessage.release), as bench/p2p-peer.ts does: later
    // ones reuse its memory. Kept, every rendezvous AM landed in a fresh ArrayBuffer, and the
    // timed rounds measured first touches (UCX_TS_BENCH_FAULTS, 2026-11-26: 16-18 minor faults a
    // 64 KiB message, up to 260 a 1 MiB one, ~15-25 us each on this VM) instead of the transport.
    for (let i = 0; i < control[0]!; i++) (await wait(ep.amRecv())).release();
    faults.end("am", control[0]!);
    await wait(ep.send(new Uint8Array(1), 2));
  }
} else {
  const packed = new Uint8Array(1024);
  const { length } = await wait(ep.recv(packed, 1));
  const rkey = await wait(ep.unpackRkey(packed.subarray(0, length)));
  const src = new Uint8Array(MAX).fill(5);
  const results: { kind: string; size: number; MBps: number; messages: number }[] = [];
  for (const size of plan.sizes) {
    const data = src.subarray(0, size);
    // put_bw: windows of puts, each awaited (local completion: the source may be reused), one
    // flush at the end (remote completion), as ucx_perftest does; warm-up rounds first (warm-up.ts).
    const faults = faultLog(); // the client's faults: a cma put is the client's kernel writing
    const putRound = (label: string) => async () => {
      faults.start();
      await wait(Promise.all(Array.from({ length: plan.window }, () => ep.put(data, rkey.address, rkey))));
      faults.end(label, plan.window);
    };
    await warmUp(putRound(`put ${size} warm-up`));
    const timed = putRound(`put ${size}`);
    const t0 = performance.now();
    for (let r = 0; r < plan.rounds; r++) await timed();
    await wait(ep.flush());
    results.push({ kind: "put_bw", size, MBps: (size * plan.window * plan.rounds) / ((performance.now() - t0) / 1000) / 1e6, messages: plan.window * plan.rounds });
    const ack = new Uint8Array(1);
    const round = async () => {
      const acked = ep.recv(ack, 2);
      await wait(ep.send(new Float64Array([plan.window]), 3));
      await wait(Promise.all(Array.from({ length: plan.window }, () => ep.amSend(data))));
      await wait(acked);
    };
    // Warm-up, untimed (warm-up.ts): one round left the receiver's buffer pool filling, and
    // released buffers on their way back, inside the timed part.
    await warmUp(round);
    const t1 = performance.now();
    for (let r = 0; r < plan.rounds; r++) await round();
    results.push({ kind: "am_bw", size, MBps: (size * plan.window * plan.rounds) / ((performance.now() - t1) / 1000) / 1e6, messages: plan.window * plan.rounds });
  }
  await wait(ep.send(new Float64Array([-1]), 3));
  await wait(ep.flush()).catch(() => {});
  process.stdout.write(JSON.stringify(results) + "\n");
}
await worker.close();
process.exit(0);
