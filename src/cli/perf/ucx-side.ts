/**
 * The two ucx-ts sides of `ucx-ts perf`. The server serves one client: a control message says
 * which test, size and count come next. The client measures. Memory for put_bw is registered by
 * the server (UCX allocates it, as ucx_perftest's) and its key sent once at the start.
 */
import { Worker, type Endpoint } from "../../index.ts";
import { bandwidthRounds, isLatency, MAX_SIZE, WINDOW, type PerfPlan, type PerfRow, type TestName } from "./tests.ts";

const TAG = { CONTROL: 0x7065_7201, PING: 0x7065_7202, PONG: 0x7065_7203, DATA: 0x7065_7204, ACK: 0x7065_7205, KEY: 0x7065_7206 };
/**
 * Round trips run before a latency point is measured: enough for the JIT to compile the path
 * (with 20, 8 B read 16-19 us one way here and 7 us with 20,000 iterations: the median still
 * fell among unoptimised rounds), fewer for large messages, where a round trip is the copy.
 */
function warmup(size: number): number {
  return Math.max(20, Math.min(2000, Math.floor((64 << 20) / Math.max(size, 1))));
}

interface Control {
  test: TestName | "done";
  size: number;
  count: number;
}

const encode = (c: Control) => new TextEncoder().encode(JSON.stringify(c));

export async function serve(worker: Worker, ep: Endpoint): Promise<void> {
  const wait = <T>(p: Promise<T>) => worker.settled(p);
  const mem = await wait(worker.memMap(MAX_SIZE, { allocator: "ucx" }));
  await wait(ep.send(await wait(mem.packRkey()), TAG.KEY));
  const control = new Uint8Array(1024);
  const buffers = Array.from({ length: WINDOW }, () => new Uint8Array(MAX_SIZE));
  const ack = new Uint8Array(1);
  for (;;) {
    const { length } = await wait(ep.recv(control, TAG.CONTROL));
    const c = JSON.parse(new TextDecoder().decode(control.subarray(0, length))) as Control;
    if (c.test === "done") {
      // The client waits for this before it closes (a flush of its own raced with our close:
      // "connection reset by remote peer" when its flush was posted after we were gone).
      await wait(ep.send(ack, TAG.ACK));
      break;
    }
    const buf = buffers[0]!.subarray(0, c.size);
    for (let i = 0; i < c.count; i++) {
      if (c.test === "tag_lat") {
        await wait(ep.recv(buf, TAG.PING));
        await wait(ep.send(buf, TAG.PONG));
        continue;
      }
      if (c.test === "tag_bw") await wait(Promise.all(buffers.map((b) => ep.recv(b.subarray(0, c.size), TAG.DATA))));
      else if (c.test === "stream_bw") for (const b of buffers) await wait(ep.streamRecv(b.subarray(0, c.size)));
      else if (c.test === "am_bw") for (let k = 0; k < WINDOW; k++) await wait(ep.amRecv());
      else if (c.test === "put_bw") continue; // one-sided: nothing to do here
      await wait(ep.send(ack, TAG.ACK));
    }
  }
  await wait(mem.unmap()).catch(() => {});
}

export async function measure(worker: Worker, ep: Endpoint, plan: PerfPlan, system: string, onRow: (r: PerfRow) => void): Promise<void> {
  const wait = <T>(p: Promise<T>) => worker.settled(p);
  const keyBytes = new Uint8Array(1024);
  const { length } = await wait(ep.recv(keyBytes, TAG.KEY));
  const rkey = await wait(ep.unpackRkey(keyBytes.subarray(0, length)));
  const src = new Uint8Array(MAX_SIZE).fill(0x5a);
  const back = new Uint8Array(MAX_SIZE);
  const ack = new Uint8Array(1);
  for (const test of plan.tests) {
    for (const size of plan.sizes) {
      const data = src.subarray(0, size);
      if (isLatency(test)) {
        const warm = warmup(size);
        const count = warm + plan.iterations;
        await wait(ep.send(encode({ test, size, count }), TAG.CONTROL));
        const rtts: number[] = [];
        for (let i = 0; i < count; i++) {
          const t0 = performance.now();
          const pong = ep.recv(back.subarray(0, size), TAG.PONG);
          await wait(ep.send(data, TAG.PING));
          await wait(pong);
          if (i >= warm) rtts.push((performance.now() - t0) * 1000);
        }
        rtts.sort((a, b) => a - b);
        onRow({ system, test, size, latencyUs: rtts[rtts.length >> 1]! / 2 });
        continue;
      }
      const rounds = bandwidthRounds(plan);
      await wait(ep.send(encode({ test, size, count: rounds + 1 }), TAG.CONTROL));
      let t0 = 0;
      for (let r = 0; r <= rounds; r++) {
        if (r === 1) t0 = performance.now(); // round 0 warms up
        const acked = test === "put_bw" ? undefined : ep.recv(ack, TAG.ACK);
        if (test === "tag_bw") await wait(Promise.all(Array.from({ length: WINDOW }, () => ep.send(data, TAG.DATA))));
        else if (test === "stream_bw") await wait(Promise.all(Array.from({ length: WINDOW }, () => ep.streamSend(data))));
        else if (test === "am_bw") await wait(Promise.all(Array.from({ length: WINDOW }, () => ep.amSend(data))));
        else await wait(Promise.all(Array.from({ length: WINDOW }, () => ep.put(data, rkey.address, rkey))));
        if (acked) await wait(acked);
      }
      if (test === "put_bw") await wait(ep.flush());
      const seconds = (performance.now() - t0) / 1000;
      onRow({ system, test, size, MBps: (size * WINDOW * rounds) / seconds / 1e6 });
    }
  }
  await wait(rkey.destroy());
  const bye = ep.recv(ack, TAG.ACK);
  await wait(ep.send(encode({ test: "done", size: 0, count: 0 }), TAG.CONTROL));
  await wait(bye);
}
