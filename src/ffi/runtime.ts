/**
 * Which JavaScript runtime we are on, detected once. Everything runtime-specific that the
 * layers above need (environment variables, the platform) is answered here, so that nothing
 * outside `src/ffi/` has to ask `Deno` or `Bun` anything.
 */

export type RuntimeName = "node" | "deno" | "bun";

interface DenoLike {
  version: { deno: string };
  env: { get(name: string): string | undefined };
  build: { os: string; arch: string };
}

const g = globalThis as unknown as {
  Deno?: DenoLike;
  Bun?: { version: string };
  process?: { versions?: Record<string, string>; env?: Record<string, string | undefined>; platform?: string; arch?: string };
};

function detect(): RuntimeName {
  // Bun and Deno both provide a Node-compatible `process`, so test them first.
  if (typeof g.Bun !== "undefined") return "bun";
  if (typeof g.Deno !== "undefined") return "deno";
  if (g.process?.versions?.node) return "node";
  throw new Error("ucx-ts: unsupported JavaScript runtime (need Node >= 20, Deno 2 or Bun 1)");
}

export const runtime: RuntimeName = detect();

/** The runtime's own version string, e.g. `20.20.2` for Node. */
export function runtimeVersion(): string {
  if (runtime === "bun") return g.Bun!.version;
  if (runtime === "deno") return g.Deno!.version.deno;
  return g.process!.versions!.node!;
}

/** Read an environment variable; undefined when unset or when the runtime forbids it. */
export function getEnv(name: string): string | undefined {
  try {
    if (runtime === "deno") return g.Deno!.env.get(name);
    return g.process?.env?.[name];
  } catch {
    // Deno without --allow-env throws; treat as unset rather than crash.
    return undefined;
  }
}

/** `linux-x64` style platform tag. */
export function platform(): string {
  if (runtime === "deno") return `${g.Deno!.build.os}-${g.Deno!.build.arch}`;
  return `${g.process?.platform}-${g.process?.arch}`;
}
