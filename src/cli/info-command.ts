/** `ucx-ts info [--json]`: what UCX this process would use, and what it can reach. */
import { collectInfo, formatInfo } from "../core/info.ts";

export const infoHelp = `Usage: ucx-ts info [--json]

Print the UCX library in use, the JavaScript runtime and FFI backend, the transports and
devices UCX sees on this host (like \`ucx_info -d\`), the memory types a UCX context supports,
and whether a CUDA runtime is present.

Options:
  --json    print the same report as JSON

Examples:
  npx ucx-ts info
  npx ucx-ts info --json | jq '.transports[].transport'
  UCX_TS_LIBDIR=/opt/ucx/lib npx ucx-ts info`;

export function infoCommand(args: readonly string[], write: (text: string) => void): number {
  const json = args.includes("--json");
  const unknown = args.filter((a) => a !== "--json");
  if (unknown.length > 0) throw new UsageError(`info: unknown argument '${unknown[0]}'`);
  const report = collectInfo();
  write(json ? JSON.stringify(report, null, 2) : formatInfo(report));
  return 0;
}

/** A mistake in how the command was called; exits with status 2. */
export class UsageError extends Error {
  override name = "UsageError";
}
