/**
 * What one process keeps per GPU operation with no UCX traffic at all: cycles of the libcudart
 * calls the soak's GPU operations make (gpu.ts through src/core/cuda/), one kind per phase, with
 * malloc in use, RSS after trim and the process's mappings read between phases. The GPU soak on
 * a real GPU grew malloc in use by ~650 B per GPU operation without faults where the stand-in did
 * not; these phases say whether libcudart itself keeps it, and on which call.
 *
 * Phases (each `counts` cycles, sizes 1 B to 4 MiB log-uniform from a fixed seed):
 *   alloc   DeviceBuffer.allocate + free (cudaMalloc, cudaPointerGetAttributes, cudaFree)
 *   copy    allocate, copyFromHost, copyToHost, free (cudaMemcpy both ways)
 *   staged  allocate, a pinned staging buffer from the pool, two stream copies (cudaMemcpyAsync,
 *           cudaEventCreate/Record/Query/Destroy, cudaStreamSynchronize), pool release, free
 *   event   cudaMemcpyAsync of 0..64 B and the event dance alone, on one reused buffer
 * Linear growth over the readings is kept memory; a step that levels off is a cache.
 *
 *   node --expose-gc --import tsx scripts/soak/cuda-cycles.ts [stand-in|real] [alloc,copy,staged,event] [1000,2000,4000]
 */
import { readFileSync } from "node:fs";
import process from "node:process";
import { DeviceBuffer } from "../../src/index.ts";
import { withStream } from "../../src/core/cuda/copy-engine.ts";
import { acquirePinned, releasePinned } from "../../src/core/cuda/pinned-pool.ts";
import { CUDA_MEMCPY } from "../../src/ffi/index.ts";
import { chooseCudart } from "./gpu-library.ts";
import { seededRandom } from "./random.ts";
import { round, sample } from "./samples.ts";

const [choice = "stand-in", phasesArg = "alloc,copy,staged,event", countsArg = "1000,2000,4000"] = process.argv.slice(2);
if (choice !== "stand-in" && choice !== "real") throw new Error(`choose stand-in or real, got ${choice}`);
const counts = countsArg.split(",").map(Number);
const WARMUP = 100;
const library = chooseCudart(choice);

/** The same sizes in every run. */
const next = seededRandom(2027);
const randomSize = (max = 4 * 2 ** 20) => Math.max(1, Math.floor(Math.exp(next() * Math.log(max))));
const host = new Uint8Array(4 * 2 ** 20).map((_, i) => i * 31);

/** The process's mappings: all, and those of the NVIDIA device files (the driver's own). */
function mappings(): { count: number; nvidia: number; nvidiaMiB: number } {
  const lines = readFileSync("/proc/self/maps", "utf8").trim().split("\n");
  let nvidia = 0;
  let nvidiaBytes = 0;
  for (const l of lines) {
    if (!l.includes("/dev/nvidia")) continue;
    nvidia++;
    const [from, to] = l.split(" ")[0]!.split("-").map((h) => parseInt(h, 16));
    nvidiaBytes += to! - from!;
  }
  return { count: lines.length, nvidia, nvidiaMiB: round(nvidiaBytes / 2 ** 20) };
}

const phases: Record<string, () => Promise<void>> = {
  async alloc() {
    DeviceBuffer.allocate(randomSize()).free();
  },
  async copy() {
    const n = randomSize();
    const d = DeviceBuffer.allocate(n);
    d.copyFromHost(host.subarray(0, n));
    d.copyToHost(undefined, 0, n);
    d.free();
  },
  async staged() {
    const n = randomSize();
    const d = DeviceBuffer.allocate(n);
    const pinned = acquirePinned(n);
    try {
      await withStream(async (s) => {
        await s.copy(d.address, pinned.address, n, CUDA_MEMCPY.hostToDevice);
        await s.copy(pinned.address, d.address, n, CUDA_MEMCPY.deviceToHost);
      });
    } finally {
      releasePinned(pinned);
      d.free();
    }
  },
  event: (() => {
    let d: DeviceBuffer | undefined;
    const pinned = acquirePinned(64);
    return async () => {
      d ??= DeviceBuffer.allocate(64);
      const n = 1 + Math.floor(next() * 64);
      await withStream((s) => s.copy(d!.address, pinned.address, n, CUDA_MEMCPY.hostToDevice));
    };
  })(),
};

const started = Date.now();
console.log(JSON.stringify({ library, counts, warmup: WARMUP }));
for (const name of phasesArg.split(",")) {
  const step = phases[name];
  if (!step) throw new Error(`no phase ${name}: ${Object.keys(phases).join(", ")}`);
  let done = 0;
  for (const target of [WARMUP, ...counts]) {
    for (; done < target; done++) await step();
    const s = sample(started, done);
    console.log(JSON.stringify({ phase: name, cycles: done, rssMiB: round(s.trimmedRssMiB), mallocInUseMiB: round(s.mallocInUseMiB), ...mappings() }));
  }
}
process.exit(0);
