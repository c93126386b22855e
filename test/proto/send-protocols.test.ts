/**
 * Send protocols end to end, in every progress mode, through real UCX: each size at and around
 * the tables' boundaries arrives intact by the protocol the table names; forced protocols;
 * copy semantics of inline and bounce (the caller may reuse the buffer as soon as the send
 * resolves); the pool running dry; close() waiting for sends that resolved early.
 */
import { suite } from "uvu";
import * as assert from "uvu/assert";
import type { SendProtocol } from "../../src/index.ts";
import { MODES, pair, pattern, samePattern, type Pair } from "../helpers/workers.ts";

const COSTS = { inline: { c: 1, m: 0 }, bounce: { c: 2, m: 0.001 }, zcopy: { c: 20, m: 0.0001 }, "zcopy-reg": { c: 21, m: 0.0001 } };
// With these lines: inline 0..192, bounce 193..19,999, zcopy from 20,000 (see selection.test.ts).
const BOUNDARIES: [number, SendProtocol][] = [
  [0, "inline"],
  [1, "inline"],
  [192, "inline"],
  [193, "bounce"],
  [19_999, "bounce"],
  [20_000, "zcopy"],
  [1 << 20, "zcopy"],
];

function delta(before: Record<SendProtocol, number>, after: Record<SendProtocol, number>): Record<SendProtocol, number> {
  return {
    inline: after.inline - before.inline,
    bounce: after.bounce - before.bounce,
    zcopy: after.zcopy - before.zcopy,
    "zcopy-reg": after["zcopy-reg"] - before["zcopy-reg"],
  };
}

for (const mode of MODES) {
  const test = suite(`proto/send-protocols (${mode})`);
  let p: Pair;
  test.before(async () => {
    p = await pair(mode, { protocols: { calibration: false, costs: COSTS } });
  });
  test.after(async () => {
    await p?.close();
  });

  test("each boundary size goes by the protocol the table names, and arrives intact", async () => {
    for (const [size, protocol] of BOUNDARIES) {
      assert.is(p.a.protocols.select("tag-send", size), protocol, `table at ${size}`);
      const into = new Uint8Array(size + 16);
      const before = p.a.protocolCounts;
      const recv = p.b.recv(into, 77);
      await p.run(p.ab.send(pattern(size, size & 255), 77));
      const got = await p.run(recv);
      assert.is(got.length, size);
      assert.ok(samePattern(into.subarray(0, size), size & 255), `content at ${size}`);
      const d = delta(before, p.a.protocolCounts);
      assert.is(d[protocol], 1, `${size} bytes went by ${JSON.stringify(d)}, expected ${protocol}`);
    }
  });

  test("stream sends use the stream table, in order, whatever each one's protocol", async () => {
    // A pair of its own: closing b's endpoint to a, where a already has one to b, leaves a's
    // later rendezvous sends to b hanging on UCX 1.13 (seen 2026-11-23, with or without ucx-ts's
    // protocols: UCX matches b's endpoint with the one serving a's connection).
    const q = await pair(mode, { protocols: { calibration: false, costs: COSTS } });
    try {
      const sizes = [5, 192, 193, 10_000, 40_000, 0, 7];
      const whole = pattern(sizes.reduce((x, y) => x + y, 0), 9);
      const into = new Uint8Array(whole.length);
      const ba = await q.run(q.a.address().then((addr) => q.b.connect(addr)));
      const recv = q.ab.streamRecv(into);
      const before = q.b.protocolCounts;
      let at = 0;
      const sends: Promise<void>[] = [];
      for (const n of sizes) {
        sends.push(ba.streamSend(whole.subarray(at, at + n)));
        at += n;
      }
      await q.run(Promise.all(sends));
      assert.is(await q.run(recv), whole.length);
      assert.ok(samePattern(into, 9));
      // The 0-byte send resolves without a protocol (Endpoint.streamSend: nothing goes on the wire).
      assert.equal(delta(before, q.b.protocolCounts), { inline: 3, bounce: 2, zcopy: 1, "zcopy-reg": 0 });
    } finally {
      await q.close();
    }
  });

  test("inline and bounce sends copy: the buffer may be overwritten as soon as send() resolves", async () => {
    for (const size of [100, 5000]) {
      const buffer = pattern(size, 1);
      const into = Array.from({ length: 8 }, () => new Uint8Array(size));
      const recvs = into.map((b) => p.b.recv(b, 78));
      for (let i = 0; i < 8; i++) {
        await p.run(p.ab.send(buffer, 78));
        buffer.fill(0xee); // what the receiver gets must be what was there at send()
        buffer.set(pattern(size, 1));
      }
      await p.run(Promise.all(recvs));
      for (const b of into) assert.ok(samePattern(b, 1), `a ${size}-byte message was changed after it resolved`);
      // Same, without waiting for the peer: overwrite right after each send resolves.
      const scratch = pattern(size, 2);
      const later = Array.from({ length: 4 }, () => new Uint8Array(size));
      const recv2 = later.map((b) => p.b.recv(b, 79));
      for (let i = 0; i < 4; i++) {
        await p.ab.send(scratch, 79); // resolves on submission: no progress needed
        scratch.fill(i);
        scratch.set(pattern(size, 2));
      }
      await p.run(Promise.all(recv2));
      for (const b of later) assert.ok(samePattern(b, 2));
    }
  });

  test("forcing a protocol: every size it can carry goes by it, the rest by the table", async () => {
    for (const force of ["inline", "bounce", "zcopy", "zcopy-reg"] as const) {
      p.a.configureProtocols({ calibration: false, costs: COSTS, force });
      for (const size of [8, 150, 300, 30_000, 70_000]) {
        const carries = force === "zcopy" || force === "zcopy-reg" || (force === "inline" ? size <= 192 : size <= 65536);
        const expected: SendProtocol = carries ? force : p.a.protocols.select("tag-send", size);
        const into = new Uint8Array(size);
        const before = p.a.protocolCounts;
        const recv = p.b.recv(into, 80);
        recv.catch(() => {}); // a failed assertion below must not leave an unhandled rejection
        await p.run(p.ab.send(pattern(size, 3), 80));
        await p.run(recv);
        assert.ok(samePattern(into, 3));
        assert.is(delta(before, p.a.protocolCounts)[expected], 1, `force ${force}, ${size} bytes`);
      }
    }
    p.a.configureProtocols({ calibration: false, costs: COSTS });
  });

  test("when every bounce chunk is in flight, sends go zero-copy instead, all intact", async () => {
    // 12,000 B: past UCX's eager limit over shared memory (~8 KiB), so a send stays in flight
    // until the receiver has progressed; an eager one finishes inside ucp_tag_send_nbx and gives its
    // chunk back at once (Engine.submit), and the pool would never run dry.
    const q = await pair(mode, { protocols: { calibration: false, force: "bounce", bounce: { chunkSize: 16384, chunks: 2 } } });
    try {
      const n = 12;
      const into = Array.from({ length: n }, () => new Uint8Array(12000));
      const before = q.a.protocolCounts;
      // The receives first: a rendezvous send ends only once its receive takes the data.
      const recvs = into.map((b, i) => q.b.recv(b, 81 + i));
      const sends = Array.from({ length: n }, (_, i) => q.ab.send(pattern(12000, i), 81 + i));
      await q.run(Promise.all([...sends, ...recvs]));
      into.forEach((b, i) => assert.ok(samePattern(b, i), `message ${i}`));
      const d = delta(before, q.a.protocolCounts);
      assert.is(d.bounce + d.zcopy, n);
      assert.ok(d.bounce >= 2, `bounce carried ${d.bounce}`);
      assert.ok(d.zcopy >= 1, "the pool has 2 chunks: some of 12 concurrent sends had to go zero-copy");
    } finally {
      await q.close();
    }
  });

  test("zcopy-reg registers a buffer once, reuses it, evicts past its budget, skips big buffers", async () => {
    const q = await pair(mode, {
      protocols: { calibration: false, force: "zcopy-reg", registration: { maxBytes: 3 * 65536, maxBuffer: 1 << 20 } },
    });
    try {
      const send = async (bytes: Uint8Array, seed: number) => {
        const into = new Uint8Array(bytes.length);
        const recv = q.b.recv(into, 200);
        await q.run(q.ab.send(bytes, 200));
        await q.run(recv);
        assert.equal(into, bytes, `content of a ${bytes.length}-byte send (seed ${seed})`);
      };
      // One buffer, sent whole and in parts: one registration, then hits.
      const big = pattern(65536, 4);
      for (let i = 0; i < 5; i++) await send(big.subarray(i * 1000, i * 1000 + 20_000), i);
      let st = q.a.registrationStats;
      assert.is(st.maps, 1);
      assert.is(st.hits, 4);
      assert.is(st.registeredBytes, 65536);
      assert.is(q.a.protocolCounts["zcopy-reg"], 5);
      // Five more buffers of 64 KiB: the budget (3 x 64 KiB) keeps three; the oldest go.
      const others = Array.from({ length: 5 }, (_, i) => pattern(65536, 10 + i));
      for (const [i, b] of others.entries()) await send(b, 10 + i);
      st = q.a.registrationStats;
      assert.is(st.maps, 6);
      assert.ok(st.unmaps >= 3, `unmapped ${st.unmaps}`);
      assert.ok(st.registeredBytes <= 3 * 65536, `registered ${st.registeredBytes}`);
      // An evicted buffer is registered again when sent again, and still arrives intact.
      await send(big, 99);
      assert.is(q.a.registrationStats.maps, 7);
      // A buffer over maxBuffer is not registered: plain zcopy.
      const before = q.a.protocolCounts;
      await send(pattern((1 << 20) + 1, 5), 5);
      assert.is(q.a.protocolCounts.zcopy - before.zcopy, 1);
      assert.is(q.a.registrationStats.maps, 7);
      // A buffer the user registered is sent with that registration, none made for it.
      const mine = await q.run(q.a.memMap(pattern(4096, 6)));
      await send(mine.bytes, 6);
      assert.is(q.a.registrationStats.maps, 7);
      await q.run(mine.unmap());
    } finally {
      await q.close();
    }
  });

  test("close() lets sends that resolved early reach the peer", async () => {
    const q = await pair(mode, { protocols: { calibration: false, costs: COSTS } });
    const sizes = [64, 8000, 64, 8000];
    const into = sizes.map((n) => new Uint8Array(n));
    const recvs = into.map((b, i) => q.b.recv(b, 90 + i));
    for (const [i, n] of sizes.entries()) await q.ab.send(pattern(n, i), 90 + i);
    assert.ok(q.a.protocolCounts.inline + q.a.protocolCounts.bounce === 4);
    // Close the sender first; the receiver keeps progressing meanwhile.
    await q.run(Promise.all([q.a.close(), ...recvs]));
    into.forEach((b, i) => assert.ok(samePattern(b, i), `message ${i}`));
    await q.run(q.b.close());
  });

  test.run();
}

const unit = suite("proto/send-path failures");
unit("a send that resolved early and then fails in UCX fails its endpoint", async () => {
  const { SendPath } = await import("../../src/core/proto/send-path.ts");
  const { BouncePool } = await import("../../src/core/proto/bounce-pool.ts");
  const { ProtocolSelector } = await import("../../src/index.ts");
  const arrivals: ((id: number, status: number) => void)[] = [];
  const submittedDone: number[] = [];
  const host = {
    request: (): never => {
      throw new Error("a bounce send is submitted as done, not as a request with a Promise to settle");
    },
    requestDone: (_s: unknown, onArrive: (id: number, status: number) => void) => {
      arrivals.push(onArrive);
      submittedDone.push(arrivals.length);
      return arrivals.length;
    },
    resolved: () => Promise.resolve(),
    closing: () => false,
  };
  const pool = BouncePool.create(1024, 1, false);
  const { RegistrationCache } = await import("../../src/core/proto/registration-cache.ts");
  const noRegistration = new RegistrationCache({ nextId: () => 1, map: () => {}, unmap: () => {}, userRegistration: () => undefined, addressOf: () => 0 });
  const path = new SendPath({ ...host, settled: (p) => p, holdMemory: (_b, p) => p }, new ProtocolSelector("polling", 192, { calibration: false, force: "bounce" }), pool, noRegistration, () => 4096);
  const failures: number[] = [];
  const sink = { failAfterSend: (status: number) => void failures.push(status) };
  const sent = path.send(1, "tag-send", 1, new Uint8Array(100), 0, 0, "send", sink);
  assert.equal(submittedDone, [1]);
  assert.ok(sent.early);
  assert.is(pool.available, 0);
  assert.is(path.unfinished, 1);
  const drained = path.whenDrained();
  arrivals[0]!(1, -25); // UCS_ERR_CONNECTION_RESET
  await drained;
  assert.equal(failures, [-25]);
  assert.is(pool.available, 1, "the chunk came back");
  // A cancelled one is reported too: its bytes never left. The endpoint tells a lost send (its
  // failure's close cancelled it) from one given up knowingly (a forced close, the worker's).
  path.send(1, "tag-send", 1, new Uint8Array(100), 0, 0, "send", sink);
  arrivals[1]!(2, -16);
  assert.equal(failures, [-25, -16]);
  assert.is(path.unfinished, 0);
});

unit("a window straight to UCX: one refused stops the rest, the window waits for what UCX holds, the first failure rejects it", async () => {
  // proto/send-many-direct.ts against a stand-in for DirectTags whose answers the test chooses:
  // UCS_OK (finished in place), a request id (UCX holds it: its settle comes later), or a
  // negative status (refused now). The real path is exercised in core/many.
  const { sendManyDirect } = await import("../../src/core/proto/send-many-direct.ts");
  const { UcxError } = await import("../../src/index.ts");
  const settles = new Map<number, (status: number) => void>();
  let answers: number[] = [];
  const posted: number[] = [];
  const d = {
    sendQueued: (_q: unknown, _ep: number, _address: number, length: number) => {
      posted.push(length);
      return answers.shift()!;
    },
    settleWith: (id: number, settle: (status: number) => void) => void settles.set(id, settle),
  };
  let closing = false;
  const host = { addressOf: () => 4096, closing: () => closing };
  const frames = [1, 2, 3, 4].map((n) => new Uint8Array(n));
  const state = (p: Promise<void>) => Promise.race([p.then(() => "resolved", (e: unknown) => e), new Promise((r) => setTimeout(() => r("pending"), 10))]);
  type Direct = Parameters<typeof sendManyDirect>[0];

  // All finished in place: resolved at once.
  answers = [0, 0, 0, 0];
  assert.is(await state(sendManyDirect(d as unknown as Direct, host, 1, frames, 0, 0)), "resolved");
  // Two held: pending until both ended, whatever the order.
  answers = [0, 101, 0, 102];
  let w = sendManyDirect(d as unknown as Direct, host, 1, frames, 0, 0);
  settles.get(102)!(0);
  assert.is(await state(w), "pending");
  settles.get(101)!(0);
  assert.is(await state(w), "resolved");
  // The third refused: the fourth is not posted; the window rejects with that status once the
  // held one ends.
  posted.length = 0;
  answers = [103, 0, -25];
  w = sendManyDirect(d as unknown as Direct, host, 1, frames, 0, 0);
  assert.equal(posted, [1, 2, 3]);
  assert.is(await state(w), "pending");
  settles.get(103)!(0);
  const refused = await state(w);
  assert.instance(refused, UcxError);
  assert.is((refused as InstanceType<typeof UcxError>).code, "UCS_ERR_CONNECTION_RESET");
  // A held one fails later: its status, the first failure, rejects the window.
  answers = [104, 105];
  w = sendManyDirect(d as unknown as Direct, host, 1, frames.slice(0, 2), 0, 0);
  settles.get(105)!(-24);
  settles.get(104)!(-16);
  assert.is(((await state(w)) as InstanceType<typeof UcxError>).code, "UCS_ERR_NOT_CONNECTED");
  // Cancelled by the worker's close and never awaited: no unhandled rejection.
  answers = [106];
  void sendManyDirect(d as unknown as Direct, host, 1, frames.slice(0, 1), 0, 0);
  closing = true;
  settles.get(106)!(-16);
  await new Promise((r) => setTimeout(r, 20)); // an unhandled rejection would end the run here
});

unit.run();
