/** `ucx-ts info [--json]`: what UCX this process would use, and what it can reach. */
import { flag, parseCommandArgs } from "./args.ts";
import { collectInfo, formatInfo, probeEndpointTransports } from "../core/info.ts";
import { listUctTransports } from "../core/uct/index.ts";
import { formatUctTransports, uctJsonReplacer } from "./uct-info.ts";

export const infoHelp = `Usage: ucx-ts info [--json] [--no-endpoints]

Print the UCX library in use, the JavaScript runtime and FFI backend, the transports and
devices UCX sees on this host (like \`ucx_info -d\`), the memory types a UCX context supports,
whether a CUDA runtime is present, the UCT components, memory domains and transports with
their attributes (operations and size limits, atomics, connection modes), and which
transports an endpoint to another worker on this host gets with error handling "peer" and
with "none" (two workers connect over 127.0.0.1).

Options:
  --json           print the same report as JSON
  --no-endpoints   skip the endpoint probe (it opens a listener on 127.0.0.1 for a moment)

Examples:
  npx ucx-ts info
  npx ucx-ts info --json | jq '.transports[].transport'
  UCX_TS_LIBDIR=/opt/ucx/lib npx ucx-ts info`;

export async function infoCommand(args: readonly string[], write: (text: string) => void): Promise<number> {
  const p = parseCommandArgs("info", args, { json: { type: "boolean" }, "no-endpoints": { type: "boolean" } });
  const json = flag(p, "json");
  const probe = !flag(p, "no-endpoints");
  const report = collectInfo();
  const endpointTransports = probe ? await probeEndpointTransports() : undefined;
  const uct = listUctTransports();
  if (json) write(JSON.stringify({ ...report, endpointTransports, uct }, uctJsonReplacer, 2));
  else {
    write(formatInfo(report));
    write(formatUctTransports(uct));
    if (endpointTransports) {
      write("Endpoint transports to a worker on this host:");
      write(`  error handling peer: ${endpointTransports.peer.join(", ")}`);
      write(`  error handling none: ${endpointTransports.none.join(", ")}`);
    }
  }
  return 0;
}

// The other commands import UsageError from here; it lives with the parser now.
export { UsageError } from "./args.ts";
