/**
 * Sizes `memMap` refuses before UCX sees them. Asked for more than the host has, UCX's
 * allocator does not fail cleanly: its posix allocator (the first UCX tries, UCX_MEM_ALLOC_METHODS
 * "md" with the posix shared-memory domain) creates a file in /dev/shm, which tmpfs lets grow
 * to its own size, and then touches the pages; with 2^40 bytes the worker wedged while the file
 * filled /dev/shm (24.9 GB) and outlived the process. So the size is checked here against what
 * each allocator can give, and refused with UCS_ERR_NO_MEMORY, before anything is created.
 */
import * as fs from "node:fs";
import { totalmem } from "node:os";
import process from "node:process";
import { UCS_STATUS } from "../ffi/index.ts";
import { UcxError } from "./errors.ts";

/** Where UCX's posix allocator puts its memory: /dev/shm unless UCX_POSIX_DIR says otherwise. */
const shmDir = () => process.env.UCX_POSIX_DIR || "/dev/shm";

/**
 * The most bytes memMap may ask `allocator` for: physical memory for both, and for "ucx" also
 * the free space of /dev/shm where the runtime can tell (`fs.statfsSync`).
 */
export function memMapLimit(allocator: "js" | "ucx"): { bytes: number; why: string } {
  let limit = { bytes: totalmem(), why: "physical memory" };
  if (allocator === "ucx") {
    const shm = shmAvailable();
    if (shm !== undefined && shm < limit.bytes) limit = { bytes: shm, why: `free space in ${shmDir()}, where UCX's allocator puts it` };
  }
  return limit;
}

/** Throws UCS_ERR_NO_MEMORY when `size` bytes are more than `allocator` can give. */
export function checkMemMapSize(size: number, allocator: "js" | "ucx"): void {
  const limit = memMapLimit(allocator);
  if (size > limit.bytes) throw noMemory(`memMap: ${size} bytes asked for, more than the ${limit.bytes} bytes of ${limit.why}`);
}

/** A JS allocation the runtime refused (a RangeError) as the same typed error. */
export function allocateForMemMap(size: number): Uint8Array {
  try {
    return new Uint8Array(size);
  } catch (e) {
    if (e instanceof RangeError) throw noMemory(`memMap: the runtime cannot allocate ${size} bytes (${e.message})`, e);
    throw e;
  }
}

function shmAvailable(): number | undefined {
  const statfs = (fs as { statfsSync?: (path: string) => { bavail: number | bigint; bsize: number | bigint } }).statfsSync;
  if (typeof statfs !== "function") return undefined;
  try {
    const s = statfs(shmDir());
    return Number(s.bavail) * Number(s.bsize);
  } catch {
    return undefined; // no such directory: the posix allocator cannot fill it
  }
}

function noMemory(message: string, cause?: unknown): UcxError {
  return new UcxError("UCS_ERR_NO_MEMORY", message, { status: UCS_STATUS.UCS_ERR_NO_MEMORY, cause });
}
