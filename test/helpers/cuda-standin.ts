/**
 * The stand-in libcudart (test/cuda/standin-cudart.c), compiled once with the C compiler
 * (compiled.ts: one file per source, reused by every test process and run), and the choice of
 * which libcudart a GPU test runs against: the stand-in everywhere, the real one where a CUDA
 * runtime and a GPU exist.
 */
import { execFileSync } from "node:child_process";
import { existsSync } from "node:fs";
import { join } from "node:path";
import process from "node:process";
import { compileOnce } from "./compiled.ts";
import { repoRoot } from "./spawn.ts";

const SOURCE = join(repoRoot, "test/cuda/standin-cudart.c");
let built: { path: string } | { reason: string } | undefined;

/** The stand-in's path, or why it could not be built. */
export function standinCudart(): { path: string } | { reason: string } {
  return (built ??= compileOnce("libcudart-standin.so", SOURCE, ["-O2", "-shared", "-fPIC"], ["-lpthread"]));
}

/** Where a real libcudart may be (CUDA's default install and the loader path's sonames). */
const REAL_CANDIDATES = ["/usr/local/cuda/lib64/libcudart.so", "/usr/lib/x86_64-linux-gnu/libcudart.so", "/usr/local/cuda/targets/x86_64-linux/lib/libcudart.so"];

/**
 * The real libcudart, when one is installed and the machine has a GPU (/dev/nvidia0), else the
 * reason it is skipped. UCX_TS_REAL_CUDART names it explicitly.
 */
export function realCudart(): { path: string } | { reason: string } {
  if (!existsSync("/dev/nvidia0")) return { reason: "no GPU on this machine (/dev/nvidia0 absent)" };
  const named = process.env.UCX_TS_REAL_CUDART;
  const found = named ? [named] : REAL_CANDIDATES.filter((p) => existsSync(p));
  const glob = (dir: string) => {
    try {
      return execFileSync("sh", ["-c", `ls ${dir}/libcudart.so* 2>/dev/null | head -1`], { encoding: "utf8" }).trim();
    } catch {
      return "";
    }
  };
  const path = found[0] || glob("/usr/local/cuda/lib64") || glob("/usr/lib/x86_64-linux-gnu") || fromLdconfig();
  return path ? { path } : { reason: "a GPU is here but no libcudart was found (set UCX_TS_REAL_CUDART)" };
}

/** A libcudart the system loader knows (`ldconfig -p`), e.g. CUDA installed under /usr/local/cuda-13. */
function fromLdconfig(): string {
  try {
    const out = execFileSync("sh", ["-c", "ldconfig -p 2>/dev/null | grep -o '/[^ ]*libcudart\\.so[.0-9]*$' | head -1"], { encoding: "utf8" });
    return out.trim();
  } catch {
    return "";
  }
}
