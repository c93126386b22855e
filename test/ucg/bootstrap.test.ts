/**
 * The bootstrap's secret (src/ucg/bootstrap-secret.ts): where it comes from, and that rank 0's
 * listener refuses a process without it while the job's own ranks still join. Workers in this
 * process (polling, driven), no launcher.
 */
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { UcxError, Worker } from "../../src/index.ts";
import { bootstrap } from "../../src/ucg/bootstrap.ts";
import { bootstrapAuth, jobSecretEnv } from "../../src/ucg/bootstrap-secret.ts";
import { Channel } from "../../src/ucg/channel.ts";
import type { Rte } from "../../src/ucg/rte.ts";
import { freePort } from "../../src/ucg/launcher.ts";
import { drive, ucxRejection } from "../helpers/workers.ts";

const test = suite("ucg/bootstrap");
const SECRET = "0123456789abcdef0123456789abcdef";

test("the secret comes from the option, then UCX_TS_BOOTSTRAP_SECRET_FILE (owner-only), then UCX_TS_BOOTSTRAP_SECRET; ucx-ts run makes one per job", () => {
  const dir = mkdtempSync(join(tmpdir(), "ucx-ts-secret-"));
  try {
    const file = join(dir, "secret");
    writeFileSync(file, "fedcba9876543210fedcba9876543210\n");
    chmodSync(file, 0o600);
    const env = { UCX_TS_BOOTSTRAP_SECRET_FILE: file, UCX_TS_BOOTSTRAP_SECRET: SECRET };
    assert.equal(bootstrapAuth(env, { secret: "given" }), { secret: "given" });
    assert.is(new TextDecoder().decode(bootstrapAuth(env)!.secret as Uint8Array), "fedcba9876543210fedcba9876543210");
    assert.equal(bootstrapAuth({ UCX_TS_BOOTSTRAP_SECRET: SECRET }), { secret: SECRET });
    assert.is(bootstrapAuth({}), undefined);
    chmodSync(file, 0o644);
    let error: unknown;
    try {
      bootstrapAuth(env);
    } catch (e) {
      error = e;
    }
    assert.instance(error, UcxError);
    assert.is((error as UcxError).code, "UCX_TS_INVALID_ARGUMENT");
    assert.match((error as UcxError).message, /accessible to other users \(mode 644\)/);

    const one = jobSecretEnv({}).UCX_TS_BOOTSTRAP_SECRET!;
    assert.match(one, /^[0-9a-f]{64}$/);
    assert.is.not(jobSecretEnv({}).UCX_TS_BOOTSTRAP_SECRET, one, "a fresh secret per job");
    assert.equal(jobSecretEnv({ UCX_TS_BOOTSTRAP_SECRET: SECRET }), {});
    assert.equal(jobSecretEnv({ UCX_TS_BOOTSTRAP_SECRET_FILE: file }), {});
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("with a secret, rank 0 refuses processes without it or with another (UCX_TS_AUTH_FAILED at once, no retries) and the job's rank still joins", async () => {
  const [a, b, intruder] = await Promise.all([0, 1, 2].map(() => Worker.create({ progressMode: "polling", errorHandling: "peer" })));
  const run = <T>(p: Promise<T>) => drive([a!, b!, intruder!], p, 30_000);
  try {
    const port = await freePort();
    const rte = (rank: number): Rte => ({ rank, size: 2, root: { host: "127.0.0.1", port }, launcher: "ucx-ts" });
    const options = { timeoutMs: 20_000, host: "here", auth: { secret: SECRET } };
    const root = bootstrap(a!, new Channel(a!, 0), rte(0), options);
    root.catch(() => {});
    for (const auth of [undefined, { secret: "another secret, 32 bytes long..." }]) {
      const started = Date.now();
      const e = await run(ucxRejection(bootstrap(intruder!, new Channel(intruder!, 1), rte(1), { ...options, auth })));
      assert.is(e.code, "UCX_TS_AUTH_FAILED", e.message);
      assert.ok(Date.now() - started < 10_000, "refused at once, not after the bootstrap timeout");
    }
    const [table0, table1] = await run(Promise.all([root, bootstrap(b!, new Channel(b!, 1), rte(1), options)]));
    const bAddress = await run(b!.address());
    assert.equal(table0.addresses[1], bAddress, "rank 0's table holds the job's rank 1, not an intruder");
    assert.equal(table1.hosts, ["here", "here"]);
  } finally {
    await run(Promise.all([a!.close(), b!.close(), intruder!.close()]));
  }
});

test.run();
