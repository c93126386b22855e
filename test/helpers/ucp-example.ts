/**
 * UCX's own C example `ucp_client_server` (shipped by libucx-dev), compiled once per test run
 * into a temporary folder, as a ready-made C peer. Null, with the reason, when there is no C
 * compiler, no UCX headers or no example source.
 */
import { execFileSync } from "node:child_process";
import { existsSync, mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const SOURCE = "/usr/share/doc/libucx-dev/examples/ucp_client_server.c";
let built: { path: string } | { reason: string } | undefined;

export function ucpClientServer(): { path: string } | { reason: string } {
  if (built) return built;
  if (!existsSync(SOURCE)) return (built = { reason: `${SOURCE} not found (install libucx-dev)` });
  const path = join(mkdtempSync(join(tmpdir(), "ucx-ts-example-")), "ucp_client_server");
  try {
    execFileSync("cc", ["-O1", "-o", path, SOURCE, "-lucp", "-lucs"], { stdio: "pipe" });
    built = { path };
  } catch (e) {
    built = { reason: `cannot compile ${SOURCE}: ${(e as Error).message.split("\n")[0]}` };
  }
  return built;
}
