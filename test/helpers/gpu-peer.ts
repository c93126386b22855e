/**
 * The GPU suites' child processes (test/cuda/gpu.test.ts), run by the test's runtime against the
 * libcudart named by UCX_TS_CUDART (the stand-in, or the real one on a GPU machine):
 *   gpu-peer.ts receiver          listens on 127.0.0.1 (port 0), prints {"port": N}, receives every
 *                                 case and prints one JSON line per case: {"case", "ok", "detail"}
 *   gpu-peer.ts sender <port>     connects and sends every case
 * Both build the same case list from GPU_SIZES (comma-separated bytes) and GPU_RECEIVER_DEVICE
 * ("1": the receiver has a GPU and takes device memory; "0": it has none, and device data must
 * reach it in host memory). Contents are checked byte for byte on the receiver.
 * A watchdog ends either after GPU_TIMEOUT_S (default 120) seconds.
 */
import process from "node:process";
import { DeviceBuffer, Worker, type Endpoint } from "../../src/index.ts";
import { pinnedStats } from "../../src/core/cuda/pinned-pool.ts";

const [role, portArg] = process.argv.slice(2);
const sizes = (process.env.GPU_SIZES ?? "1,4097,65539,3145728").split(",").map(Number);
const receiverDevice = process.env.GPU_RECEIVER_DEVICE !== "0";
setTimeout(() => process.exit(3), Number(process.env.GPU_TIMEOUT_S ?? 120) * 1000).unref?.();

/** Byte i of seed s is (i * 31 + s) & 255, written in 64 KiB blocks (fast enough for 1 GiB). */
function pattern(length: number, seed: number): Uint8Array {
  const out = new Uint8Array(length);
  for (let i = 0; i < Math.min(length, 65536); i++) out[i] = (i * 31 + seed) & 255;
  // (i * 31) mod 256 repeats every 256 bytes; 65536 is a multiple, so blocks can be copied.
  for (let at = 65536; at < length; at += 65536) out.copyWithin(at, 0, Math.min(65536, length - at));
  return out;
}
function firstDifference(bytes: Uint8Array, seed: number): number {
  const expected = pattern(Math.min(bytes.length, 65536), seed);
  for (let i = 0; i < bytes.length; i++) if (bytes[i] !== expected[i & 65535]) return i;
  return -1;
}
function device(size: number, seed: number): DeviceBuffer {
  const d = DeviceBuffer.allocate(size);
  d.copyFromHost(pattern(size, seed));
  return d;
}

interface Case {
  readonly name: string;
  readonly tag: number;
  send(ep: Endpoint): Promise<void>;
  /** Receive and check; resolves with a problem, or "" when all is right. */
  receive(ep: Endpoint, worker: Worker): Promise<string>;
}

const cases: Case[] = [];
const check = (what: string, bytes: Uint8Array, size: number, seed: number): string => {
  if (bytes.length !== size) return `${what}: ${bytes.length} bytes, expected ${size}`;
  const at = firstDifference(bytes, seed);
  return at < 0 ? "" : `${what}: byte ${at} differs`;
};
const hostOf = (x: Uint8Array | DeviceBuffer): Uint8Array => (x instanceof DeviceBuffer ? x.copyToHost() : x);

for (const [k, size] of sizes.entries()) {
  const seed = k * 7 + 1;
  const tag = 100 + 10 * k;
  // Tag: the receiver chooses where the message lands, whatever the sender's memory.
  if (receiverDevice) {
    cases.push({
      name: `tag device-to-device ${size} B`,
      tag,
      send: (ep) => ep.send(device(size, seed), tag),
      receive: async (ep) => {
        const d = DeviceBuffer.allocate(size);
        const r = await ep.recv(d, tag);
        return r.length !== size ? `length ${r.length}` : check("device", d.copyToHost(), size, seed);
      },
    });
    cases.push({
      name: `tag host-to-device ${size} B`,
      tag: tag + 1,
      send: (ep) => ep.send(pattern(size, seed + 1), tag + 1),
      receive: async (ep) => {
        const d = DeviceBuffer.allocate(size);
        await ep.recv(d, tag + 1);
        return check("device", d.copyToHost(), size, seed + 1);
      },
    });
  }
  cases.push({
    name: `tag device-to-host ${size} B`,
    tag: tag + 2,
    send: (ep) => ep.send(device(size, seed + 2), tag + 2),
    receive: async (ep) => {
      const h = new Uint8Array(size);
      await ep.recv(h, tag + 2);
      return check("host", h, size, seed + 2);
    },
  });
  // AM: the header says device; a receiver with a GPU gets a DeviceBuffer, one without gets host memory.
  cases.push({
    name: `am device-to-${receiverDevice ? "device" : "host"} ${size} B`,
    tag: 0,
    send: (ep) => ep.amSend(device(size, seed + 3), { header: new Uint8Array([k]) }),
    receive: async (_ep, worker) => {
      const m = await worker.amRecv();
      if (m.memoryType !== 1) return `memoryType ${m.memoryType}`;
      if (m.header[0] !== k) return `header ${m.header[0]}`;
      if (receiverDevice !== (m.device !== undefined)) return `device ${m.device !== undefined}, expected ${receiverDevice}`;
      return check(m.device ? "device" : "host", m.device ? m.device.copyToHost() : m.data, size, seed + 3);
    },
  });
  // Multi-buffer: a mixed batch; the receiver takes device frames to the GPU, or asks for host memory.
  cases.push({
    name: `multi device/host frames to ${receiverDevice ? "device" : "host"} ${size} B`,
    tag: tag + 4,
    send: (ep) => ep.sendMulti([device(size, seed + 4), pattern(size, seed + 5), device(size >> 1, seed + 6)], tag + 4),
    receive: async (ep) => {
      const frames = receiverDevice ? await ep.recvMulti(tag + 4, { deviceFrames: "device" }) : await ep.recvMulti(tag + 4);
      const kinds = frames.map((f) => (f instanceof DeviceBuffer ? "D" : "H")).join("");
      const want = receiverDevice ? "DHD" : "HHH";
      if (kinds !== want) return `frames ${kinds}, expected ${want}`;
      // The receiving pipeline gives its pinned slots back when the batch is done (none are out between cases).
      const out = pinnedStats().outstanding;
      return [
        check("frame 0", hostOf(frames[0]!), size, seed + 4),
        check("frame 1", hostOf(frames[1]!), size, seed + 5),
        check("frame 2", hostOf(frames[2]!), size >> 1, seed + 6),
        out === 0 ? "" : `${out} pinned buffer(s) still out after the batch`,
      ]
        .filter(Boolean)
        .join("; ");
    },
  });
}

const worker = await Worker.create({ progressMode: "thread" });
if (role === "receiver") {
  const listener = await worker.listen({ port: 0, host: "127.0.0.1" });
  process.stdout.write(JSON.stringify({ port: listener.port }) + "\n");
  const ep = await listener.accept();
  await listener.close();
  for (const c of cases) {
    let detail: string;
    try {
      detail = await c.receive(ep, worker);
    } catch (e) {
      detail = `threw ${(e as Error).stack ?? e}`;
    }
    process.stdout.write(JSON.stringify({ case: c.name, ok: detail === "", detail }) + "\n");
  }
  await ep.send(new Uint8Array([1]), 99); // done: the sender may go
  await ep.close();
} else {
  const ep = await worker.connect({ host: "127.0.0.1", port: Number(portArg) });
  for (const c of cases) await c.send(ep);
  await ep.recv(new Uint8Array(1), 99);
  await ep.close();
}
await worker.close();
process.exit(0);
