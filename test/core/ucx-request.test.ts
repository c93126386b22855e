/**
 * Requests without Promises (ucx-request.ts: `recvRequest`, `sendRequest`), as UCXX's
 * `Request`: in polling and blocking modes the completion is there the moment a progress call
 * delivers it; in thread and hybrid modes through `promise`. Real transfers between two workers.
 */
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { UcxError, UcxRequest, type Worker } from "../../src/index.ts";
import { helloEndpoints, MODES, pair, pattern, samePattern, type Pair } from "../helpers/workers.ts";

/** Progress `workers` until `r` is done: by hand where the mode allows, else through its Promise. */
async function finish<T>(p: Pair, workers: Worker[], r: UcxRequest<T>): Promise<void> {
  if (workers[0]!.progressMode === "polling" || workers[0]!.progressMode === "blocking") {
    const deadline = Date.now() + 20_000;
    while (!r.done) {
      if (Date.now() > deadline) throw new Error("request not done within 20 s");
      for (const w of workers) w.progress();
    }
    return;
  }
  await p.run(r.promise.then(() => undefined, () => undefined));
}

for (const mode of MODES) {
  const test = suite(`core/ucx-request (${mode})`);
  let p: Pair;
  test.before(async () => {
    p = await pair(mode);
  });
  test.after(async () => {
    await p?.close();
  });

  test("recvRequest and sendRequest move 8 B, 8 KiB and 1 MiB; the result is there once done", async () => {
    for (const [i, size] of [8, 8 << 10, 1 << 20].entries()) {
      const into = new Uint8Array(size);
      const r = p.b.recvRequest(into, 300 + i);
      assert.is(r.done, false);
      assert.throws(() => r.result(), (e: UcxError) => e.code === "UCS_INPROGRESS");
      const s = p.ab.sendRequest(pattern(size, i), 300 + i);
      await finish(p, [p.a, p.b], r);
      await finish(p, [p.a, p.b], s);
      assert.equal(r.result(), { tag: 300 + i, length: size });
      assert.is(r.error, undefined);
      assert.is(s.result(), undefined);
      assert.ok(samePattern(into, i), `content of ${size} bytes`);
    }
  });

  test("a mask gives the sender's tag; a too small buffer fails UCS_ERR_MESSAGE_TRUNCATED with the size", async () => {
    const into = new Uint8Array(8);
    const r = p.b.recvRequest(into, 0xfeed_face_0000_0000n, 0xffff_ffff_0000_0000n);
    p.ab.sendRequest(pattern(8, 1), 0xfeed_face_0000_0042n);
    await finish(p, [p.a, p.b], r);
    assert.equal(r.result(), { tag: 0xfeed_face_0000_0042n, length: 8 });
    const small = p.b.recvRequest(new Uint8Array(4), 311);
    p.ab.sendRequest(pattern(8, 2), 311);
    await finish(p, [p.a, p.b], small);
    assert.is(small.error?.code, "UCS_ERR_MESSAGE_TRUNCATED");
    assert.is(small.error?.incomingLength, 8);
    assert.throws(() => small.result(), (e: UcxError) => e.code === "UCS_ERR_MESSAGE_TRUNCATED");
    const e = await p.run(small.promise.then(() => null, (x: unknown) => x));
    assert.is((e as UcxError).code, "UCS_ERR_MESSAGE_TRUNCATED");
  });

  test("cancel(): a waiting receive fails UCS_ERR_CANCELED and its message goes to the next one", async () => {
    const r = p.b.recvRequest(new Uint8Array(8), 312);
    r.cancel();
    await finish(p, [p.a, p.b], r);
    assert.is(r.error?.code, "UCS_ERR_CANCELED");
    const into = new Uint8Array(8);
    const next = p.b.recvRequest(into, 312);
    p.ab.sendRequest(pattern(8, 3), 312);
    await finish(p, [p.a, p.b], next);
    assert.ok(samePattern(into, 3));
    next.cancel(); // done already: nothing happens
    assert.is(next.error, undefined);
  });

  test("its promise, made before or after completion, resolves with the same result", async () => {
    const into = new Uint8Array(8);
    const r = p.b.recvRequest(into, 313);
    const early = r.promise;
    p.ab.sendRequest(pattern(8, 4), 313);
    const got = await p.run(early);
    assert.equal(got, { tag: 313, length: 8 });
    assert.is(r.done, true);
    assert.equal(await r.promise, got);
  });

  test("in polling and blocking modes it completes inside the progress call, with no Promise", async () => {
    if (mode !== "polling" && mode !== "blocking") return; // the thread's delivery runs on the event loop
    const into = new Uint8Array(8);
    const r = p.b.recvRequest(into, 314);
    const s = p.ab.sendRequest(pattern(8, 5), 314);
    assert.is(s.done, true, "a small send is done in its call (its bytes are copied)");
    let calls = 0;
    while (!r.done && calls < 1_000_000) {
      p.a.progress();
      p.b.progress();
      calls++;
    }
    // No await ran in the loop: only progress() can have completed it.
    assert.is(r.done, true);
    assert.ok(samePattern(into, 5));
  });

  test("more receives than are polled at once (the rest take a callback), a message there before its receive, a send to the worker itself", async () => {
    // direct-tags.ts: up to 4 receives go without a callback and are found done by checking,
    // the others report through their callback; both kinds must complete, in any mix.
    const n = 12;
    const into = Array.from({ length: n }, () => new Uint8Array(8));
    const early = p.ab.sendRequest(pattern(8, 90), 399); // arrives before its receive is posted
    await finish(p, [p.a, p.b], early);
    for (let k = 0; k < 200; k++) p.b.progress();
    const first = p.b.recvRequest(new Uint8Array(8), 399);
    const rs = into.map((b, i) => p.b.recvRequest(b, 400 + i));
    for (let i = n - 1; i >= 0; i--) p.ab.sendRequest(pattern(8, 50 + i), 400 + i);
    for (const r of [first, ...rs]) await finish(p, [p.a, p.b], r);
    assert.equal(first.result(), { tag: 399, length: 8 });
    for (let i = 0; i < n; i++) assert.ok(samePattern(into[i]!, 50 + i), `receive ${i}`);
    // To itself: UCX may complete the receive inside the send call.
    const self = await p.run(p.a.address().then((addr) => p.a.connect(addr)));
    const back = new Uint8Array(8);
    const r = p.a.recvRequest(back, 398);
    self.sendRequest(pattern(8, 7), 398);
    await finish(p, [p.a], r);
    assert.ok(samePattern(back, 7));
    await p.run(self.close());
  });

  test("blocking: wait() comes back once a request receive is done, also one whose message was there before it", async () => {
    if (mode !== "blocking") return;
    const s = p.ab.sendRequest(pattern(8, 8), 397);
    while (!s.done) p.a.progress();
    const into = new Uint8Array(8);
    for (let k = 0; k < 200; k++) p.b.progress(); // the message waits, unexpected, in b's UCX
    const r = p.b.recvRequest(into, 397);
    const t0 = performance.now();
    for (let k = 0; k < 100 && !r.done; k++) p.b.wait(2000);
    assert.is(r.done, true);
    assert.ok(performance.now() - t0 < 1500, `wait() slept ${performance.now() - t0} ms on a receive that was done`);
    assert.ok(samePattern(into, 8));
  });

  test("endpoint receives: scoped to the peer, and failed by the endpoint's close and the worker's", async () => {
    const { ab, ba } = await helloEndpoints(p.a, p.b, p.run);
    const into = new Uint8Array(8);
    const r = ba.recvRequest(into, 7);
    ab.sendRequest(pattern(8, 6), 7);
    await finish(p, [p.a, p.b], r);
    assert.equal(r.result(), { tag: 7, length: 8 });
    const waiting = ba.recvRequest(new Uint8Array(8), 8);
    await p.run(ba.close());
    await finish(p, [p.a, p.b], waiting);
    assert.is(waiting.error?.code, "UCS_ERR_CANCELED", String(waiting.error));
    const after = ba.recvRequest(new Uint8Array(8), 8);
    assert.is(after.error?.code, "UCX_TS_CLOSED");
    await p.run(ab.close());
  });

  test("the worker's close fails a waiting request; a Promise made for it and never awaited does not crash", async () => {
    const q = await pair(mode);
    const waiting = q.b.recvRequest(new Uint8Array(8), 315);
    const unawaited = q.b.recvRequest(new Uint8Array(8), 316);
    void unawaited.promise; // made, never awaited
    await q.close();
    assert.is(waiting.done, true);
    assert.is(waiting.error?.code, "UCS_ERR_CANCELED");
    assert.is(q.b.recvRequest(new Uint8Array(8), 317).error?.code, "UCX_TS_CLOSED");
    assert.is(q.ab.sendRequest(new Uint8Array(8), 317).error?.code, "UCX_TS_CLOSED");
    await new Promise((r) => setTimeout(r, 20)); // an unhandled rejection would end the run here
  });

  test.run();
}
