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
