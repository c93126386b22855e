/**
 * The same script under Open MPI's launcher: `mpirun -n 4 <this runtime> script` runs an
 * ordinary allreduce script (test/helpers/ucg-mpirun-allreduce.ts, nothing launcher-specific in
 * it); the rte takes rank and size from OMPI_COMM_WORLD_RANK/SIZE and rank 0's bootstrap address
 * from UCX_TS_ROOT_ADDR (and the bootstrap's secret), passed with `-x` as a user would across hosts. Every rank's result is
 * checked. Open MPI comes from scripts/setup-mpi (Debian's openmpi-bin, installed when missing
 * and this runs as root with apt-get); where it cannot be had the test is skipped with the reason.
 */
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { freePort } from "../../src/ucg/launcher.ts";
import { repoRoot, runArgv, runtimeArgv } from "../helpers/spawn.ts";
import { skipWithReason } from "../helpers/skip.ts";

const test = suite("ucg/mpirun (Open MPI's launcher)");
const NAME = "mpirun -n 4 runs an unchanged allreduce script: every rank finds its rank in Open MPI's variables and gets the sum";
const SCRIPT = "test/helpers/ucg-mpirun-allreduce.ts";

/** undefined when mpirun is (now) there, else why not. */
function mpirunMissing(): string | undefined {
  if (spawnSync("sh", ["-c", "command -v mpirun"]).status === 0) return undefined;
  const setup = spawnSync("sh", ["scripts/setup-mpi"], { cwd: repoRoot, encoding: "utf8" });
  if (setup.status === 0) return undefined;
  return `mpirun is not installed and scripts/setup-mpi could not install it: ${(setup.stderr || setup.error?.message || "").trim()}`;
}

const why = mpirunMissing();
if (why) {
  skipWithReason(test, NAME, why);
} else {
  test(NAME, async () => {
    const n = 4;
    const port = await freePort();
    const r = await runArgv(
      [
        "mpirun", "--allow-run-as-root", "--oversubscribe", "-n", String(n),
        // mpirun's own limit, so that a hung rank ends with the job instead of outliving it.
        "--timeout", "60",
        "-x", `UCX_TS_ROOT_ADDR=127.0.0.1:${port}`,
        // The bootstrap's secret as a user passes one through mpirun (bootstrap-secret.ts).
        "-x", `UCX_TS_BOOTSTRAP_SECRET=${randomBytes(32).toString("hex")}`,
        ...runtimeArgv(SCRIPT),
      ],
      [],
      // Keep the test's own rank variables (if any) out: the ranks must find Open MPI's.
      { env: { UCX_TS_RANK: undefined, UCX_TS_SIZE: undefined, UCX_TS_ROOT_ADDR: undefined }, timeoutMs: 90_000 },
      "mpirun",
    );
    const report = `status ${r.code}\nstdout:\n${r.stdout}\nstderr:\n${r.stderr.split("\n").slice(-60).join("\n")}`;
    assert.is(r.code, 0, report);
    const results = r.stdout.split("\n").filter((l) => l.startsWith("MPIRUN_RESULT ")).map((l) => JSON.parse(l.slice(14)) as { rank: number; size: number; launcher: string; sum: number[] });
    assert.equal(results.map((x) => x.rank).sort(), [0, 1, 2, 3], report);
    // sum over ranks of [rank, 1.5]: [0+1+2+3, 4 x 1.5]
    for (const x of results) assert.equal({ size: x.size, launcher: x.launcher, sum: x.sum }, { size: n, launcher: "openmpi", sum: [6, 6] }, report);
  });
}

test.run();
