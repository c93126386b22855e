/**
 * UCX's own C example `ucp_client_server` (shipped by libucx-dev), compiled once (compiled.ts:
 * one file per source, reused by every test process and run), as a ready-made C peer; or the
 * reason, when there is no C compiler, no UCX headers or no example source.
 */
import { existsSync } from "node:fs";
import { compileOnce } from "./compiled.ts";

const SOURCE = "/usr/share/doc/libucx-dev/examples/ucp_client_server.c";
let built: { path: string } | { reason: string } | undefined;

export function ucpClientServer(): { path: string } | { reason: string } {
  if (built) return built;
  if (!existsSync(SOURCE)) return (built = { reason: `${SOURCE} not found (install libucx-dev)` });
  return (built = compileOnce("ucp_client_server", SOURCE, ["-O1"], ["-lucp", "-lucs"]));
}
