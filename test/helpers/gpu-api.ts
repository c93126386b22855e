/**
 * In-process GPU checks for test/cuda/gpu.test.ts, run in a child process so that each check
 * set gets the libcudart its test names (UCX_TS_CUDART is read once per process):
 *   gpu-api.ts api [standin]   DeviceBuffer, raw pointers, memory types, RMA and stream with
 *                              device memory; with "standin", also the stand-in's own promises
 *                              (kind checks, its address range)
 *   gpu-api.ts unavailable     no usable GPU: GPU features say why, host transfers work
 *   gpu-api.ts touch           host code reads device memory (must die with SIGSEGV, as on a GPU)
 * Prints one JSON line per check: {"check", "ok", "detail"}.
 */
import process from "node:process";
import { collectInfo, cudaAvailability, cudaRuntime, DeviceBuffer, pointerAttributes, ucx, UcxError } from "../../src/index.ts";
import { helloEndpoints, pair, pattern, samePattern, ucxRejection } from "./workers.ts";
import { check } from "./child-check.ts";

const [role, flavour] = process.argv.slice(2);
setTimeout(() => process.exit(3), 60_000).unref?.();


/** The code of the UcxError `fn` throws, or "no error". */
function codeOf(fn: () => unknown): string {
  try {
    fn();
    return "no error";
  } catch (e) {
    return e instanceof UcxError ? e.code : `not a UcxError: ${e}`;
  }
}

function expect<T>(actual: T, expected: T, what: string): true {
  if (actual !== expected) throw new Error(`${what}: ${String(actual)}, expected ${String(expected)}`);
  return true;
}

if (role === "touch") {
  const d = DeviceBuffer.allocate(4096);
  const view = new Uint8Array(ucx().view(d.address, 4096));
  process.stdout.write("touching\n");
  view[0] = 1; // a GPU pointer is not host memory: this must fault
  process.stdout.write("survived\n");
  process.exit(0);
}

if (role === "unavailable") {
  await check("cudaAvailability says unavailable, with a reason", () => {
    const a = cudaAvailability();
    expect(a.available, false, "available");
    if (!a.reason) throw new Error("no reason");
    process.stdout.write(JSON.stringify({ reason: a.reason }) + "\n");
  });
  await check("DeviceBuffer.allocate throws a typed error", () => expect(codeOf(() => DeviceBuffer.allocate(16)), process.env.EXPECT_CODE, "code"));
  await check("DeviceBuffer.fromPointer throws a typed error", () => expect(codeOf(() => DeviceBuffer.fromPointer(4096, 16)), process.env.EXPECT_CODE, "code"));
  await check("ucx-ts info reports CUDA unavailable", () => expect(collectInfo().cuda.available, false, "info"));
  await check("host transfers still work", async () => {
    const p = await pair("thread");
    try {
      const { ab, ba } = await helloEndpoints(p.a, p.b, p.run);
      const into = new Uint8Array(5000);
      await p.run(Promise.all([ba.recv(into, 3), ab.send(pattern(5000, 3), 3)]));
      return samePattern(into, 3);
    } finally {
      await p.close();
    }
  });
  process.exit(0);
}

// --- api ---------------------------------------------------------------------------------------
const standin = flavour === "standin";

await check("a GPU is available through the named libcudart", () => {
  const a = cudaAvailability();
  expect(a.available, true, "available");
  return expect(a.library, process.env.UCX_TS_CUDART, "library");
});

await check("allocate, copy in and out (offsets too), free", () => {
  const d = DeviceBuffer.allocate(10_000);
  expect(d.size, 10_000, "size");
  expect(d.owned, true, "owned");
  expect(d.isDevice, true, "isDevice");
  expect(pointerAttributes(d.address).memory, "device", "memory");
  if (standin) expect(d.address >= 0x6d0000000000 && d.address < 0x6e0000000000, true, "address in the stand-in's device range");
  d.copyFromHost(pattern(10_000, 9));
  if (!samePattern(d.copyToHost(), 9)) throw new Error("round trip differs");
  d.copyFromHost(pattern(100, 4), 5000);
  const part = d.copyToHost(undefined, 5000, 100);
  if (!samePattern(part, 4)) throw new Error("offset copy differs");
  d.free();
  d.free(); // idempotent
  return expect(d.freed, true, "freed");
});

await check("bad arguments are typed errors", () => {
  const d = DeviceBuffer.allocate(64);
  expect(codeOf(() => d.copyFromHost(new Uint8Array(65))), "UCX_TS_INVALID_ARGUMENT", "copy past the end");
  expect(codeOf(() => d.copyToHost(undefined, 60, 8)), "UCX_TS_INVALID_ARGUMENT", "read past the end");
  expect(codeOf(() => DeviceBuffer.allocate(-1)), "UCX_TS_INVALID_ARGUMENT", "negative size");
  expect(codeOf(() => DeviceBuffer.allocate(8, { device: 4096 })), "UCX_TS_CUDA_ERROR", "no such device");
  d.free();
  return expect(codeOf(() => d.copyToHost()), "UCX_TS_CLOSED", "use after free");
});

await check("a 0-byte DeviceBuffer copies and frees without CUDA calls on NULL", () => {
  const d = DeviceBuffer.allocate(0);
  d.copyFromHost(new Uint8Array(0));
  expect(d.copyToHost().length, 0, "length");
  d.free();
});

await check("raw pointers: device memory of another allocator, pinned and plain host memory, classified", () => {
  const cuda = cudaRuntime()!;
  const slot = new BigUint64Array(1);
  expect(cuda.cudaMalloc(ucx().addressOf(slot), 4096), 0, "cudaMalloc");
  const raw = slot[0]!; // a BigInt, as other libraries hand pointers out
  const d = DeviceBuffer.fromPointer(raw, 4096);
  expect(d.memory, "device", "device memory");
  expect(d.owned, false, "owned");
  expect(codeOf(() => DeviceBuffer.fromPointer(raw, 8192)), "UCX_TS_INVALID_ARGUMENT", "range past the allocation");
  expect(codeOf(() => DeviceBuffer.fromPointer(0, 8)), "UCX_TS_INVALID_ARGUMENT", "NULL");
  d.free(); // not ours: the memory must still be there
  expect(pointerAttributes(Number(raw)).memory, "device", "still allocated after free() of a borrowed buffer");
  expect(cuda.cudaFree(Number(raw)), 0, "cudaFree by its owner");
  expect(cuda.cudaMallocHost(ucx().addressOf(slot), 4096), 0, "cudaMallocHost");
  expect(DeviceBuffer.fromPointer(slot[0]!, 4096).memory, "host-pinned", "pinned");
  expect(cuda.cudaFreeHost(Number(slot[0]!)), 0, "cudaFreeHost");
  const js = new Uint8Array(64);
  return expect(DeviceBuffer.fromPointer(ucx().addressOf(js), 64).memory, "host", "plain host memory");
});

await check("tag send and receive of a raw device pointer, and of a host pointer wrapped as one", async () => {
  const cuda = cudaRuntime()!;
  const slot = new BigUint64Array(1);
  expect(cuda.cudaMalloc(ucx().addressOf(slot), 100_000), 0, "cudaMalloc");
  const raw = DeviceBuffer.fromPointer(slot[0]!, 100_000);
  raw.copyFromHost(pattern(100_000, 21));
  const js = new Uint8Array(100_000);
  const wrapped = DeviceBuffer.fromPointer(ucx().addressOf(js), js.length);
  const p = await pair("thread");
  try {
    const { ab, ba } = await helloEndpoints(p.a, p.b, p.run);
    await p.run(Promise.all([ba.recv(wrapped, 1), ab.send(raw, 1)]));
    if (!samePattern(js, 21)) throw new Error("host pointer received wrong bytes");
    js.set(pattern(100_000, 22));
    await p.run(Promise.all([ba.recv(raw, 2), ab.send(wrapped, 2)]));
    if (!samePattern(raw.copyToHost(), 22)) throw new Error("raw device pointer received wrong bytes");
  } finally {
    await p.close();
    cuda.cudaFree(Number(slot[0]!));
  }
});

await check("put and get with device memory on this side; stream send and receive of device memory", async () => {
  const p = await pair("thread");
  try {
    const mem = await p.run(p.b.memMap(1 << 20));
    const rkey = await p.run(p.ab.unpackRkey(await p.run(mem.packRkey())));
    const src = DeviceBuffer.allocate(300_000);
    src.copyFromHost(pattern(300_000, 31));
    await p.run(p.ab.put(src, mem.address + 7, rkey));
    await p.run(p.ab.flush());
    if (!samePattern(mem.bytes.subarray(7, 300_007), 31)) throw new Error("put from device memory");
    mem.bytes.set(pattern(200_000, 32), 100);
    const dst = DeviceBuffer.allocate(200_000);
    await p.run(p.ab.get(dst, mem.address + 100, rkey));
    if (!samePattern(dst.copyToHost(), 32)) throw new Error("get into device memory");
    await p.run(rkey.destroy());
    await p.run(mem.unmap());
    // b's own endpoint to a for the stream (streams are per endpoint pair; as in stream.test.ts).
    const ba = await p.run(p.a.address().then((addr) => p.b.connect(addr)));
    const ab = p.ab;
    const into = DeviceBuffer.allocate(70_000);
    const from = DeviceBuffer.allocate(70_000);
    from.copyFromHost(pattern(70_000, 33));
    const [n] = await p.run(Promise.all([ba.streamRecv(into), ab.streamSend(from)]));
    expect(n, 70_000, "stream length");
    if (!samePattern(into.copyToHost(), 33)) throw new Error("stream into device memory");
  } finally {
    await p.close();
  }
});

await check("unread active messages with device data count their device bytes toward maxQueuedBytes", async () => {
  // The router copies device data into a DeviceBuffer on arrival (its host data is then empty):
  // queued unread, they once counted 0 bytes, so GPU memory was bounded only by the count.
  // Polling mode: the arrivals are routed while p.run progresses, before any receive is posted.
  const p = await pair("polling", { am: { maxQueuedMessages: 100, maxQueuedBytes: 6_000 } });
  try {
    const { ab, ba } = await helloEndpoints(p.a, p.b, p.run);
    const src = DeviceBuffer.allocate(4_000);
    src.copyFromHost(pattern(4_000, 51));
    await p.run(ab.amSend(src));
    await p.run(ab.amSend(src)); // over the bound once the first is queued: refused, its DeviceBuffer freed
    await p.run(new Promise((r) => setTimeout(r, 50)));
    const first = await p.run(ba.amRecv());
    if (!first.device || !samePattern(first.device.copyToHost(), 51)) throw new Error("the first message, device data, differs");
    first.device.free();
    const e = await ucxRejection(p.run(ba.amRecv()));
    expect(e.code, "UCX_TS_LIMIT_EXCEEDED", `second message (${e.message})`);
    src.free();
  } finally {
    await p.close();
  }
});

await check("a DeviceBuffer in flight cannot be freed", async () => {
  const p = await pair("thread");
  try {
    const { ab, ba } = await helloEndpoints(p.a, p.b, p.run);
    const d = DeviceBuffer.allocate(1000);
    const pending = ba.recv(d, 44);
    expect(codeOf(() => d.free()), "UCX_TS_INVALID_ARGUMENT", "free while receiving");
    await p.run(Promise.all([pending, ab.send(pattern(1000, 44), 44)]));
    d.free();
    expect(codeOf(() => ab.send(d, 45)), "UCX_TS_CLOSED", "send of a freed buffer");
  } finally {
    await p.close();
  }
});

if (standin) {
  await check("stand-in: every wrong cudaMemcpyKind is cudaErrorInvalidValue", () => {
    const cuda = cudaRuntime()!;
    const d = DeviceBuffer.allocate(64);
    const e = DeviceBuffer.allocate(64);
    const h = ucx().addressOf(new Uint8Array(64));
    const bad: [number, number, number][] = [
      [h, h, 1], [h, h, 2], [h, h, 3], // host-to-host given as H2D, D2H, D2D
      [d.address, h, 0], [d.address, h, 2], [d.address, h, 3], // host-to-device given otherwise
      [h, d.address, 0], [h, d.address, 1], [h, d.address, 3], // device-to-host given otherwise
      [d.address, e.address, 0], [d.address, e.address, 1], [d.address, e.address, 2], // device-to-device
      [d.address, h, 5], [d.address, h, -1], // not a kind
    ];
    for (const [dst, src, kind] of bad) {
      expect(cuda.cudaMemcpy(dst, src, 64, kind), 1, `cudaMemcpy kind ${kind}`);
      const stream = 0;
      expect(cuda.cudaMemcpyAsync(dst, src, 64, kind, stream), 1, `cudaMemcpyAsync kind ${kind}`);
    }
    for (const [dst, src, kind] of [[h, h, 0], [d.address, h, 1], [h, d.address, 2], [d.address, e.address, 3], [d.address, h, 4]] as const) {
      expect(cuda.cudaMemcpy(dst, src, 64, kind), 0, `right kind ${kind}`);
    }
    expect(cuda.cudaMemcpy(d.address, h, 65, 1), 1, "past the allocation's end");
  });
}
process.exit(0);
