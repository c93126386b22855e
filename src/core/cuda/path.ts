/**
 * Which way device memory travels: `direct` when UCX itself handles CUDA memory (its context
 * reports the `cuda` memory type: a UCX built with CUDA transports), so device pointers go to
 * UCX as they are; `staged` otherwise (Debian's and Ubuntu's UCX), through pinned host memory.
 * UCX_TS_GPU_PATH=staged forces staging on a CUDA-capable UCX (to compare the two); the reverse
 * cannot be forced: UCX without CUDA would read device pointers as host memory.
 */
import { getEnv } from "../../ffi/index.ts";
import { Context } from "../context.ts";
import { invalidArgument } from "../errors.ts";

export type DevicePath = "direct" | "staged";

export const GPU_PATH_ENV = "UCX_TS_GPU_PATH";

let ucxHandlesCuda: boolean | undefined;

/** Does this process's UCX move CUDA memory itself? Asked of a context once (ucp_context_query). */
export function ucxSupportsCuda(): boolean {
  if (ucxHandlesCuda === undefined) {
    const context = new Context({ features: ["tag"] });
    try {
      ucxHandlesCuda = context.memoryTypes.includes("cuda");
    } finally {
      context.close();
    }
  }
  return ucxHandlesCuda;
}

export function devicePath(): DevicePath {
  const forced = getEnv(GPU_PATH_ENV);
  if (forced !== undefined && forced !== "" && forced !== "staged") {
    throw invalidArgument(`${GPU_PATH_ENV} may only be 'staged' (got '${forced}'): the direct path is taken when UCX supports CUDA`);
  }
  if (forced === "staged") return "staged";
  return ucxSupportsCuda() ? "direct" : "staged";
}
