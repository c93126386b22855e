/** UCX's own command-line tools (ucx-utils), used as oracles and baselines in tests. */
import { spawnSync } from "node:child_process";

/** stdout of a UCX tool, or null when the tool is not installed. */
export function ucxTool(cmd: string, args: readonly string[]): string | null {
  const r = spawnSync(cmd, args, { encoding: "utf8", timeout: 60_000 });
  if (r.error || r.status !== 0) return null;
  return r.stdout;
}

/** The `transport/device` pairs `ucx_info -d` lists, sorted. */
export function ucxInfoTransports(text: string): string[] {
  const pairs: string[] = [];
  let transport = "";
  for (const line of text.split("\n")) {
    const t = /^#\s+Transport:\s+(\S+)/.exec(line);
    if (t) transport = t[1]!;
    const d = /^#\s+Device:\s+(\S+)/.exec(line);
    if (d) pairs.push(`${transport}/${d[1]}`);
  }
  return pairs.sort();
}

/** Is ucx_perftest (ucx-utils) installed? */
export function hasPerftest(): boolean {
  return !spawnSync("ucx_perftest", ["-h"]).error;
}

/** Each `ucx_info -d` transport block's lines, by `transport/device`. */
export function ucxInfoTransportBlocks(text: string): Map<string, string[]> {
  const blocks = new Map<string, string[]>();
  let transport = "";
  let current: string[] | undefined;
  for (const line of text.split("\n")) {
    const t = /^#\s+Transport:\s+(\S+)/.exec(line);
    if (t) transport = t[1]!;
    const d = /^#\s+Device:\s+(\S+)/.exec(line);
    if (d) blocks.set(`${transport}/${d[1]}`, (current = []));
    else if (/^#\s+Memory domain:/.test(line)) current = undefined;
    else current?.push(line.replace(/^#\s*/, "").trim());
  }
  return blocks;
}
