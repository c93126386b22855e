/**
 * What `ucx-ts info` reports: the UCX library in use, the runtime and FFI backend, the
 * transports and devices UCX sees, the memory types a context supports, and whether a CUDA
 * runtime is present.
 */
import { backend, platform, runtime, runtimeVersion, UCX_CONSTANTS as C } from "../ffi/index.ts";
import { Context, type MemoryTypeName } from "./context.ts";
import { check, cudaLoadFailure, cudaRuntime, ucx, ucxSettings, type UcxSetting } from "./library.ts";
import { OutSlots } from "./out-slots.ts";
import { listTransportResources, type TransportResource } from "./resources.ts";
import { ucxVersion, type UcxVersion } from "./version.ts";

export interface CudaInfo {
  readonly available: boolean;
  readonly library?: string;
  readonly runtimeVersion?: number;
  readonly driverVersion?: number;
  readonly deviceCount?: number;
  /** Why CUDA is not usable, when it is not. */
  readonly reason?: string;
}

export interface InfoReport {
  readonly ucx: UcxVersion & {
    readonly libraries: Readonly<Record<string, string>>;
    /** Highest thread mode the library supports (`ucp_lib_query`). */
    readonly maxThreadLevel: "single" | "serialized" | "multi";
    /** The UCX settings ucx-ts put into the C environment before loading UCX (see UCX_DEFAULTS). */
    readonly settings: readonly UcxSetting[];
  };
  readonly runtime: { readonly name: string; readonly version: string; readonly ffi: string; readonly platform: string };
  readonly transports: readonly TransportResource[];
  readonly memoryTypes: readonly MemoryTypeName[];
  readonly cuda: CudaInfo;
}

const THREAD_LEVELS = ["single", "serialized", "multi"] as const;

export function collectInfo(): InfoReport {
  const u = ucx();
  const lib = u.struct("ucp_lib_attr_t");
  lib.set("field_mask", C.UCP_LIB_ATTR_FIELD_MAX_THREAD_LEVEL);
  check(u.ucp_lib_query(u.addressOf(lib.bytes)), "ucp_lib_query");

  const context = new Context({ features: ["tag"] });
  let memoryTypes: MemoryTypeName[];
  try {
    memoryTypes = context.memoryTypes;
  } finally {
    context.close();
  }

  return {
    ucx: {
      ...ucxVersion(),
      libraries: { ...u.libraryPaths } as Record<string, string>,
      maxThreadLevel: THREAD_LEVELS[lib.getNumber("max_thread_level")] ?? "single",
      // What UCX itself sees: read back through the C getenv, not the runtime's copy.
      settings: ucxSettings().map((s) => ({ ...s, value: u.cString(u.getenv(s.name)) ?? s.value })),
    },
    runtime: { name: runtime, version: runtimeVersion(), ffi: backend().name, platform: platform() },
    transports: listTransportResources(),
    memoryTypes,
    cuda: cudaInfo(),
  };
}

function cudaInfo(): CudaInfo {
  const cuda = cudaRuntime();
  if (!cuda) return { available: false, reason: cudaLoadFailure() ?? "libcudart not found on the loader path" };
  const out = new OutSlots(3);
  cuda.cudaRuntimeGetVersion(out.address(0));
  cuda.cudaDriverGetVersion(out.address(1));
  const status = cuda.cudaGetDeviceCount(out.address(2));
  const base = { library: cuda.path, runtimeVersion: out.i32(0), driverVersion: out.i32(1) };
  if (status !== 0) {
    return { ...base, available: false, deviceCount: 0, reason: ucx().cString(cuda.cudaGetErrorString(status)) ?? `CUDA error ${status}` };
  }
  return { ...base, available: out.i32(2) > 0, deviceCount: out.i32(2) };
}

/** The report as text, grouped like `ucx_info -d` (memory domain, then transport/device). */
export function formatInfo(r: InfoReport): string {
  const lines: string[] = [];
  lines.push(`UCX ${r.ucx.text} (API ${r.ucx.major}.${r.ucx.minor}, max thread level ${r.ucx.maxThreadLevel})`);
  for (const [name, path] of Object.entries(r.ucx.libraries)) lines.push(`  lib${name}: ${path}`);
  for (const s of r.ucx.settings) lines.push(`  ${s.name}=${s.value} (${s.source === "user" ? "set by the user" : `ucx-ts default: ${s.why}`})`);
  lines.push(`Runtime: ${r.runtime.name} ${r.runtime.version} on ${r.runtime.platform}, FFI: ${r.runtime.ffi}`);
  lines.push(`Memory types: ${r.memoryTypes.join(", ")}`);
  const cuda = r.cuda;
  lines.push(
    cuda.available
      ? `CUDA: ${cuda.deviceCount} device(s), runtime ${cuda.runtimeVersion}, driver ${cuda.driverVersion} (${cuda.library})`
      : `CUDA: not available (${cuda.reason})`,
  );
  lines.push("Transports:");
  const width = Math.max(...r.transports.map((t) => `${t.transport}/${t.device}`.length), 10);
  let md = "";
  for (const t of r.transports) {
    if (t.memoryDomain !== md) {
      md = t.memoryDomain;
      lines.push(`  memory domain ${md} (component ${t.component})`);
    }
    lines.push(`    ${`${t.transport}/${t.device}`.padEnd(width)}  ${t.deviceType}`);
  }
  return lines.join("\n");
}

/** Transports an endpoint to another worker on this host gets, per error-handling mode. */
export interface EndpointTransports {
  readonly peer: readonly string[];
  readonly none: readonly string[];
}

/**
 * Connect two workers of this process through a listener on 127.0.0.1, once with each error
 * handling mode, and report what `ucp_ep_print_info` says each endpoint uses. Within one
 * process UCX may add transports two processes would not get, but the split between the modes
 * (tcp for `peer`, shared memory for `none` on UCX 1.13) is the same.
 */
export async function probeEndpointTransports(): Promise<EndpointTransports> {
  const { Worker } = await import("./worker.ts");
  const server = await Worker.create({ progressMode: "polling" });
  const client = await Worker.create({ progressMode: "polling" });
  const both = async <T>(p: Promise<T>): Promise<T> => {
    let done = false;
    const settled = p.finally(() => (done = true));
    settled.catch(() => {});
    const deadline = Date.now() + 10_000;
    while (!done) {
      if (Date.now() > deadline) throw new Error("endpoint probe did not finish in 10 s");
      server.progress();
      client.progress();
      await new Promise((r) => setTimeout(r, 0));
    }
    return settled;
  };
  try {
    const result: Record<string, string[]> = {};
    for (const mode of ["peer", "none"] as const) {
      // Both sides must use the same mode: UCX refuses an asymmetric endpoint pair.
      const listener = await both(server.listen({ port: 0, host: "127.0.0.1", errorHandling: mode }));
      const ep = await both(client.connect({ host: "127.0.0.1", port: listener.port }, { errorHandling: mode }));
      result[mode] = await both(ep.transports());
      await both(ep.close());
      await both(listener.close());
    }
    return { peer: result.peer!, none: result.none! };
  } finally {
    await both(Promise.all([server.close(), client.close()]));
  }
}
