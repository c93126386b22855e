import { suite } from "uvu";
import * as assert from "uvu/assert";
import { UcxError } from "../../src/index.ts";
import { MODES, pair, pattern, samePattern, type Pair } from "../helpers/workers.ts";

for (const mode of MODES) {
  const test = suite(`core/tag (${mode})`);
  let p: Pair;
  test.before(async () => {
    p = await pair(mode);
  });
  test.after(async () => {
    await p?.close();
  });

  test("sizes 0, 1, 8 KiB, 1 MiB and 64 MiB arrive intact with their tag", async () => {
    for (const [i, size] of [0, 1, 8 << 10, 1 << 20, 64 << 20].entries()) {
      const out = pattern(size, i);
      const into = new Uint8Array(size);
      const [r] = await p.run(Promise.all([p.b.recv(into, 100 + i), p.ab.send(out, 100 + i)]));
      assert.equal(r, { tag: 100 + i, length: size });
      assert.ok(samePattern(into, i), `content of ${size} bytes`);
    }
  });

  test("every buffer kind works: DataView, ArrayBuffer, SharedArrayBuffer, Float64Array slice", async () => {
    const shared = new SharedArrayBuffer(64);
    const f64 = new Float64Array([1.5, 2.5, 3.5, 4.5]).subarray(1, 3);
    const into = new ArrayBuffer(64);
    const [r1] = await p.run(Promise.all([p.b.recv(shared, 1), p.ab.send(new DataView(pattern(64, 9).buffer), 1)]));
    assert.is(r1.length, 64);
    assert.ok(samePattern(new Uint8Array(shared), 9));
    const [r2] = await p.run(Promise.all([p.b.recv(into, 2), p.ab.send(f64, 2)]));
    assert.is(r2.length, 16);
    assert.equal(Array.from(new Float64Array(into, 0, 2)), [2.5, 3.5]);
  });

  test("new views of one buffer at other offsets send and receive their own bytes", async () => {
    // Small sizes stay inline or eager; 64 KiB and up go by address (zero copy or rendezvous).
    for (const size of [8, 64 << 10]) {
      const out = new Uint8Array(4 * size);
      for (let k = 0; k < 4; k++) out.set(pattern(size, 40 + k), k * size);
      const into = new Uint8Array(4 * size);
      for (const k of [2, 0, 3, 1]) {
        const r = p.b.recv(into.subarray(k * size, (k + 1) * size), 50 + k);
        await p.run(Promise.all([r, p.ab.send(out.subarray(k * size, (k + 1) * size), 50 + k)]));
      }
      for (let k = 0; k < 4; k++) assert.ok(samePattern(into.subarray(k * size, (k + 1) * size), 40 + k), `${size} B view ${k}`);
      // A Node-style pool: an offset view of a buffer first seen through another view.
      const fresh = new Uint8Array(new Uint8Array(2 * size).buffer, size, size);
      await p.run(Promise.all([p.b.recv(fresh, 60), p.ab.send(out.subarray(size, 2 * size), 60)]));
      assert.ok(samePattern(fresh, 41));
    }
  });

  test("tag masks select by bits, BigInt tags keep all 64 bits, any-source receive", async () => {
    const big = 0xfeedface_12345678n;
    const into = new Uint8Array(8);
    // Match on the high 32 bits only: any low half is accepted, the sender's full tag is reported.
    const recv = p.b.recv(into, 0xfeedface_00000000n, 0xffffffff_00000000n);
    const [r] = await p.run(Promise.all([recv, p.ab.send(pattern(8, 1), big)]));
    assert.is(r.tag, big);
    // A second sender (another endpoint to b) is received by the same worker-wide receive.
    const other = await p.run(p.b.address().then((addr) => p.a.connect(addr)));
    const [r2] = await p.run(Promise.all([p.b.recv(into, 0, 0), other.send(pattern(3, 2), 77)]));
    assert.equal(r2, { tag: 77, length: 3 });
    await p.run(other.close());
  });

  test("messages with different tags are matched by tag, not by arrival order", async () => {
    const x = new Uint8Array(4);
    const y = new Uint8Array(4);
    await p.run(Promise.all([p.ab.send(pattern(4, 1), 11), p.ab.send(pattern(4, 2), 22)]));
    const [ry, rx] = await p.run(Promise.all([p.b.recv(y, 22), p.b.recv(x, 11)]));
    assert.is(ry.tag, 22);
    assert.is(rx.tag, 11);
    assert.ok(samePattern(x, 1) && samePattern(y, 2));
  });

  test("probe sees a waiting message without taking it, and null when there is none", async () => {
    assert.is(await p.run(p.b.probe(555)), null);
    await p.run(p.ab.send(pattern(100, 3), 555));
    let seen = null;
    for (let i = 0; i < 200 && !seen; i++) seen = await p.run(p.b.probe(555));
    assert.equal(seen, { tag: 555, length: 100 });
    const into = new Uint8Array(100);
    assert.equal(await p.run(p.b.recv(into, 555)), { tag: 555, length: 100 });
    assert.ok(samePattern(into, 3));
  });

  test("1,000 concurrent sends each way arrive with the right content", async () => {
    const n = 1000;
    const size = 256;
    const sends: Promise<unknown>[] = [];
    const recvs: Promise<unknown>[] = [];
    const intoB = Array.from({ length: n }, () => new Uint8Array(size));
    const intoA = Array.from({ length: n }, () => new Uint8Array(size));
    const ba = await p.run(p.a.address().then((addr) => p.b.connect(addr)));
    for (let i = 0; i < n; i++) {
      recvs.push(p.b.recv(intoB[i]!, 10_000 + i), p.a.recv(intoA[i]!, 20_000 + i));
      sends.push(p.ab.send(pattern(size, i), 10_000 + i), ba.send(pattern(size, i + 7), 20_000 + i));
    }
    await p.run(Promise.all([...sends, ...recvs]), 60_000);
    for (let i = 0; i < n; i++) {
      assert.ok(samePattern(intoB[i]!, i), `a->b message ${i}`);
      assert.ok(samePattern(intoA[i]!, i + 7), `b->a message ${i}`);
    }
    await p.run(ba.close());
  });

  test("small and zcopy sends go straight to UCX in polling and blocking modes, in order with the ring's sends, their buffer reusable at once", async () => {
    // engine/direct-tags.ts: a send up to the inline capacity, and one of any size whose
    // protocol is zcopy, skips the submission ring where the executor runs on this thread
    // (SendPath.sendDirect); bounce and zcopy-reg sends take the ring. One tag for all: UCX
    // matches in posting order, so any overtaking would show as a wrong content. Hybrid mode
    // takes the direct path while its driver runs, the ring while it is parked.
    const polls = mode === "polling" || mode === "blocking";
    const direct = (p.a as unknown as { directTags(): { posted: { sends: number } } | undefined }).directTags();
    if (mode !== "hybrid") assert.is(direct !== undefined, polls, "direct tag calls where the executor runs on this thread");
    const before = direct?.posted.sends ?? 0;
    const countsBefore = { ...p.a.protocolCounts };
    const sizes = Array.from({ length: 60 }, (_, i) => (i % 6 === 5 ? 2_000 : [0, 1, 8, 64, 180][i % 5]!));
    const into = sizes.map((size) => new Uint8Array(size));
    const recvs = into.map((b) => p.b.recv(b, 77));
    const reused = new Uint8Array(180);
    const sends: Promise<void>[] = [];
    for (const [i, size] of sizes.entries()) {
      if (size > 180) {
        sends.push(p.ab.send(pattern(size, i), 77));
        continue;
      }
      reused.set(pattern(size, i));
      sends.push(p.ab.send(reused.subarray(0, size), 77));
      await p.run(sends[sends.length - 1]!); // resolved: the bytes were taken, so the buffer may change
      reused.fill(0xee);
    }
    const results = await p.run(Promise.all(recvs));
    await p.run(Promise.all(sends));
    for (const [i, size] of sizes.entries()) {
      assert.is(results[i]!.length, size, `message ${i} length`);
      assert.ok(samePattern(into[i]!, i), `message ${i} (${size} B) content, in order`);
    }
    const counts = p.a.protocolCounts;
    const small = sizes.filter((s) => s <= 180).length;
    const zcopyLarge = counts.zcopy - countsBefore.zcopy + counts.inline - countsBefore.inline - small;
    if (direct && polls) assert.is(direct.posted.sends - before, small + zcopyLarge, "every small send and every zcopy send went straight to UCX");
  });

  test("receives go straight to UCX in polling and blocking modes (hybrid: while its driver runs): masks, the sender's tag, truncation, an abort, order with the ring's receives", async () => {
    // RequestPath.directReceive: a tag receive skips the submission and completion rings where
    // the executor runs on this thread; its entry in the request table is the ring's kind.
    type Direct = { posted: { receives: number } };
    const polls = mode === "polling" || mode === "blocking";
    const direct = (p.b as unknown as { directTags(): Direct | undefined }).directTags();
    if (mode !== "hybrid") assert.is(direct !== undefined, polls, "direct tag calls where the executor runs on this thread");
    const before = direct?.posted.receives ?? 0;
    let posted = 0;
    // A mask over the high 32 bits: the sender's full tag comes back.
    const into = new Uint8Array(8);
    const masked = p.b.recv(into, 0xfeed_face_0000_0000n, 0xffff_ffff_0000_0000n);
    posted++;
    const [r1] = await p.run(Promise.all([masked, p.ab.send(pattern(8, 3), 0xfeed_face_0000_abcdn)]));
    assert.equal(r1, { tag: 0xfeed_face_0000_abcdn, length: 8 });
    assert.ok(samePattern(into, 3));
    // Too small: UCS_ERR_MESSAGE_TRUNCATED with the message's size.
    const small = p.b.recv(new Uint8Array(4), 901);
    posted++;
    const [truncated] = await p.run(Promise.all([small.then(() => null, (e: unknown) => e), p.ab.send(pattern(8, 4), 901)]));
    assert.instance(truncated, UcxError);
    assert.is((truncated as UcxError).code, "UCS_ERR_MESSAGE_TRUNCATED");
    assert.is((truncated as UcxError).incomingLength, 8);
    // Aborted before its message: rejects as an abort, and the message goes to the next receive.
    const controller = new AbortController();
    const aborted = p.b.recv(new Uint8Array(8), 902, undefined, { signal: controller.signal });
    posted++;
    controller.abort();
    const e = await p.run(aborted.then(() => null, (x: unknown) => x));
    assert.is((e as UcxError).name, "AbortError", String(e));
    const next = new Uint8Array(8);
    posted++;
    await p.run(Promise.all([p.b.recv(next, 902), p.ab.send(pattern(8, 5), 902)]));
    assert.ok(samePattern(next, 5), "the message after an abort goes to the next receive");
    // Posting order with the ring's receives (recvMany takes the ring): UCX matches in posting
    // order, so a direct receive that overtook a queued record would take the wrong message.
    const x = [new Uint8Array(8), new Uint8Array(8)];
    const y = new Uint8Array(8);
    const z = [new Uint8Array(8)];
    const first = p.b.recvMany(x, 903);
    const middle = p.b.recv(y, 903);
    posted++;
    const last = p.b.recvMany(z, 903);
    const sends = [1, 2, 3, 4].map((k) => p.ab.send(pattern(8, 20 + k), 903));
    await p.run(Promise.all([first, middle, last, ...sends]));
    assert.ok(samePattern(x[0]!, 21) && samePattern(x[1]!, 22) && samePattern(y, 23) && samePattern(z[0]!, 24), "matched in posting order");
    if (direct && polls) assert.is(direct.posted.receives - before, posted, "every single receive went straight to UCX");
  });

  test("hybrid: while its driver runs, tag sends and receives go straight to UCX, in order with the ring's", async () => {
    if (mode !== "hybrid") return;
    type Direct = { posted: { receives: number; sends: number } };
    const directOf = (w: unknown) => (w as { directTags(): Direct | undefined }).directTags();
    let direct: Direct | undefined;
    let before = 0;
    // A ping-pong: each side posts its next operation while its driver still spins after the
    // last one (the direct path), or after it parked (the ring's): both must deliver in order.
    const ba = await p.run(p.a.address().then((addr) => p.b.connect(addr)));
    for (let i = 0; i < 400; i++) {
      const into = new Uint8Array(8);
      const back = new Uint8Array(8);
      const echoed = p.a.recv(back, 601);
      await p.run(Promise.all([p.b.recv(into, 600), p.ab.send(pattern(8, i & 255), 600)]));
      assert.ok(samePattern(into, i & 255), `ping ${i}`);
      direct ??= directOf(p.b);
      if (i === 200) before = direct?.posted.receives ?? 0;
      await p.run(Promise.all([echoed, ba.send(into, 601)]));
      assert.ok(samePattern(back, i & 255), `pong ${i}`);
    }
    assert.ok(direct, "the driver was running when a call came at least once");
    assert.ok(direct.posted.receives > before, "receives went straight to UCX in the second half");
    await p.run(ba.close());
  });

  test("a receive posted straight to UCX that the worker's close ends rejects, and no other", async () => {
    const q = await pair(mode);
    const waiting = q.b.recv(new Uint8Array(8), 904);
    const e = await q.run(Promise.all([waiting.then(() => null, (x: unknown) => x), q.a.close(), q.b.close()]).then(([x]) => x));
    assert.instance(e, UcxError);
    assert.is((e as UcxError).code, "UCS_ERR_CANCELED", String(e));
  });

  test("2,000 parked receives: traffic on other tags flows, each parked one gets its own message, cancelled ones reject", async () => {
    // Tag receives report their completion themselves (a callback): none is found by polling
    // every receive on every round. Messages come in reverse posting order, some short, so
    // each receive must be matched and finished individually, with its own length and tag.
    const n = 2000;
    const parked = Array.from({ length: n }, () => new Uint8Array(32));
    // A controller each (one shared by 200 receives makes Node warn of a listener leak).
    const controllers = parked.map(() => new AbortController());
    const results = parked.map((b, i) => p.b.recv(b, 50_000 + i, undefined, i % 10 === 9 ? { signal: controllers[i]!.signal } : {}));
    const outcomes = results.map((r) => r.then((v) => v, (e: UcxError) => e));
    for (let round = 0; round < 20; round++) {
      const into = new Uint8Array(16);
      const [r] = await p.run(Promise.all([p.b.recv(into, 7), p.ab.send(pattern(16, round), 7)]));
      assert.is(r.length, 16);
      assert.ok(samePattern(into, round));
    }
    controllers.forEach((c, i) => i % 10 === 9 && c.abort()); // every tenth parked receive
    const sends: Promise<unknown>[] = [];
    for (let i = n - 1; i >= 0; i--) if (i % 10 !== 9) sends.push(p.ab.send(pattern(i % 32, i), 50_000 + i));
    await p.run(Promise.all(sends), 60_000);
    const settled = await p.run(Promise.all(outcomes), 60_000);
    settled.forEach((v, i) => {
      if (i % 10 === 9) {
        assert.instance(v, UcxError, `receive ${i}`);
        assert.is((v as UcxError).code, "UCS_ERR_CANCELED");
      } else {
        assert.equal(v, { tag: 50_000 + i, length: i % 32 }, `receive ${i}`);
        assert.ok(samePattern(parked[i]!.subarray(0, i % 32), i), `content of ${i}`);
      }
    });
    assert.is(p.b.pendingRequests, 0);
  });

  test("a receive into a buffer too small rejects with UCS_ERR_MESSAGE_TRUNCATED and the incoming size", async () => {
    const small = new Uint8Array(10);
    const [result] = await p.run(
      Promise.allSettled([p.b.recv(small, 9), p.ab.send(pattern(4096, 5), 9)]),
    );
    assert.is(result.status, "rejected");
    const err = (result as PromiseRejectedResult).reason as UcxError;
    assert.instance(err, UcxError);
    assert.is(err.code, "UCS_ERR_MESSAGE_TRUNCATED");
    assert.is(err.status, -9);
    assert.is(err.incomingLength, 4096);
  });

  test("an aborted receive rejects with UCS_ERR_CANCELED, and a later one still works", async () => {
    const ac = new AbortController();
    const pending = p.b.recv(new Uint8Array(8), 4242, undefined, { signal: ac.signal });
    setTimeout(() => ac.abort(), 20);
    const err = await p.run(pending.then(() => null, (e: UcxError) => e));
    assert.instance(err, UcxError);
    assert.is(err!.code, "UCS_ERR_CANCELED");
    const into = new Uint8Array(8);
    const [r] = await p.run(Promise.all([p.b.recv(into, 4242), p.ab.send(pattern(8, 4), 4242)]));
    assert.is(r.length, 8);
    // Already aborted: rejects without being posted.
    const pre = new AbortController();
    pre.abort();
    await p.run(p.b.recv(into, 1, undefined, { signal: pre.signal }).then(
      () => assert.unreachable(),
      (e: UcxError) => assert.is(e.code, "UCS_ERR_CANCELED"),
    ));
  });

  test("bad input is a typed UcxError before anything reaches UCX", () => {
    const bad: [() => unknown, RegExp][] = [
      [() => p.ab.send(new Uint8Array(1), -1), /non-negative/],
      [() => p.ab.send(new Uint8Array(1), 1.5), /safe integer/],
      [() => p.ab.send(new Uint8Array(1), 2n ** 64n), /64-bit/],
      [() => p.ab.send("text" as never, 1), /ArrayBufferView/],
      [() => p.b.recv(new Uint8Array(1), 1, -2), /non-negative/],
    ];
    for (const [call, message] of bad) {
      try {
        call();
        assert.unreachable();
      } catch (e) {
        assert.instance(e, UcxError);
        assert.is((e as UcxError).code, "UCX_TS_INVALID_ARGUMENT");
        assert.match((e as UcxError).message, message);
      }
    }
    const ab = new ArrayBuffer(8);
    if (typeof (ab as { transfer?: () => ArrayBuffer }).transfer === "function") {
      (ab as unknown as { transfer: () => ArrayBuffer }).transfer();
      assert.throws(() => p.ab.send(ab, 1), /detached/);
    }
  });

  test.run();
}
