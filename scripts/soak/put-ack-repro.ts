/**
 * Runs put-ack-repro.c (the UCX tcp abort `Assertion 'ep->flags & UCT_TCP_EP_FLAG_PUT_TX_WAITING_ACK'
 * failed` that killed a 30-minute soak; docs/upstream-reports.md, 5) against the UCX that ucx-ts
 * would load: UCX_TS_LIBDIR's (headers from UCX_TS_INCLUDEDIR, else its ../include), else the
 * system's. Each mode runs in a fresh process: "put" and "big-send" abort on the first round
 * where UCX has the bug and its assertions are on; "no-put" and "no-rst" are the controls and must
 * run clean. A UCX built without assertions (contrib/configure-release) runs every mode clean:
 * there the bug only decrements a counter twice (the .c file says what it checks instead).
 *
 *   npx tsx scripts/soak/put-ack-repro.ts [rounds per mode, default 5]
 * Exit 0 when the controls ran clean (whatever the two triggers did), 1 when a control failed.
 */
import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import process from "node:process";
import { fileURLToPath } from "node:url";

const rounds = Number(process.argv[2] ?? 5);
if (!Number.isInteger(rounds) || rounds < 1) throw new Error(`rounds: a positive integer, got ${process.argv[2]}`);
const libDir = process.env.UCX_TS_LIBDIR;
const includeDir = process.env.UCX_TS_INCLUDEDIR ?? (libDir ? join(libDir, "..", "include") : "/usr/include");
if (!existsSync(join(includeDir, "ucp/api/ucp.h"))) throw new Error(`no UCX headers under ${includeDir} (set UCX_TS_INCLUDEDIR)`);

const dir = mkdtempSync(join(tmpdir(), "put-ack-repro-"));
try {
  const binary = join(dir, "put-ack-repro");
  const source = join(dirname(fileURLToPath(import.meta.url)), "put-ack-repro.c");
  const link = libDir ? [`-L${libDir}`, `-Wl,-rpath,${libDir}`] : [];
  const cc = spawnSync(process.env.CC ?? "cc", ["-O1", "-g", `-I${includeDir}`, source, "-o", binary, ...link, "-lucp", "-lucs"], { encoding: "utf8" });
  if (cc.status !== 0) throw new Error(`compiling put-ack-repro.c failed:\n${cc.stderr}`);

  let controlsClean = true;
  for (const mode of ["put", "big-send", "no-put", "no-rst"] as const) {
    // UCX_HANDLE_ERRORS=none: abort at once, without UCX's backtrace in the output.
    const run = spawnSync(binary, [String(rounds)], { encoding: "utf8", timeout: 60_000, env: { ...process.env, REPRO_MODE: mode, UCX_HANDLE_ERRORS: "none" } });
    const assertion = /Assertion `ep->flags & UCT_TCP_EP_FLAG_PUT_TX_WAITING_ACK' failed/.test(run.stderr);
    const clean = run.status === 0;
    const outcome = assertion ? "aborted: the PUT_TX_WAITING_ACK assertion" : clean ? `${rounds} rounds clean` : `exit ${run.status ?? run.signal}: ${run.stderr.trim().split("\n").slice(-2).join(" | ")}`;
    console.log(`${mode.padEnd(9)} ${outcome}`);
    if (mode.startsWith("no-") && !clean) controlsClean = false;
  }
  process.exitCode = controlsClean ? 0 : 1;
} finally {
  rmSync(dir, { recursive: true, force: true });
}
