/**
 * The multi-node path on one machine: two network namespaces joined by a veth pair stand for
 * two hosts (ffi-facts.md, "Several hosts on one machine"). Ranks 0 and 2 run in one, 1 and 3 in
 * the other (so every collective crosses the link), with UCX_TLS=tcp (namespaces share /dev/shm:
 * without it UCX could take shared memory between them, which real hosts do not have). Rank 0
 * listens on its veth address; the others bootstrap to it exactly as across machines. Needs root
 * and `ip netns`; skipped with the reason otherwise. Namespaces are named after this process and
 * removed at the end.
 */
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { spawnSync } from "node:child_process";
import process from "node:process";
import { launch } from "../../src/ucg/launcher.ts";
import { repoRoot } from "../helpers/spawn.ts";
import { skipWithReason } from "../helpers/skip.ts";

const test = suite("ucg/multinode (network namespaces)");
const id = process.pid % 100000;
const ns = [`ucgA${id}`, `ucgB${id}`];
const veth = [`ucA${id}`, `ucB${id}`];
const subnet = `10.${200 + (id % 50)}.${id % 250}`;
const ips = [`${subnet}.1`, `${subnet}.2`];

function ip(...args: string[]): { ok: boolean; err: string } {
  const r = spawnSync("ip", args, { encoding: "utf8" });
  return { ok: r.status === 0, err: (r.stderr ?? r.error?.message ?? "").trim() };
}

function setUp(): string | undefined {
  if (process.getuid?.() !== 0) return "needs root (ip netns add)";
  const probe = ip("netns", "list");
  if (!probe.ok) return `ip netns is not available: ${probe.err}`;
  const steps: string[][] = [
    ["netns", "add", ns[0]!],
    ["netns", "add", ns[1]!],
    ["link", "add", veth[0]!, "type", "veth", "peer", "name", veth[1]!],
    ["link", "set", veth[0]!, "netns", ns[0]!],
    ["link", "set", veth[1]!, "netns", ns[1]!],
    ...[0, 1].flatMap((i) => [
      ["-n", ns[i]!, "addr", "add", `${ips[i]}/24`, "dev", veth[i]!],
      ["-n", ns[i]!, "link", "set", veth[i]!, "up"],
      ["-n", ns[i]!, "link", "set", "lo", "up"],
    ]),
  ];
  for (const s of steps) {
    const r = ip(...s);
    if (!r.ok) return `ip ${s.join(" ")} failed: ${r.err}`;
  }
  return undefined;
}

function tearDown(): void {
  ip("netns", "del", ns[0]!);
  ip("netns", "del", ns[1]!);
}

const why = setUp();
if (why) {
  tearDown();
  skipWithReason(test, "four ranks on two namespace hosts run collectives over tcp between them", why);
} else {
  test("four ranks on two namespace hosts bootstrap through rank 0's veth address and run collectives over tcp between them", async () => {
    try {
      const lines: string[][] = [[], [], [], []];
      const r = await launch({
        n: 4,
        script: "test/helpers/ucg-rank.ts",
        cwd: repoRoot,
        rootHost: ips[0],
        env: { UCX_TS_UCG_TEST: "multinode", UCX_TLS: "tcp" },
        // Sleeping waits, as the other process tests (4 ranks on this host's cores would poll).
        progress: "blocking",
        rankEnv: (rank) => ({ UCX_TS_HOSTNAME: `host${rank % 2}` }),
        rankCommand: (rank, command) => ["ip", "netns", "exec", ns[rank % 2]!, ...command],
        timeoutMs: 90_000,
        onLine: (rank, _s, line) => lines[rank]!.push(line),
      });
      const report = lines.map((l, i) => `rank ${i}: ${l.slice(-10).join(" | ")}`).join("\n");
      assert.is(r.code, 0, report);
      for (const l of lines) assert.ok(/^UCG_OK \d+$/.test(l.at(-1) ?? ""), report);
      // Across the namespaces the lanes run on the veth device.
      assert.ok(lines[0]!.some((l) => l.startsWith("UCG_TRANSPORTS 1 ") && l.includes(veth[0]!)), report);
    } finally {
      tearDown();
    }
  });
}

test.run();
