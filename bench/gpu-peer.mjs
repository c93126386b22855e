// One side of the GPU benchmark (bench/run-gpu.mjs), plain JavaScript over the built package
// (dist/), so that the device machine runs it with a bare node binary:
//   node bench/gpu-peer.mjs server
//   node bench/gpu-peer.mjs client <port> <plan-json>
// The client moves `size` bytes to the server each round and waits for an 8-byte acknowledgement:
//   host-to-host   a host buffer into a host buffer (the baseline)
//   gpu-to-gpu     a DeviceBuffer into a DeviceBuffer, by tag (staged or direct: see devicePath)
//   gpu-multi      the same bytes as 8 device frames of one sendMulti, received as DeviceBuffers
// and, in the client alone, cudaMemcpy device-to-host into pinned memory (the staging copy).
// A control message (tag 1: variant, size, rounds) tells the server what comes. The client
// prints one JSON line: the median round per variant and size.
import process from "node:process";

const lib = await import(process.env.UCX_TS_BENCH_IMPORT ?? new URL("../dist/index.js", import.meta.url).href);
const { Worker, DeviceBuffer, cudaAvailability, cudaRuntime, devicePath, ucx } = lib;
const VARIANTS = ["host-to-host", "gpu-to-gpu", "gpu-multi"];
const TAG_CONTROL = 1;
const TAG_DATA = 2;
const TAG_ACK = 3;
const FRAMES = 8;

const [role, portArg, planArg] = process.argv.slice(2);
setTimeout(() => process.exit(3), 540_000).unref?.();
// run-gpu.mjs --error-handling: both sides the same (none lets UCX pick shared memory).
const worker = await Worker.create({ progressMode: "thread", errorHandling: process.env.UCX_TS_BENCH_ERROR_HANDLING ?? "peer" });

function frames(size, make) {
  const each = Math.ceil(size / FRAMES);
  return Array.from({ length: FRAMES }, (_, i) => make(Math.max(0, Math.min(each, size - i * each))));
}

if (role === "server") {
  const listener = await worker.listen({ port: 0, host: "127.0.0.1" });
  process.stdout.write(JSON.stringify({ port: listener.port }) + "\n");
  const ep = await listener.accept();
  await listener.close();
  const control = new Float64Array(3);
  const ack = new Uint8Array(8);
  for (;;) {
    await ep.recv(control, TAG_CONTROL);
    const [variant, size, rounds] = control;
    if (variant < 0) break;
    const name = VARIANTS[variant];
    const into = name === "host-to-host" ? new Uint8Array(size) : name === "gpu-to-gpu" ? DeviceBuffer.allocate(size) : null;
    for (let r = 0; r < rounds; r++) {
      if (name === "gpu-multi") for (const f of await ep.recvMulti(TAG_DATA, { deviceFrames: "device" })) f.free?.();
      else await ep.recv(into, TAG_DATA);
      await ep.send(ack, TAG_ACK);
    }
    into?.free?.();
  }
  await ep.close();
} else {
  const plan = JSON.parse(planArg);
  const ep = await worker.connect({ host: "127.0.0.1", port: Number(portArg) });
  const ack = new Uint8Array(8);
  const rows = [];
  const median = (xs) => xs.sort((a, b) => a - b)[xs.length >> 1];
  for (const size of plan.sizes) {
    const rounds = Math.max(3, Math.min(plan.rounds, Math.ceil((plan.bytesPerPoint ?? 2 ** 30) / size)));
    for (const [v, name] of VARIANTS.entries()) {
      const from = name === "host-to-host" ? new Uint8Array(size).fill(7) : name === "gpu-to-gpu" ? DeviceBuffer.allocate(size) : frames(size, (n) => DeviceBuffer.allocate(n));
      await ep.send(new Float64Array([v, size, rounds + plan.warmup]), TAG_CONTROL);
      const times = [];
      for (let r = 0; r < rounds + plan.warmup; r++) {
        const t = performance.now();
        if (name === "gpu-multi") await ep.sendMulti(from, TAG_DATA);
        else await ep.send(from, TAG_DATA);
        await ep.recv(ack, TAG_ACK);
        if (r >= plan.warmup) times.push(performance.now() - t);
      }
      for (const f of Array.isArray(from) ? from : [from]) f.free?.();
      const ms = median(times);
      rows.push({ variant: name, size, rounds, medianMs: ms, MBps: size / 1e6 / (ms / 1e3) });
    }
    // cudaMemcpy device-to-host into pinned memory, what staging costs on the sending side.
    const cuda = cudaRuntime();
    const d = DeviceBuffer.allocate(size);
    const slot = new BigUint64Array(1);
    if (cuda.cudaMallocHost(ucx().addressOf(slot), size) !== 0) throw new Error("cudaMallocHost failed");
    const pinned = Number(slot[0]);
    const times = [];
    for (let r = 0; r < rounds + plan.warmup; r++) {
      const t = performance.now();
      if (cuda.cudaMemcpy(pinned, d.address, size, 2) !== 0) throw new Error("cudaMemcpy failed");
      if (r >= plan.warmup) times.push(performance.now() - t);
    }
    cuda.cudaFreeHost(pinned);
    d.free();
    const ms = median(times);
    rows.push({ variant: "cudaMemcpy-D2H", size, rounds, medianMs: ms, MBps: size / 1e6 / (ms / 1e3) });
  }
  await ep.send(new Float64Array([-1, 0, 0]), TAG_CONTROL);
  await ep.close();
  process.stdout.write(JSON.stringify({ cuda: cudaAvailability(), path: devicePath(), rows }) + "\n");
}
await worker.close();
process.exit(0);
