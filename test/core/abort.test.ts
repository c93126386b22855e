/**
 * Cancellation and teardown the JavaScript way: an aborted receive rejects with a UcxError named
 * AbortError (code UCS_ERR_CANCELED, the signal's reason as `cause`), the same for every receive;
 * a receive nobody awaits does not crash the process when the worker closes; a rejected
 * receive's stack reaches the caller; a refused connection says so in plain words.
 */
import { suite } from "uvu";
import { freePort } from "../../src/ucg/launcher.ts";
import * as assert from "uvu/assert";
import { UcxError } from "../../src/index.ts";
import { runScript } from "../helpers/spawn.ts";
import { helloEndpoints, pair, rejection } from "../helpers/workers.ts";

function assertAbort(e: unknown, cause: unknown, what: string): void {
  assert.instance(e, UcxError, `${what}: ${e}`);
  const err = e as UcxError;
  assert.is(err.name, "AbortError", what);
  assert.is(err.code, "UCS_ERR_CANCELED", what);
  assert.is(err.status, -16, what);
  if (typeof cause === "string") assert.is((err.cause as Error).name, cause, `${what}: cause ${err.cause}`);
  else assert.is(err.cause, cause, what);
}

for (const mode of ["thread", "polling"] as const) {
  const test = suite(`core/abort (${mode})`);

  test("AbortSignal.timeout: recv, recvMulti, amRecv, amRecvMany and streamRecv reject with AbortError caused by a TimeoutError", async () => {
    const p = await pair(mode);
    try {
      const { ab: ba } = await helloEndpoints(p.b, p.a, p.run); // ep.recv needs a receive of its own
      const cases: [string, Promise<unknown>][] = [
        ["worker.recv", p.b.recv(new Uint8Array(8), 1, undefined, { signal: AbortSignal.timeout(30) })],
        ["ep.recv", ba.recv(new Uint8Array(8), 1, undefined, { signal: AbortSignal.timeout(30) })],
        ["ep.recvMulti", ba.recvMulti(2, { signal: AbortSignal.timeout(30) })],
        ["ep.amRecv", ba.amRecv({ signal: AbortSignal.timeout(30) })],
        ["worker.amRecv", p.b.amRecv({ signal: AbortSignal.timeout(30) })],
        ["ep.amRecvMany", ba.amRecvMany(2, { signal: AbortSignal.timeout(30) })],
        ["worker.amRecvMany", p.b.amRecvMany(2, { signal: AbortSignal.timeout(30) })],
        ["ep.streamRecv", ba.streamRecv(new Uint8Array(8), { signal: AbortSignal.timeout(30) })],
      ];
      const outcomes = cases.map(([what, op]) => [what, rejection(op)] as const); // all handled at once
      for (const [what, outcome] of outcomes) assertAbort(await p.run(outcome), "TimeoutError", what);
    } finally {
      await p.close();
    }
  });

  test("controller.abort(reason): the reason is the cause; an already aborted signal rejects the same way, probe included", async () => {
    const p = await pair(mode);
    try {
      const reason = new Error("user gave up");
      const ac = new AbortController();
      const pending = [p.b.recv(new Uint8Array(8), 5, undefined, { signal: ac.signal }), p.b.recvMulti(6, { signal: ac.signal }), p.b.amRecv({ signal: ac.signal })].map(rejection);
      ac.abort(reason);
      for (const [i, op] of pending.entries()) assertAbort(await p.run(op), reason, `pending ${i}`);
      const before = [p.b.recv(new Uint8Array(8), 5, undefined, { signal: ac.signal }), p.b.recvMulti(6, { signal: ac.signal }), p.b.amRecv({ signal: ac.signal }), p.b.probe(5, undefined, { signal: ac.signal }), p.b.amRecvMany(3, { signal: ac.signal })].map(rejection);
      for (const [i, op] of before.entries()) assertAbort(await p.run(op), reason, `already aborted ${i}`);
      // A message that arrives after an abort goes to the next receive: nothing was taken.
      const into = new Uint8Array(8);
      await p.run(Promise.all([p.b.recv(into, 5), p.ab.send(new Uint8Array([9]), 5)]));
      assert.is(into[0], 9);
    } finally {
      await p.close();
    }
  });

  test("a rejected ep.recv's stack shows the caller's frame", async () => {
    const p = await pair(mode);
    try {
      const { ab } = await helloEndpoints(p.a, p.b, p.run); // ep.recv needs a receive of its own
      async function callerFrameMarker(): Promise<void> {
        await ab.recv(new Uint8Array(8), 1, undefined, { signal: AbortSignal.timeout(20) });
      }
      const e = (await p.run(rejection(callerFrameMarker())) as Error);
      assert.is((e as UcxError).name, "AbortError", String(e)); // not a synchronous refusal
      assert.match(String(e.stack), /callerFrameMarker/);
    } finally {
      await p.close();
    }
  });

  test("worker.close() with receives nobody awaits leaves the process alive (child process)", async () => {
    const r = await runScript("test/helpers/forgotten-receive.ts", [mode], { timeoutMs: 60_000 });
    assert.is(r.code, 0, `exit ${r.code} ${r.signal ?? ""}\n${r.stderr}`);
    assert.match(r.stdout, /alive/);
  });

  test("connecting where nothing listens says so, with the UCS status as code", async () => {
    // Below the ephemeral range (freePort): a port listen(0) picked and let go could be taken by the
    // next listen(0) of a test running beside this one (CI, Bun, 2026-11-27: "reset" instead of
    // "nothing is listening").
    const port = await freePort();
    const p = await pair(mode);
    try {
      const e = (await p.run(rejection(p.a.connect({ host: "127.0.0.1", port }))) as UcxError);
      assert.instance(e, UcxError);
      assert.ok(e.message.startsWith(`nothing is listening on 127.0.0.1:${port}`), e.message);
      assert.is(e.code, "UCS_ERR_NOT_CONNECTED");
      assert.is(e.status, -24);
    } finally {
      await p.close();
    }
  });

  test.run();
}
