/**
 * Which libcudart the soak's GPU traffic (gpu.ts) runs against: the stand-in
 * (test/cuda/standin-cudart.c, compiled with the C compiler: host memory posing as a GPU's) or a
 * real one (UCX_TS_CUDART, else the usual places, else the loader path), named to this process
 * and, through the environment, to the peers. Apart from gpu.ts so that peers do not load the
 * compiler helper.
 */
import process from "node:process";
import { cudaAvailability } from "../../src/index.ts";
import { realCudart, standinCudart } from "../../test/helpers/cuda-standin.ts";
import type { GpuChoice } from "./gpu.ts";

/**
 * Name the libcudart for this process and its children; returns it, or throws saying why none
 * can be used. Call before anything touches CUDA (the library opens it once, on first use).
 */
export function chooseCudart(choice: Exclude<GpuChoice, "off">): string {
  let path: string | undefined;
  if (choice === "stand-in") {
    const s = standinCudart();
    if ("reason" in s) throw new Error(`--gpu stand-in: ${s.reason}`);
    path = s.path;
  } else {
    const r = process.env.UCX_TS_CUDART ? { path: process.env.UCX_TS_CUDART } : realCudart();
    path = "path" in r ? r.path : undefined; // else the loader path's libcudart, if any
  }
  if (path) process.env.UCX_TS_CUDART = path;
  const a = cudaAvailability();
  if (!a.available) throw new Error(`--gpu ${choice}: no usable GPU: ${a.reason}`);
  return a.library ?? path ?? "libcudart (loader path)";
}

