/**
 * Memory handles of the engine's own for sends and receives that may go by rendezvous
 * (engine/request-handles.ts). UCX >= 1.16 without a registration cache needs them: a failed
 * rendezvous to a dead peer crashed the process without (docs/upstream-reports.md 4b). They are
 * forced on here (UCX_TS_REQUEST_HANDLES=1) so that the path runs on every UCX: every byte of
 * every kind of transfer arrives, every handle is unmapped once its request ends (also those of
 * requests abandoned at close), and a peer killed with rendezvous in flight leaves a survivor
 * that carries on. Against UCX 1.16 the last test is the crash's own reproduction
 * (docs/testing.md, "Against another UCX").
 */
import process from "node:process";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { UcxError, Worker } from "../../src/index.ts";
import { echoThroughNewPeer, startPeer } from "../helpers/peer-process.ts";
import { drive, MODES, pair, pattern, samePattern } from "../helpers/workers.ts";

const MiB = 1 << 20;

for (const mode of MODES) {
  const test = suite(`core/request-handles (${mode})`);
  // Read when each worker is made (and by the peers, which inherit it); every test file runs in
  // one process, so only while these tests run.
  test.before(() => {
    process.env.UCX_TS_REQUEST_HANDLES = "1";
  });
  test.after(() => {
    delete process.env.UCX_TS_REQUEST_HANDLES;
  });

  test("tag, many, multi-buffer and active messages of 0 B .. 8 MiB arrive intact with handles of their own, all unmapped after", async () => {
    const p = await pair(mode, { errorHandling: "peer" });
    // Polling and blocking modes run the executor on this thread: its handles can be counted.
    const sender = p.a.requestHandles();
    const receiver = p.b.requestHandles();
    try {
      for (const [k, size] of [0, 4095, 4096, 64 << 10, MiB, 8 * MiB].entries()) {
        const back = new Uint8Array(size);
        const [r] = await p.run(Promise.all([p.b.recv(back, 10 + k), p.ab.send(pattern(size, k), 10 + k)]));
        assert.is(r.length, size);
        assert.ok(samePattern(back, k), `tag message of ${size} bytes`);
      }
      if (sender && receiver) {
        assert.ok(sender.mapped >= 2, `the 1 and 8 MiB sends had handles (${sender.mapped})`);
        assert.ok(receiver.mapped >= 2, `the 1 and 8 MiB receives had handles (${receiver.mapped})`);
      }
      const window = [pattern(MiB, 1), pattern(8192, 2), pattern(100, 3), pattern(2 * MiB, 4)];
      const backs = window.map((b) => new Uint8Array(b.length));
      await p.run(Promise.all([p.b.recvMany(backs, 50), p.ab.sendMany(window, 50)]));
      backs.forEach((b, i) => assert.ok(samePattern(b, i + 1), `sendMany message ${i}`));
      const [frames] = await p.run(Promise.all([p.b.recvMulti(60), p.ab.sendMulti(window, 60)]));
      assert.is(frames.length, window.length);
      frames.forEach((f, i) => assert.ok(f.length === window[i]!.length && samePattern(f, i + 1), `multi-buffer frame ${i}`));
      const [m] = await p.run(Promise.all([p.b.amRecv(), p.ab.amSend(pattern(3 * MiB, 5))]));
      assert.ok(m.data.length === 3 * MiB && samePattern(m.data, 5), "3 MiB active message");
      m.release();
      const [ms] = await p.run(Promise.all([p.b.amRecvMany(window.length), p.ab.amSendMany(window)]));
      ms.forEach((one, i) => assert.ok(one.data.length === window[i]!.length && samePattern(one.data, i + 1), `amSendMany message ${i}`));
      await p.run(p.ab.flush());
      if (sender && receiver) {
        assert.is(sender.live, 0, "every send's handle unmapped");
        assert.is(receiver.live, 0, "every receive's handle unmapped");
      }
    } finally {
      await p.close();
    }
  });

  test("a large receive still waiting at close is cancelled and its handle unmapped with the worker", async () => {
    const w = await Worker.create({ progressMode: mode });
    const handles = w.requestHandles();
    const pending = w.recv(new Uint8Array(2 * MiB), 77).then(
      () => null,
      (e: unknown) => e,
    );
    await drive([w], new Promise((r) => setTimeout(r, 50)));
    if (handles) assert.is(handles.live, 1, "the waiting receive holds one");
    await drive([w], w.close());
    const error = (await pending) as UcxError;
    assert.instance(error, UcxError);
    assert.is(error.code, "UCS_ERR_CANCELED");
    if (handles) assert.is(handles.live, 0, "unmapped after the worker was destroyed");
  });

  test("a peer killed with rendezvous sends in flight (tag, AM, windows) fails them; the survivor carries on", async () => {
    // The peer accepts, progresses one second more, then never again: every rendezvous sent
    // after that stays in flight (unread on its socket) until it dies.
    const peer = await startPeer("polling", "peer", "silent");
    const w = await Worker.create({ progressMode: mode }); // default error handling: peer
    const handles = w.requestHandles();
    const run = <T>(q: Promise<T>, ms = 60_000) => drive([w], q, ms);
    try {
      const ep = await run(w.connect({ host: "127.0.0.1", port: peer.port }));
      await run(new Promise((r) => setTimeout(r, 1500)));
      const settle = (q: Promise<unknown>) => q.then(() => null, (e: unknown) => e);
      const pending = [
        ...Array.from({ length: 4 }, (_, i) => settle(ep.send(pattern(4 * MiB, i), 100 + i))),
        settle(ep.amSend(pattern(4 * MiB, 9))),
        settle(ep.amSendMany([pattern(2 * MiB, 10), pattern(2 * MiB, 11)])),
        settle(ep.sendMany([pattern(2 * MiB, 12), pattern(2 * MiB, 13)], 200)),
      ];
      await run(new Promise((r) => setTimeout(r, 300)));
      if (handles) assert.ok(handles.live > 0, "the sends in flight hold handles");
      peer.kill("SIGKILL");
      const results = await run(Promise.all(pending));
      for (const r of results) assert.instance(r, UcxError, String(r));
      await run(ep.close());
      if (handles) assert.is(handles.live, 0, "every failed send's handle unmapped");
      // Alive and well: a new peer, a verified echo of a rendezvous-sized message.
      await echoThroughNewPeer(w, mode, run, MiB);
    } finally {
      peer.kill();
      await run(w.close());
    }
  });

  test.run();
}
