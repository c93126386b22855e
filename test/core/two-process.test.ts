import { suite } from "uvu";
import * as assert from "uvu/assert";
import { Worker, UcxError } from "../../src/index.ts";
import { echoThroughNewPeer, startPeer } from "../helpers/peer-process.ts";
import { drive, MODES, pattern, rejection, samePattern } from "../helpers/workers.ts";

for (const mode of MODES) {
  const test = suite(`core/two processes (${mode})`);

  test("an echo peer in another process returns every size intact (0 B .. 64 MiB), 200 in flight", async () => {
    const peer = await startPeer(mode, "peer");
    const w = await Worker.create({ progressMode: mode });
    const run = <T>(p: Promise<T>) => drive([w], p, 60_000);
    try {
      const ep = await run(w.connect({ host: "127.0.0.1", port: peer.port }));
      for (const [i, size] of [0, 1, 8 << 10, 1 << 20, 64 << 20].entries()) {
        const back = new Uint8Array(size);
        const [r] = await run(Promise.all([ep.recv(back, 2 * i + 2), ep.send(pattern(size, i), 2 * i + 1)]));
        assert.equal(r, { tag: 2 * i + 2, length: size });
        assert.ok(samePattern(back, i), `echo of ${size} bytes`);
      }
      // Many in flight at once: the peer answers one by one, tags keep them apart.
      const n = 200;
      const backs = Array.from({ length: n }, () => new Uint8Array(512));
      const ops: Promise<unknown>[] = [];
      for (let i = 0; i < n; i++) {
        ops.push(ep.recv(backs[i]!, 10_001 + 2 * i), ep.send(pattern(512, i), 10_000 + 2 * i));
      }
      await run(Promise.all(ops));
      backs.forEach((b, i) => assert.ok(samePattern(b, i), `message ${i}`));
      await run(ep.send(new Uint8Array(0), 0)); // tells the peer to finish
      assert.is(await run(peer.exited), 0);
    } finally {
      peer.kill();
      await run(w.close());
    }
  });

  test("a peer killed mid-transfer rejects the pending Promises with an endpoint error; the survivor connects again", async () => {
    const peer = await startPeer(mode, "peer", "hang");
    const w = await Worker.create({ progressMode: mode }); // default error handling: peer
    const run = <T>(p: Promise<T>, ms = 60_000) => drive([w], p, ms);
    try {
      const ep = await run(w.connect({ host: "127.0.0.1", port: peer.port }));
      let failure: UcxError | undefined;
      ep.onError = (e) => (failure = e);
      // A receive that only this peer could answer, and a stream of large sends.
      const recv = ep.recv(new Uint8Array(16), 999).then(() => null, (e: unknown) => e);
      const sends = Array.from({ length: 8 }, (_, i) => ep.send(pattern(4 << 20, i), 100 + i).then(() => null, (e: unknown) => e));
      await new Promise((r) => setTimeout(r, 200));
      const killedAt = Date.now();
      peer.kill("SIGKILL");
      const recvError = (await run(recv, 30_000)) as UcxError;
      const elapsed = Date.now() - killedAt;
      assert.instance(recvError, UcxError, "the receive must reject");
      assert.match(recvError.code, /^UCS_ERR_/);
      assert.ok(elapsed < 30_000, `rejected after ${elapsed} ms`);
      assert.instance(failure, UcxError);
      assert.is(ep.error, failure);
      const sendResults = await run(Promise.all(sends));
      for (const r of sendResults) assert.ok(r === null || r instanceof UcxError, String(r)); // sent before death, or rejected
      // New sends on the dead endpoint reject at once with the same error (a rejection, never a throw).
      assert.is(await rejection(() => ep.send(new Uint8Array(1), 1)), failure);
      await run(ep.close());

      // The survivor still works: a new peer, a new connection, a verified echo.
      await echoThroughNewPeer(w, mode, run, 1000);
    } finally {
      peer.kill();
      await run(w.close());
    }
  });

  test.run();
}
