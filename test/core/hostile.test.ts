/**
 * Hostile input (issue 19, "Crash-proof"): bytes and arguments that used to abort, segfault or
 * wedge a process inside UCX, or slip past ucx-ts's checks. Each case runs in a child process
 * (test/helpers/hostile-case.ts) so that a regression fails its test instead of ending the run;
 * each checks the typed error, then a legitimate transfer in the same process; afterwards the
 * directory UCX's posix shared memory went to (a fresh one under /dev/shm per case, through
 * UCX_POSIX_DIR) must be empty.
 *
 * The fuzz cases run UCX_TS_FUZZ_SECONDS each (default 1 s here; `npm run fuzz` runs longer),
 * seeded by UCX_TS_FUZZ_SEED (default 1): a failure prints its seed.
 */
import { mkdirSync, readdirSync, rmSync } from "node:fs";
import { join } from "node:path";
import process from "node:process";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { reportOf, runScript } from "../helpers/spawn.ts";

const CASES = ["zero-stream", "address-fuzz", "rkey-fuzz", "memmap-huge", "detached", "empty-host", "atomic-range", "peer-closes-first"] as const;
const WHAT: Record<(typeof CASES)[number], string> = {
  "zero-stream": "a 0-byte streamSend resolves without reaching the wire, and the stream still carries data",
  "address-fuzz": "random, truncated, extended and bit-flipped worker addresses give typed errors, never an abort",
  "rkey-fuzz": "truncated, corrupted and structurally crafted remote keys give typed errors, never a crash",
  "memmap-huge": "memMap(2^40) with either allocator is UCS_ERR_NO_MEMORY at once, and leaves no shared-memory file",
  detached: "every operation refuses detached (and resizable, where the runtime has them) buffers of every kind with UCX_TS_INVALID_ARGUMENT",
  "empty-host": 'connect({ host: "" }) is UCX_TS_INVALID_ARGUMENT',
  "atomic-range": "atomic operands beyond the word are UCX_TS_INVALID_ARGUMENT; ones that fit still apply",
  "peer-closes-first": "connect/close against peers that close first: failures reach only their endpoint, nothing escapes progress()",
};

/**
 * UCX settings a case needs to be able to fail: the 0-byte stream send aborted the receiver over
 * tcp (measured here); with shared-memory transports in the same process it did not.
 */
const CASE_ENV: Partial<Record<(typeof CASES)[number], Record<string, string>>> = { "zero-stream": { UCX_TLS: "tcp" } };

const seconds = process.env.UCX_TS_FUZZ_SECONDS || "1";
const seed = process.env.UCX_TS_FUZZ_SEED || "1";
const fuzzing = Number(seconds);

for (const mode of ["thread", "polling"]) {
  const test = suite(`core/hostile (${mode})`);
  for (const name of CASES) {
    test(`${WHAT[name]}`, async () => {
      const shmDir = join("/dev/shm", `ucx-ts-hostile-${process.pid}-${name}-${mode}`);
      mkdirSync(shmDir, { recursive: true });
      try {
        const r = await runScript("test/helpers/hostile-case.ts", [name, mode, seed], {
          env: { UCX_POSIX_DIR: shmDir, UCX_TS_FUZZ_SECONDS: seconds, ...CASE_ENV[name] },
          timeoutMs: 90_000 + 2 * fuzzing * 1000,
        });
        const where = `${name} (${mode}, seed ${seed}): exit ${r.code}, signal ${r.signal}\n${r.stderr.slice(-3000)}`;
        assert.is(r.signal, null, where);
        assert.is(r.code, 0, where);
        const report = reportOf(r, `${name} (${mode}, seed ${seed})`);
        assert.is(report.ok, true, where);
        if (name.endsWith("-fuzz")) {
          const outcomes = report.outcomes as Record<string, number>;
          // The checks refused most inputs before UCX: proof that they, not luck, kept the process alive.
          const refusedEarly = (outcomes.UCS_ERR_INVALID_ADDR ?? 0) + (outcomes.refused ?? 0);
          assert.ok(refusedEarly > report.attempts / 2, `${name}: ${JSON.stringify(outcomes)}`);
        }
        assert.equal(readdirSync(shmDir), [], `${name} (${mode}) left shared-memory files in ${shmDir}`);
      } finally {
        rmSync(shmDir, { recursive: true, force: true });
      }
    });
  }
  test.run();
}
