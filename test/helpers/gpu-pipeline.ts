/**
 * The receiving pipeline of staged device frames (src/core/cuda/staged-multi-receive.ts), for
 * test/cuda/gpu.test.ts, run in child processes against the libcudart UCX_TS_CUDART names:
 *   gpu-pipeline.ts inproc                 one process, two workers: hand-made batches (chunked
 *                                          frames of every shape, UCXX device frames, a short
 *                                          chunk, an abort, two batches queued on one tag, limits,
 *                                          an endpoint's receive, polling mode)
 *   gpu-pipeline.ts death-receiver         listens, prints {"port": N}, receives a batch whose
 *                                          sender dies half-way; checks it rejects, slots come back
 *   gpu-pipeline.ts death-sender <port>    sends the header and a few chunks, then SIGKILLs itself
 * Prints one JSON line per check: {"check", "ok", "detail"}. Needs the staged path (UCX without
 * CUDA, or UCX_TS_GPU_PATH=staged): the pipeline is what is tested.
 */
import process from "node:process";
import { DeviceBuffer, devicePath, encodeHeaders, Worker, type UcxError } from "../../src/index.ts";
import { pinnedStats, resetPinnedPeak } from "../../src/core/cuda/pinned-pool.ts";
import { RECEIVE_DEPTH } from "../../src/core/cuda/staged-multi-receive.ts";
import { StagingRing } from "../../src/core/cuda/staging-ring.ts";
import { helloEndpoints, pair, pattern, samePattern, ucxRejection, type Pair } from "./workers.ts";
import { check } from "./child-check.ts";

const [role, portArg] = process.argv.slice(2);
setTimeout(() => process.exit(3), 90_000).unref?.();


function expect<T>(actual: T, expected: T, what: string): true {
  if (actual !== expected) throw new Error(`${what}: ${String(actual)}, expected ${String(expected)}`);
  return true;
}

/** Wait until every pinned buffer is back (UCX reports a cancelled receive a little later). */
async function slotsBack(what: string): Promise<void> {
  const until = Date.now() + 10_000;
  while (pinnedStats().outstanding !== 0) {
    if (Date.now() > until) throw new Error(`${what}: ${pinnedStats().outstanding} pinned buffer(s) never came back`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

const CHUNK = 1 << 16;

/** A staged device frame as ucx-ts's sender puts it on the wire: its chunks, each one message. */
function chunksOf(bytes: Uint8Array, chunk = CHUNK): Uint8Array[] {
  const out: Uint8Array[] = [];
  for (let at = 0; at < bytes.length || out.length === 0; at += chunk) out.push(bytes.subarray(at, Math.min(bytes.length, at + chunk)));
  return out;
}

if (role === "inproc") {
  await check("the staged path is in use (else this file tests nothing)", () => expect(devicePath(), "staged", "devicePath()"));
  await check("the staging ring: at most `depth` slots, a waiter served by the next release, close refuses waiters and frees slots", async () => {
    const ring = new StagingRing(CHUNK, 2);
    const a = await ring.acquire();
    const b = await ring.acquire();
    expect(pinnedStats().outstanding, 2, "slots out");
    let third: unknown;
    const waiting = ring.acquire().then((s) => (third = s));
    await new Promise((r) => setTimeout(r, 20));
    expect(third, undefined, "a third slot before any was released");
    ring.release(a);
    await waiting;
    expect(third, a, "the waiter got the released slot");
    const refused = ring.acquire().then(
      () => "served",
      (e: UcxError) => e.code,
    );
    ring.close();
    expect(await refused, "UCX_TS_CLOSED", "a waiter at close");
    ring.release(b); // busy at close: back to the pool when released
    ring.release(a);
    expect(pinnedStats().outstanding, 0, "slots out after close and release");
  });

  const p: Pair = await pair("thread");
  const send = (messages: Uint8Array[], tag: number) => p.run(Promise.all(messages.map((m) => p.ab.send(m, tag))));
  try {
    await check("chunked device frames of every shape, a host frame and two UCXX device frames land whole, through at most 3 slots", async () => {
      const big = pattern(20 * CHUNK + 333, 1); // 21 chunks, the last partial
      const exact = pattern(4 * CHUNK, 2); // a multiple of the chunk
      const host = pattern(1000, 3);
      const ucxx = pattern(70_000, 4); // isCUDA 1: one message
      const one = pattern(1, 5);
      const ucxx2 = pattern(90_000, 6);
      const frames = [
        { size: big.length, device: true, chunkBytes: CHUNK },
        { size: host.length, device: false },
        { size: ucxx.length, device: true },
        { size: 0, device: true, chunkBytes: CHUNK },
        { size: 1, device: true, chunkBytes: CHUNK },
        { size: exact.length, device: true, chunkBytes: CHUNK },
      ];
      frames.splice(3, 0, { size: ucxx2.length, device: true }); // two UCXX frames back to back
      resetPinnedPeak();
      const recv = p.b.recvMulti(7, { deviceFrames: "device" });
      await send([encodeHeaders(frames), ...chunksOf(big), host, ucxx, ucxx2, new Uint8Array(0), one, ...chunksOf(exact)], 7);
      const got = await p.run(recv);
      expect(got.map((f) => (f instanceof DeviceBuffer ? "D" : "H")).join(""), "DHDDDDD", "frame kinds");
      const bytes = got.map((f) => (f instanceof DeviceBuffer ? f.copyToHost() : f));
      const seeds = [1, 3, 4, 6, -1, 5, 2];
      for (const [i, b] of bytes.entries()) {
        expect(b.length, frames[i]!.size, `frame ${i} length`);
        if (seeds[i]! >= 0 && !samePattern(b, seeds[i]!)) throw new Error(`frame ${i}: content differs`);
      }
      // The slots: RECEIVE_DEPTH chunk-sized buffers, plus one UCXX frame's own at a time (128 KiB each).
      const peak = pinnedStats().peakBytes;
      if (peak > RECEIVE_DEPTH * CHUNK + (128 << 10)) throw new Error(`pinned peak ${peak} B: more than ${RECEIVE_DEPTH} slots and one whole frame`);
      for (const f of got) if (f instanceof DeviceBuffer) f.free();
      await slotsBack("after the batch");
    });

    await check("two batches queued on one tag before anything arrives are received in order", async () => {
      const first = p.b.recvMulti(8, { deviceFrames: "device" });
      const second = p.b.recvMulti(8, { deviceFrames: "device" });
      const a = pattern(3 * CHUNK + 5, 11);
      const b = pattern(2 * CHUNK, 12);
      await send([encodeHeaders([{ size: a.length, device: true, chunkBytes: CHUNK }]), ...chunksOf(a)], 8);
      await send([encodeHeaders([{ size: b.length, device: true, chunkBytes: CHUNK }, { size: 3, device: false }]), ...chunksOf(b), pattern(3, 13)], 8);
      const [x, y] = await p.run(Promise.all([first, second]));
      if (!samePattern((x[0] as DeviceBuffer).copyToHost(), 11)) throw new Error("first batch differs");
      if (!samePattern((y[0] as DeviceBuffer).copyToHost(), 12) || !samePattern(y[1] as Uint8Array, 13)) throw new Error("second batch differs");
      await slotsBack("after two batches");
    });

    await check("a short chunk in the middle rejects (UCX_TS_PROTOCOL_ERROR) and every slot comes back", async () => {
      const bad = p.b.recvMulti(9, { deviceFrames: "device" });
      // It may reject while `send` is still under way: marked handled now (awaited below, it still
      // rejects), else the runtime reports an unhandled rejection first (seen on Deno in CI).
      bad.catch(() => {});
      const whole = pattern(6 * CHUNK, 21);
      const chunks = chunksOf(whole);
      await send([encodeHeaders([{ size: whole.length, device: true, chunkBytes: CHUNK }]), chunks[0]!, chunks[1]!, new Uint8Array(100)], 9);
      const e = await ucxRejection(p.run(bad));
      expect(e.code, "UCX_TS_PROTOCOL_ERROR", `code (${e.message})`);
      await slotsBack("after the short chunk");
    });

    await check("an abort half-way rejects (AbortError), every slot comes back, the tag works afterwards", async () => {
      const controller = new AbortController();
      const aborted = p.b.recvMulti(10, { deviceFrames: "device", signal: controller.signal });
      const whole = pattern(8 * CHUNK, 31);
      await send([encodeHeaders([{ size: whole.length, device: true, chunkBytes: CHUNK }]), ...chunksOf(whole).slice(0, 3)], 10);
      await p.run(new Promise((r) => setTimeout(r, 100)));
      controller.abort();
      const e = await ucxRejection(p.run(aborted));
      expect(e.name, "AbortError", `name (${e.message})`);
      await slotsBack("after the abort");
      const next = p.b.recvMulti(10, { deviceFrames: "device" });
      const again = pattern(CHUNK + 1, 32);
      await send([encodeHeaders([{ size: again.length, device: true, chunkBytes: CHUNK }]), ...chunksOf(again)], 10);
      const [f] = await p.run(next);
      if (!samePattern((f as DeviceBuffer).copyToHost(), 32)) throw new Error("the batch after the abort differs");
    });

    await check("a header announcing more than maxBytes is refused before anything is allocated", async () => {
      const r = p.b.recvMulti(11, { deviceFrames: "device", maxBytes: 1000 });
      r.catch(() => {}); // rejects as soon as the header arrives, maybe before `send` returns (see above)
      await send([encodeHeaders([{ size: 5000, device: true, chunkBytes: CHUNK }])], 11);
      const e = await ucxRejection(p.run(r));
      expect(e.code, "UCX_TS_LIMIT_EXCEEDED", `code (${e.message})`);
      expect(pinnedStats().outstanding, 0, "pinned buffers out");
    });

    await check("an endpoint's recvMulti takes the pipeline too (its receive scope)", async () => {
      const { ab, ba } = await helloEndpoints(p.a, p.b, p.run);
      const whole = pattern(5 * CHUNK + 17, 41);
      const recv = ba.recvMulti(12, { deviceFrames: "device" });
      await p.run(Promise.all([encodeHeaders([{ size: whole.length, device: true, chunkBytes: CHUNK }]), ...chunksOf(whole)].map((m) => ab.send(m, 12))));
      const [f] = await p.run(recv);
      if (!samePattern((f as DeviceBuffer).copyToHost(), 41)) throw new Error("content differs");
      await slotsBack("endpoint batch");
    });
    await check("an endpoint closed under two queued batches: both reject, the second never posts on the closed endpoint", async () => {
      // The second batch posts its first receive only once the first has posted all of its own
      // (takeTurn): here once the close has cancelled the first. A receive posted after the close's
      // sweep would wait, its pinned slot and frames held, until the worker closed (the soak's
      // wind-down, 2026-12-07: 3 pinned buffers and 2 DeviceBuffers out until then).
      const { ab, ba } = await helloEndpoints(p.a, p.b, p.run);
      const first = ba.recvMulti(14, { deviceFrames: "device" });
      const second = ba.recvMulti(14, { deviceFrames: "device" });
      const outcomes = [first, second].map((r) => ucxRejection(r));
      await p.run(new Promise((r) => setTimeout(r, 20))); // the first batch's header receive is posted
      await p.run(Promise.all([ba.close(), ab.close()]));
      const timeout = new Promise<never>((_, reject) => setTimeout(() => reject(new Error("a batch queued behind a closed endpoint never settled")), 5000).unref?.());
      const [e1, e2] = (await p.run(Promise.race([Promise.all(outcomes), timeout]))) as [UcxError, UcxError];
      expect(e1.code, "UCS_ERR_CANCELED", `first batch (${e1.message})`);
      expect(e2.code, "UCX_TS_CLOSED", `second batch (${e2.message})`);
      await slotsBack("after the close");
    });
  } finally {
    await p.close();
  }
  await check("polling mode: the pipeline's receives and copies progress through the application's own loop", async () => {
    const q = await pair("polling");
    try {
      const whole = pattern(7 * CHUNK + 3, 61);
      const recv = q.b.recvMulti(13, { deviceFrames: "device" });
      await q.run(Promise.all([encodeHeaders([{ size: whole.length, device: true, chunkBytes: CHUNK }]), ...chunksOf(whole)].map((m) => q.ab.send(m, 13))));
      const [f] = await q.run(recv);
      if (!samePattern((f as DeviceBuffer).copyToHost(), 61)) throw new Error("content differs");
      await slotsBack("polling batch");
    } finally {
      await q.close();
    }
  });
} else if (role === "death-receiver") {
  const worker = await Worker.create({ progressMode: "thread" });
  const listener = await worker.listen({ port: 0, host: "127.0.0.1" });
  process.stdout.write(JSON.stringify({ port: listener.port }) + "\n");
  const ep = await listener.accept();
  await listener.close();
  await check("the sender dying half-way through a device frame rejects the batch, no hang", async () => {
    const e = await ucxRejection(ep.recvMulti(5, { deviceFrames: "device" }));
    if (e.code === "UCX_TS_PROTOCOL_ERROR") throw new Error(`a protocol error, not the endpoint's: ${e.message}`);
    return true;
  });
  await check("every pinned slot came back after the peer's death", () => slotsBack("after the death"));
  await worker.close().catch(() => {});
  process.exit(0);
} else if (role === "death-sender") {
  const worker = await Worker.create({ progressMode: "thread" });
  const ep = await worker.connect({ host: "127.0.0.1", port: Number(portArg) });
  const whole = pattern(10 * CHUNK, 51);
  await ep.send(encodeHeaders([{ size: whole.length, device: true, chunkBytes: CHUNK }]), 5);
  for (const c of chunksOf(whole).slice(0, 4)) await ep.send(c, 5);
  await ep.flush();
  await new Promise((r) => setTimeout(r, 200)); // the receiver is now waiting for chunk 5
  process.kill(process.pid, "SIGKILL");
}
