/**
 * Windows of tag messages with one call each way (`ep.sendMany`, `ep.recvMany`,
 * `worker.recvMany`): order, every byte, sender tags, mixing with single sends and receives,
 * bad input, truncation and abort; in one process in every progress mode, and against a peer
 * process that echoes windows.
 */
import { suite } from "uvu";
import * as assert from "uvu/assert";
import type { UcxError } from "../../src/index.ts";
import { withPeer } from "../helpers/peer-process.ts";
import { helloEndpoints, MODES, pair, pattern, samePattern } from "../helpers/workers.ts";

/** Sizes of a window: mostly small, some up to 9 KiB (past the eager threshold), some empty. */
const sizesOf = (n: number, seed = 0) => Array.from({ length: n }, (_, i) => ((i + seed) % 7 === 0 ? (i * 331) % 9000 : (i + seed) % 5 === 0 ? 0 : 8));

function assertWindow(buffers: readonly Uint8Array[], results: readonly { tag: unknown; length: number }[], sizes: readonly number[], seed: number, tag: number, what: string): void {
  assert.is(results.length, sizes.length, `${what}: result count`);
  results.forEach((r, i) => {
    assert.is(r.length, sizes[i], `${what}: message ${i} length`);
    assert.is(r.tag, tag, `${what}: message ${i} tag`);
    assert.ok(samePattern(buffers[i]!.subarray(0, r.length), seed + i), `${what}: message ${i} bytes`);
  });
}

for (const mode of MODES) {
  const test = suite(`core/many (${mode})`);

  test("windows of 1, 64, 256 and 1,000 messages arrive in order with every byte and tag", async () => {
    const p = await pair(mode);
    try {
      const { ab, ba } = await helloEndpoints(p.a, p.b, p.run);
      for (const [k, n] of [1, 64, 256, 1000].entries()) {
        const sizes = sizesOf(n, k);
        const buffers = sizes.map(() => new Uint8Array(9000));
        const [got] = await p.run(Promise.all([ba.recvMany(buffers, 20 + k), ab.sendMany(sizes.map((s, i) => pattern(s, 100 * k + i)), 20 + k)]));
        assertWindow(buffers, got, sizes, 100 * k, 20 + k, `window of ${n}`);
      }
      // Sends first (UCX holds them as unexpected messages), the window's receive after.
      const sizes = sizesOf(300, 9);
      // (Rendezvous-sized ones complete only once matched: the send is awaited with the receive.)
      const sent = ab.sendMany(sizes.map((s, i) => pattern(s, i)), 30);
      await p.run(new Promise((r) => setTimeout(r, 50)));
      const buffers = sizes.map(() => new Uint8Array(9000));
      const [unexpected] = await p.run(Promise.all([ba.recvMany(buffers, 30), sent]));
      assertWindow(buffers, unexpected, sizes, 0, 30, "unexpected messages");
      // Empty windows resolve at once.
      assert.equal(await p.run(ba.recvMany([], 31)), []);
      await p.run(ab.sendMany([], 31));
    } finally {
      await p.close();
    }
  });

  test("mixes with single operations: sendMany to single recvs, single sends to recvMany, masks, worker.recvMany", async () => {
    const p = await pair(mode);
    try {
      const { ab, ba } = await helloEndpoints(p.a, p.b, p.run);
      const sizes = sizesOf(50);
      const singles = sizes.map(() => new Uint8Array(9000));
      const [got] = await p.run(Promise.all([Promise.all(singles.map((b) => ba.recv(b, 40))), ab.sendMany(sizes.map((s, i) => pattern(s, i)), 40)]));
      assertWindow(singles, got, sizes, 0, 40, "sendMany to single receives");
      // Single sends with different tags into one window under a mask: each keeps its own tag.
      const window = Array.from({ length: 16 }, () => new Uint8Array(16));
      const many = ba.recvMany(window, 0x100, 0xf00);
      await p.run(Promise.all(window.map((_, i) => ab.send(pattern(i, i), 0x100 + i))));
      const results = await p.run(many);
      results.forEach((r, i) => {
        assert.is(r.tag, 0x100 + i);
        assert.is(r.length, i);
        assert.ok(samePattern(window[i]!.subarray(0, i), i));
      });
      // A window with messages over 64 KiB (sent message by message) keeps its order too.
      const mixed = [8, 300_000, 0, 70_000, 8];
      const large = mixed.map((n) => new Uint8Array(Math.max(n, 1)));
      const [m] = await p.run(Promise.all([ba.recvMany(large, 41), ab.sendMany(mixed.map((n, i) => pattern(n, 50 + i)), 41)]));
      assertWindow(large, m, mixed, 50, 41, "window with large messages");
      // The worker-wide window, from an endpoint made by worker address (full 64-bit tags).
      const big = 2n ** 63n + 5n;
      const wb = [new Uint8Array(8), new Uint8Array(8)];
      const [w] = await p.run(Promise.all([p.b.recvMany(wb, big), p.ab.sendMany([pattern(8, 1), pattern(8, 2)], big)]));
      assert.equal(w.map((r) => r.tag), [big, big]);
      assert.ok(samePattern(wb[0]!, 1) && samePattern(wb[1]!, 2));
    } finally {
      await p.close();
    }
  });

  test("a window goes straight to UCX in polling and blocking modes (hybrid: while its driver runs), in order with the single sends around it", async () => {
    // proto/send-many-direct.ts: each message one ucp_tag_send_nbx from the call, one Promise
    // for the window. One tag for all: UCX matches in posting order, so a window that overtook
    // a single send (or the reverse) would show as a wrong content.
    const p = await pair(mode);
    try {
      const { ab, ba } = await helloEndpoints(p.a, p.b, p.run);
      const direct = (p.a as unknown as { directTags(): { posted: { sends: number } } | undefined }).directTags();
      const polls = mode === "polling" || mode === "blocking";
      if (mode !== "hybrid") assert.is(direct !== undefined, polls, "direct tag calls where the executor runs on this thread");
      const before = direct?.posted.sends ?? 0;
      // Eager, rendezvous (past UCX's threshold on shared memory) and empty messages.
      const window = [8, 65_536, 0, 9_000, 40_000, 8];
      const sizes = [8, ...window, 8];
      const into = sizes.map((n) => new Uint8Array(Math.max(n, 1)));
      const recvs = into.map((b) => ba.recv(b, 50));
      const sends = [ab.send(pattern(8, 0), 50), ab.sendMany(window.map((n, i) => pattern(n, 1 + i)), 50), ab.send(pattern(8, sizes.length - 1), 50)];
      const results = await p.run(Promise.all(recvs));
      await p.run(Promise.all(sends));
      results.forEach((r, i) => {
        assert.is(r.length, sizes[i], `message ${i} length`);
        assert.ok(samePattern(into[i]!.subarray(0, r.length), i), `message ${i} (${sizes[i]} B) content, in order`);
      });
      if (direct && polls) assert.ok(direct.posted.sends - before >= window.length, `the window's ${window.length} messages went straight to UCX (${direct.posted.sends - before} direct sends)`);
    } finally {
      await p.close();
    }
  });

  test("bad input throws UcxError; a message too large rejects with UCS_ERR_MESSAGE_TRUNCATED; abort rejects and frees the window", async () => {
    const p = await pair(mode);
    try {
      const { ab, ba } = await helloEndpoints(p.a, p.b, p.run);
      const invalid = (e: UcxError) => e.name === "UcxError" && e.code === "UCX_TS_INVALID_ARGUMENT";
      assert.throws(() => ab.sendMany("no" as never, 1), invalid);
      assert.throws(() => ab.sendMany([new Uint8Array(1), 5 as never], 1), invalid);
      assert.throws(() => ba.recvMany({} as never, 1), invalid);
      assert.throws(() => ba.recvMany([new Uint8Array(1), null as never], 1), invalid);
      assert.throws(() => ab.sendMany([new Uint8Array(1)], -1), invalid);
      assert.throws(() => p.ab.recvMany([new Uint8Array(1)], 1), (e: UcxError) => e.code === "UCX_TS_UNSUPPORTED");
      // The third message does not fit: the window rejects, the rest is cancelled.
      const small = [new Uint8Array(8), new Uint8Array(8), new Uint8Array(4), new Uint8Array(8)];
      const truncated = ba.recvMany(small, 50).then(
        () => assert.unreachable("a truncated window should reject"),
        (e: UcxError) => e,
      );
      await p.run(ab.sendMany([pattern(8, 0), pattern(8, 1), pattern(8, 2)], 50));
      const e = (await p.run(truncated)) as UcxError;
      assert.is(e.code, "UCS_ERR_MESSAGE_TRUNCATED", e.message);
      assert.match(e.message, /message 2 \(8 bytes\) does not fit its 4-byte buffer/);
      // The same with the messages already waiting when the window is posted: each receive is
      // matched inside its post and finished there with the status UCX gave it (batch-operations.ts).
      await p.run(ab.sendMany([pattern(8, 3), pattern(8, 4)], 51));
      await p.run(new Promise((r) => setTimeout(r, 20)));
      const early = [new Uint8Array(8), new Uint8Array(4)];
      const e2 = (await p.run(ba.recvMany(early, 51).then(() => assert.unreachable("a truncated window should reject"), (x: UcxError) => x))) as UcxError;
      assert.is(e2.code, "UCS_ERR_MESSAGE_TRUNCATED", e2.message);
      assert.match(e2.message, /message 1 \(8 bytes\) does not fit its 4-byte buffer/);
      assert.ok(samePattern(early[0]!, 3), "the message before the truncated one is received");
      // Abort a window that is waiting: it rejects as cancelled, and a later window gets the messages.
      const ac = new AbortController();
      const waiting = ba.recvMany([new Uint8Array(8), new Uint8Array(8)], 60, undefined, { signal: ac.signal }).catch((x: UcxError) => x.code);
      await p.run(new Promise((r) => setTimeout(r, 20)));
      ac.abort();
      assert.is(await p.run(waiting), "UCS_ERR_CANCELED");
      const after = [new Uint8Array(8), new Uint8Array(8)];
      const [got] = await p.run(Promise.all([ba.recvMany(after, 60), ab.sendMany([pattern(8, 7), pattern(8, 8)], 60)]));
      assert.equal(got.map((r) => r.length), [8, 8]);
      assert.ok(samePattern(after[0]!, 7) && samePattern(after[1]!, 8));
      // Aborted before it starts.
      await p.run(ba.recvMany([new Uint8Array(1)], 61, undefined, { signal: AbortSignal.abort() }).then(() => assert.unreachable("an aborted signal should reject"), () => undefined));
      assert.is(p.b.pendingRequests, 0);
      assert.is(p.a.pendingRequests, 0);
    } finally {
      await p.close();
    }
  });

  test.run();
}

for (const mode of MODES) {
  const test = suite(`core/many two processes (${mode})`);

  test("a peer echoes windows of 1 to 1,000 messages with recvMany/sendMany, every byte checked", async () => {
    await withPeer(mode, "many", async ({ ep, run, peer }) => {
      for (const [k, n] of [1, 64, 256, 1000].entries()) {
        const sizes = sizesOf(n, k);
        const back = sizes.map(() => new Uint8Array(9000));
        const echoed = ep.recvMany(back, 7);
        await run(ep.send(new Float64Array([n]), 5));
        await run(ep.sendMany(sizes.map((s, i) => pattern(s, 10 * k + i)), 6));
        assertWindow(back, await run(echoed), sizes, 10 * k, 7, `window of ${n}`);
      }
      await run(ep.send(new Float64Array([0]), 5));
      assert.is(await run(peer.exited), 0);
    });
  });

  test.run();
}
