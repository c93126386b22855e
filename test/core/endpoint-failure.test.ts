/**
 * An endpoint whose peer went away, in one process: everything the peer sent before it left can
 * still be received (tag, multi-buffer, active messages), receives pending at the failure get it
 * too, and only a receive nothing can satisfy rejects with the endpoint's error, within a second.
 * Endpoints are made through the public listen / connect({host, port}) / accept API.
 */
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { Worker, UcxError, type Endpoint, type ProgressMode } from "../../src/index.ts";
import { drive, pattern, rejection, samePattern } from "../helpers/workers.ts";
import { startPeer } from "../helpers/peer-process.ts";

const FAILURE_CODES = ["UCS_ERR_CONNECTION_RESET", "UCS_ERR_ENDPOINT_TIMEOUT", "UCS_ERR_NOT_CONNECTED"];

interface Connected {
  server: Endpoint;
  client: Endpoint;
  run<T>(p: Promise<T>, timeoutMs?: number): Promise<T>;
  /** Resolves once UCX reported `server` failed. */
  failed(): Promise<UcxError>;
  close(): Promise<void>;
}

async function connected(mode: ProgressMode): Promise<Connected> {
  const a = await Worker.create({ progressMode: mode });
  const b = await Worker.create({ progressMode: mode });
  const run = <T>(p: Promise<T>, timeoutMs?: number) => drive([a, b], p, timeoutMs);
  const listener = await run(a.listen({ host: "127.0.0.1", port: 0 }));
  const [server, client] = await run(Promise.all([listener.accept(), b.connect({ host: "127.0.0.1", port: listener.port })]));
  await run(listener.close());
  const failed = async () => {
    // A worker with nothing outstanding does not deliver events in thread mode (the endpoint's
    // error waits in the completion ring): a receive of a tag nobody sends keeps it delivering.
    const idle = new AbortController();
    const keepAwake = a.recv(new Uint8Array(1), 0xdead, undefined, { signal: idle.signal }).catch(() => {});
    try {
      for (let i = 0; !server.error; i++) {
        if (i > 1000) throw new Error("the server endpoint was not reported failed within 10 s");
        await run(new Promise((r) => setTimeout(r, 10)));
      }
    } finally {
      idle.abort();
      await run(keepAwake);
    }
    return server.error;
  };
  return { server, client, run, failed, close: () => run(Promise.all([a.close(), b.close()])).then(() => {}) };
}

/** Assert `p` rejects with the endpoint's failure, within `withinMs`. */
async function rejectsWithFailure(c: Connected, p: Promise<unknown>, what: string, withinMs = 1000): Promise<void> {
  const t0 = Date.now();
  try {
    await c.run(p);
    assert.unreachable(`${what} resolved`);
  } catch (e) {
    assert.instance(e, UcxError, `${what}: ${e}`);
    assert.ok(FAILURE_CODES.includes((e as UcxError).code), `${what}: ${(e as UcxError).code} ${(e as Error).message}`);
  }
  const took = Date.now() - t0;
  assert.ok(took < withinMs, `${what} took ${took} ms to reject`);
}

for (const mode of ["thread", "polling"] as const) {
  const test = suite(`core/endpoint failure (${mode})`);

  test("a tag message sent just before the peer's forced close is received after the failure", async () => {
    const c = await connected(mode);
    try {
      await c.run(c.client.send(new TextEncoder().encode("last words"), 7));
      await c.run(c.client.close({ force: true }));
      await c.failed();
      await c.run(new Promise((r) => setTimeout(r, 300))); // past the drain: receives only take what is queued
      const into = new Uint8Array(64);
      const r = await c.run(c.server.recv(into, 7));
      assert.is(new TextDecoder().decode(into.subarray(0, r.length)), "last words");
      await rejectsWithFailure(c, c.server.recv(into, 7), "a second receive");
      await c.run(c.server.close()); // the peer left: the close reaches its goal
      assert.ok(c.server.closed);
    } finally {
      await c.close();
    }
  });

  for (const force of [false, true]) {
    test(`${force ? "flush and forced close" : "close"} after 60 messages: receives posted afterwards get all of them, in order`, async () => {
      const c = await connected(mode);
      try {
        const n = 60;
        const sizes = Array.from({ length: n }, (_, i) => [1, 100, 4096, 7000][i % 4]!);
        await c.run(Promise.all(sizes.map((size, i) => c.client.send(pattern(size, i), 1000 + (i % 3)))));
        // A forced close drops what UCX has not sent yet (sends resolve once their bytes are
        // copied): a sender that wants them delivered flushes first.
        if (force) await c.run(c.client.flush());
        await c.run(c.client.close({ force }));
        await c.failed();
        for (const [i, size] of sizes.entries()) {
          const into = new Uint8Array(8192);
          const r = await c.run(c.server.recv(into, 1000 + (i % 3)));
          assert.is(r.length, size, `message ${i}`);
          assert.ok(samePattern(into.subarray(0, size), i), `content of message ${i}`);
        }
        await rejectsWithFailure(c, c.server.recv(new Uint8Array(8), 1000), "a receive past the last message");
      } finally {
        await c.close();
      }
    });
  }

  test("receives pending when the peer leaves get what it sent; the one left over rejects within a second", async () => {
    const c = await connected(mode);
    try {
      const intos = [0, 1, 2].map(() => new Uint8Array(16));
      const pending = intos.map((into) => c.server.recv(into, 3));
      const extra = c.server.recv(new Uint8Array(16), 3);
      extra.catch(() => {}); // awaited below; it may reject before the test gets there
      for (let i = 0; i < 3; i++) await c.run(c.client.send(pattern(16, i), 3));
      await c.run(c.client.close());
      const t0 = Date.now();
      await c.run(Promise.all(pending));
      intos.forEach((into, i) => assert.ok(samePattern(into, i), `message ${i}`));
      await c.failed();
      await rejectsWithFailure(c, extra, "the receive nothing can satisfy", 1000 + (Date.now() - t0));
    } finally {
      await c.close();
    }
  });

  for (const frames of [1, 100, 101]) {
    test(`a multi-buffer batch of ${frames} frames sent before the peer left is received after the failure`, async () => {
      const c = await connected(mode);
      try {
        const batch = Array.from({ length: frames }, (_, i) => pattern(1 + ((i * 37) % 300), i));
        await c.run(c.client.sendMulti(batch, 11));
        await c.run(c.client.close());
        await c.failed();
        await c.run(new Promise((r) => setTimeout(r, 300)));
        const got = await c.run(c.server.recvMulti(11));
        assert.is(got.length, frames);
        got.forEach((f, i) => assert.ok(f.length === batch[i]!.length && samePattern(f, i), `frame ${i}`));
        await rejectsWithFailure(c, c.server.recvMulti(11), "a second recvMulti");
      } finally {
        await c.close();
      }
    });
  }

  test("a recvMulti pending when the peer sends its batch and closes completes", async () => {
    const c = await connected(mode);
    try {
      const batch = Array.from({ length: 5 }, (_, i) => pattern(1000, i));
      const pending = c.server.recvMulti(12);
      await c.run(c.client.sendMulti(batch, 12));
      await c.run(c.client.close());
      const got = await c.run(pending);
      got.forEach((f, i) => assert.ok(samePattern(f, i), `frame ${i}`));
    } finally {
      await c.close();
    }
  });

  test("active messages queued before the failure are delivered in order, then the endpoint's error", async () => {
    const c = await connected(mode);
    try {
      for (let i = 0; i < 3; i++) await c.run(c.client.amSend(pattern(50 + i, i), { header: new Uint8Array([i]) }));
      await c.run(c.client.close());
      await c.failed();
      await c.run(new Promise((r) => setTimeout(r, 300)));
      // A window asking for more than came rejects with the failure and gives its messages back.
      await rejectsWithFailure(c, c.server.amRecvMany(4), "amRecvMany past the last message");
      const [m0] = await c.run(c.server.amRecvMany(1));
      for (let i = 0; i < 3; i++) {
        const m = i === 0 ? m0! : await c.run(c.server.amRecv());
        assert.is(m.header[0], i, `message ${i} in order`);
        assert.ok(m.data.length === 50 + i && samePattern(m.data, i), `content of message ${i}`);
      }
      await rejectsWithFailure(c, c.server.amRecv(), "amRecv past the last message");
      await rejectsWithFailure(c, c.server.amRecvMany(2), "amRecvMany past the last message");
    } finally {
      await c.close();
    }
  });

  test("both sides closing at once both resolve (a close that meets the peer's disconnect has reached its goal)", async () => {
    // The README's example closes both ends right after one exchange; UCX may answer the later
    // close with UCS_ERR_NOT_CONNECTED (the lanes already went with the peer's close): not an error.
    for (let round = 0; round < 4; round++) {
      const c = await connected(mode);
      try {
        const into = new Uint8Array(16);
        const received = c.server.recv(into, 3);
        await c.run(c.client.send(pattern(16, round), 3));
        await c.run(received);
        await c.run(c.server.send(into, 4));
        await c.run(Promise.all([c.server.close(), c.client.close()]));
        assert.ok(c.server.closed && c.client.closed, `round ${round}: both closed`);
      } finally {
        await c.close();
      }
    }
  });

  test("a forced close lets an 8 MiB send already under way finish first, and the peer gets it whole (endpoint-quiesce.ts)", async () => {
    const c = await connected(mode);
    try {
      const size = 8 << 20;
      const into = new Uint8Array(size);
      const received = c.server.recv(into, 9);
      const sent = c.client.send(pattern(size, 5), 9);
      // Without the quiesce UCX cancels the send (UCS_ERR_CANCELED) and cuts it short on the wire.
      await c.run(c.client.close({ force: true }));
      await c.run(sent);
      const r = await c.run(received);
      assert.is(r.length, size);
      assert.ok(samePattern(into, 5), "the message arrived intact");
    } finally {
      await c.close();
    }
  });

  test("an amRecv (and an amRecvMany) pending at the failure with nothing to come rejects within a second", async () => {
    const c = await connected(mode);
    try {
      const pending = c.server.amRecv();
      const pendingMany = c.server.amRecvMany(3);
      await c.run(c.client.close({ force: true }));
      await rejectsWithFailure(c, pending, "the pending amRecv", 11_000); // the failure itself takes its time
      await rejectsWithFailure(c, pendingMany, "the pending amRecvMany");
      assert.ok(c.server.error, "the endpoint reports its error");
    } finally {
      await c.close();
    }
  });

  test("close() reports sends that had resolved and then failed in UCX (UCX_TS_DATA_LOST), not those a forced close gave up", async () => {
    const c = await connected(mode);
    try {
      // What the send path tells the endpoint when an early-resolved send ends in UCX (send-path.ts):
      // a failure, then the cancel its failure's close made of another.
      c.client.failAfterSend(-25);
      c.client.failAfterSend(-16);
      assert.is(c.client.error?.code, "UCS_ERR_CONNECTION_RESET");
      const e = (await c.run(c.client.close()).then(() => undefined, (x: unknown) => x)) as UcxError;
      assert.instance(e, UcxError, "close must report the lost sends");
      assert.is(e.code, "UCX_TS_DATA_LOST");
      assert.match(e.message, /^2 send\(s\) on endpoint 127\.0\.0\.1:\d+ had resolved but never reached the peer/);
      assert.is(e.cause, c.client.error);
      // The peer's side: a forced close cancels what is still queued, knowingly.
      const closing = c.server.close({ force: true });
      c.server.failAfterSend(-16);
      await c.run(closing);
      assert.ok(c.server.closed);
    } finally {
      await c.close();
    }
  });

  test("sends and flush on a failed endpoint reject; a stream receive rejects with the endpoint's error", async () => {
    const c = await connected(mode);
    try {
      await c.run(c.client.close({ force: true }));
      const error = await c.failed();
      assert.is(await rejection(() => c.server.send(new Uint8Array(4), 1)), error);
      assert.is(await rejection(() => c.server.flush()), error);
      await rejectsWithFailure(c, c.server.streamRecv(new Uint8Array(4)), "streamRecv");
      await c.run(c.server.close());
    } finally {
      await c.close();
    }
  });

  test.run();
}

for (const mode of ["thread", "polling"] as const) {
  const test = suite(`core/endpoint failure, two processes (${mode})`);

  test("a peer process sends tag messages, batches of 1, 100 and 101 frames and active messages, closes and exits: all arrive afterwards", async () => {
    const peer = await startPeer(mode, "peer", "farewell");
    const w = await Worker.create({ progressMode: mode });
    const run = <T>(p: Promise<T>, timeoutMs = 60_000) => drive([w], p, timeoutMs);
    try {
      const ep = await run(w.connect({ host: "127.0.0.1", port: peer.port }));
      assert.is(await run(peer.exited), 0, peer.stderr());
      // Everything is posted only now that the sender is gone.
      const sizes = [1, 100, 4096, 7000];
      for (let i = 0; i < 40; i++) {
        const into = new Uint8Array(8192);
        const r = await run(ep.recv(into, 7));
        assert.is(r.length, sizes[i % 4], `message ${i}`);
        assert.ok(samePattern(into.subarray(0, r.length), i), `content of message ${i}`);
      }
      for (const [k, frames] of [1, 100, 101].entries()) {
        const got = await run(ep.recvMulti(8 + k));
        assert.is(got.length, frames);
        got.forEach((f, i) => assert.ok(f.length === 1 + ((i * 37) % 300) && samePattern(f, i), `batch ${k} frame ${i}`));
      }
      for (let i = 0; i < 3; i++) {
        const m = await run(ep.amRecv());
        assert.is(m.header[0], i);
        assert.ok(samePattern(m.data, i) && m.data.length === 50 + i, `active message ${i}`);
      }
      // One more: nothing can satisfy it. It rejects within a second of UCX reporting the failure
      // (which the pending receive lets the worker deliver; how soon UCX notices is UCX's).
      const rest = ep.recv(new Uint8Array(8), 7).then(() => "resolved", (e: UcxError) => e.code);
      while (!ep.error) await run(new Promise((r) => setTimeout(r, 5)));
      const known = Date.now();
      const outcome = await run(rest);
      assert.ok(FAILURE_CODES.includes(outcome), outcome);
      assert.ok(Date.now() - known < 1000, `rejected ${Date.now() - known} ms after the failure was reported`);
      await run(ep.close());
    } finally {
      peer.kill();
      await run(w.close());
    }
  });

  test.run();
}
