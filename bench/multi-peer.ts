/**
 * One side of the multi-buffer benchmark, run by the runtime being measured:
 *   <runtime> bench/multi-peer.ts server <mode> <errorHandling>
 *   <runtime> bench/multi-peer.ts client <mode> <errorHandling> <port> <plan-json>
 * Each round moves the same bytes (`frames` x `frameSize`) from client to server three ways, and
 * ends when the server's 8-byte acknowledgement is back:
 *   multi   one sendMulti of all frames / one recvMulti
 *   pairs   one awaited send per frame / one awaited recv per frame
 *   manual  what multi does, spelled out with one request per message: the client posts the
 *           header and every frame at once, the server receives the header, then posts a
 *           receive per frame into new buffers at once (separates ucx-ts's batch code from UCX)
 *   single  one send of all the bytes in one buffer / one recv into a buffer reused every round
 *   single-fresh  the same, into a new buffer every round: the receiver of a batch allocates its
 *           frames (as UCXX's does), and fresh memory costs page faults that a reused buffer
 *           does not (measured here: ~1.5 ms for 6.4 MiB), so this is the like-for-like baseline
 * A control message (tag 1: variant, rounds, frames, frameSize) tells the server what comes.
 * The client prints one JSON line: per variant, the median round in ms and its MB/s.
 */
import process from "node:process";
import { startBenchPeer, ucxTs } from "./bench-peer.ts";

const { encodeHeaders, decodeHeader, HEADER_BYTES } = ucxTs;
const { role, worker, wait, ep, plan } = await startBenchPeer<{ frames: number; frameSize: number; rounds: number; warmup: number }>();
const VARIANTS = ["multi", "manual", "pairs", "single", "single-fresh"] as const;
const TAG_CONTROL = 1;
const TAG_DATA = 2;
const TAG_ACK = 3;

if (role === "server") {
  const control = new Float64Array(4);
  const ack = new Uint8Array(8);
  for (;;) {
    await wait(ep.recv(control, TAG_CONTROL));
    const [variant, rounds, frames, frameSize] = control;
    if (variant! < 0) break;
    const one = new Uint8Array(frameSize!);
    const all = new Uint8Array(frames! * frameSize!);
    for (let r = 0; r < rounds!; r++) {
      if (VARIANTS[variant!] === "multi") await wait(ep.recvMulti(TAG_DATA));
      else if (VARIANTS[variant!] === "manual") {
        const header = new Uint8Array(HEADER_BYTES);
        await wait(ep.recv(header, TAG_DATA));
        await wait(Promise.all(decodeHeader(header).frames.map((f) => ep.recv(new Uint8Array(f.size), TAG_DATA))));
      }
      else if (VARIANTS[variant!] === "pairs") for (let i = 0; i < frames!; i++) await wait(ep.recv(one, TAG_DATA));
      else if (VARIANTS[variant!] === "single") await wait(ep.recv(all, TAG_DATA));
      else await wait(ep.recv(new Uint8Array(frames! * frameSize!), TAG_DATA));
      await wait(ep.send(ack, TAG_ACK));
    }
  }
} else {
  const frames = Array.from({ length: plan.frames }, () => new Uint8Array(plan.frameSize).fill(7));
  const all = new Uint8Array(plan.frames * plan.frameSize).fill(7);
  const ack = new Uint8Array(8);
  const header = encodeHeaders(frames.map((f) => ({ size: f.length, device: false })));
  const results: { variant: string; frames: number; frameSize: number; medianMs: number; MBps: number; rounds: number }[] = [];
  for (const [v, variant] of VARIANTS.entries()) {
    const total = plan.warmup + plan.rounds;
    await wait(ep.send(new Float64Array([v, total, plan.frames, plan.frameSize]), TAG_CONTROL));
    const times: number[] = [];
    for (let r = 0; r < total; r++) {
      const t0 = performance.now();
      const acked = ep.recv(ack, TAG_ACK);
      if (variant === "multi") await wait(ep.sendMulti(frames, TAG_DATA));
      else if (variant === "manual") await wait(Promise.all([ep.send(header, TAG_DATA), ...frames.map((f) => ep.send(f, TAG_DATA))]));
      else if (variant === "pairs") for (const f of frames) await wait(ep.send(f, TAG_DATA));
      else await wait(ep.send(all, TAG_DATA));
      await wait(acked);
      if (r >= plan.warmup) times.push(performance.now() - t0);
    }
    times.sort((a, b) => a - b);
    const medianMs = times[times.length >> 1]!;
    results.push({ variant, frames: plan.frames, frameSize: plan.frameSize, medianMs, MBps: all.length / (medianMs / 1000) / 1e6, rounds: plan.rounds });
  }
  await wait(ep.send(new Float64Array([-1, 0, 0, 0]), TAG_CONTROL));
  await wait(ep.flush()).catch(() => {});
  process.stdout.write(JSON.stringify(results) + "\n");
}
await worker.close();
process.exit(0);
