/**
 * Active messages: UCXX's AM header byte for byte, delivery of 0 B .. 256 MiB (eager and
 * rendezvous), windows (amSendMany / amRecvMany, also against a peer process and one killed
 * mid-window), per-endpoint queueing in order within bounds, receiver callbacks, raw AM ids,
 * malformed headers refused one message at a time, and UCX's own C example as a peer.
 */
import { spawn } from "node:child_process";
import process from "node:process";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { AmHeaderError, decodeAmHeader, encodeAmHeader, UcxError, Worker, type AmMessage } from "../../src/index.ts";
import { startPeer, withPeer } from "../helpers/peer-process.ts";
import { skipWithReason } from "../helpers/skip.ts";
import { ucpClientServer } from "../helpers/ucp-example.ts";
import { AmPack, unpackActiveMessages } from "../../src/core/engine/am-pack.ts";
import { AM_EAGER_MAX, amSendFlags, protocolFlags, type AmSendProtocol } from "../../src/core/am/send-protocol.ts";
import { ucx } from "../../src/core/library.ts";
import { UCX_CONSTANTS } from "../../src/ffi/index.ts";
import { drive, helloEndpoints, MODES, pair, pattern, samePattern } from "../helpers/workers.ts";

const u8 = (...b: number[]) => new Uint8Array(b);
const le64 = (v: number) => [v & 255, (v >>> 8) & 255, (v >>> 16) & 255, v >>> 24, 0, 0, 0, 0];

// --- the header ------------------------------------------------------------------------------

const header = suite("core/am header");

header("a plain host message is UCXX's 14 bytes; a callback, policy and user header lay out as in ucxx-wire.md", () => {
  assert.equal(encodeAmHeader({ memoryType: 0, memoryTypePolicy: 0, userHeader: u8() }), u8(0, 0, 0, 0, 0, 0, ...le64(0)));
  const owner = new Uint8Array(64);
  owner.set([0x74, 0x65, 0x73, 0x74]); // "test", NUL-padded to 64 bytes
  const bytes = encodeAmHeader({ memoryType: 1, callback: { owner: "test", id: 258n }, memoryTypePolicy: 1, userHeader: u8(9, 8) });
  assert.equal(bytes, u8(1, 0, 0, 0, 1, ...owner, 2, 1, 0, 0, 0, 0, 0, 0, 1, ...le64(2), 9, 8));
  assert.equal(decodeAmHeader(bytes), { memoryType: 1, callback: { owner: "test", id: 258n }, memoryTypePolicy: 1, userHeader: u8(9, 8) });
});

header("older and plain-UCX headers are read: none, 4 bytes, 5 bytes", () => {
  const host = { memoryType: 0, memoryTypePolicy: 0, userHeader: u8() };
  assert.equal(decodeAmHeader(u8()), host);
  assert.equal(decodeAmHeader(u8(1, 0, 0, 0)), { ...host, memoryType: 1 });
  assert.equal(decodeAmHeader(u8(0, 0, 0, 0, 0)), { ...host, callback: undefined });
});

header("malformed headers are refused with what is wrong", () => {
  const refuse = (b: Uint8Array, re: RegExp) => assert.throws(() => decodeAmHeader(b), (e: Error) => e instanceof AmHeaderError && re.test(e.message));
  refuse(u8(0, 0, 0), /ends inside 'memoryType'/);
  refuse(u8(0, 0, 0, 0, 2), /hasReceiverCallback' is 2/);
  refuse(u8(0, 0, 0, 0, 1, 0x61), /ends inside 'receiver callback'/);
  refuse(u8(0, 0, 0, 0, 0, 0, ...le64(5), 1, 2), /user header is 5 bytes; 2 follow/);
  refuse(u8(0, 0, 0, 0, 0, 0, 1, 2), /ends inside 'userHeaderSize'/);
  refuse(u8(0, 0, 0, 0, 0, 3, ...le64(0)), /memoryTypePolicy' is 3/);
  assert.throws(() => encodeAmHeader({ memoryType: 0, callback: { owner: "x".repeat(64), id: 1n }, memoryTypePolicy: 0, userHeader: u8() }), /1 to 63 bytes/);
});

header.run();

// --- which protocol a send asks UCX for (am/send-protocol.ts) ---------------------------------------

const protocols = suite("core/am send protocol");

protocols("auto: eager up to 64 KiB of host data, UCX's choice above and for device data; eager, rndv and ucx at every size", () => {
  const EAGER = UCX_CONSTANTS.UCP_AM_SEND_FLAG_EAGER;
  const RNDV = UCX_CONSTANTS.UCP_AM_SEND_FLAG_RNDV;
  const at = (protocol: AmSendProtocol | undefined, length: number, memoryType = 0) => amSendFlags(1 | protocolFlags(protocol, memoryType), length);
  assert.is(AM_EAGER_MAX, 64 << 10, "the default bound (UCX_TS_AM_EAGER_MAX unset in the tests)");
  assert.equal([at(undefined, 0), at("auto", 64 << 10), at("auto", (64 << 10) + 1), at("auto", 1 << 20)], [1 | EAGER, 1 | EAGER, 1, 1]);
  // A UCXX receiver copies eager data into host memory: device-declared messages stay with UCX.
  assert.equal([at("auto", 100, 1), at("eager", 100, 1)], [1, 1 | EAGER]);
  assert.equal([at("eager", 1 << 20), at("rndv", 8), at("ucx", 8), at("ucx", 1 << 20)], [1 | EAGER, 1 | RNDV, 1, 1]);
  for (const bad of ["fast", "EAGER", 2, {}]) {
    assert.throws(() => protocolFlags(bad as AmSendProtocol), (e: unknown) => e instanceof UcxError && /protocol must be one of auto, eager, rndv, ucx/.test((e as Error).message), String(bad));
  }
});

protocols.run();

// --- small messages packed by the engine (engine/am-pack.ts) ---------------------------------------

const packing = suite("core/am pack");

packing("packed messages read back in order, each with its endpoint, AM id, bytes and header; a full pack is flushed first", () => {
  const u = ucx();
  const pack = new AmPack(u);
  // C-side memory stands in for UCX's: data with its header right after it (one copy), or apart.
  const memory = new Uint8Array(64 * 1024);
  const at = u.addressOf(memory);
  const taken: ArrayBuffer[][] = [];
  const flush = () => taken.push(pack.take());
  type Sent = [endpoint: number, amId: number, data: Uint8Array, header: Uint8Array];
  const sent: Sent[] = [];
  const add = (endpoint: number, amId: number, data: Uint8Array, header: Uint8Array, adjacent: boolean) => {
    memory.set(data, 0);
    const headerAt = adjacent ? data.length : 32 * 1024;
    memory.set(header, headerAt);
    assert.ok(pack.add(endpoint, amId, at + headerAt, header.length, at, data.length, flush));
    sent.push([endpoint, amId, data, header]);
  };
  const plain = new Uint8Array(14);
  add(1, 0, u8(1, 2, 3), plain, true); // UCXX's plain header: not carried
  add(2, 0, u8(4), u8(0, 0, 0, 0, 0, 0, ...le64(2), 7, 7), false); // a user header, apart from the data
  add(1, 6, u8(), u8(), true); // a raw id, nothing at all
  add(3, 6, pattern(100, 1), plain, false); // 14 zero bytes under a raw id are its header as sent
  for (let i = 0; i < 9; i++) add(4, 0, pattern(8000, i), plain, true); // past 64 KiB: a flush
  assert.not.ok(pack.add(1, 0, at, 0, at, 8192, flush), "8 KiB and more is not packed");
  taken.push(pack.take());
  assert.is(taken.length, 2, "one flush when full, then the rest");
  const PLAIN = new Uint8Array(14);
  const got: Sent[] = [];
  for (const buffers of taken) unpackActiveMessages(buffers, PLAIN, (endpoint, amId, data, header) => got.push([endpoint, amId, data.slice(), header === PLAIN ? plain : header.slice()]));
  assert.equal(got, sent);
  // One message alone: taken as a message of its own (a round trip pays no index).
  add(5, 0, u8(9, 9), plain, true);
  const one = pack.takeOne(PLAIN);
  assert.equal([one.endpoint, one.amId, new Uint8Array(one.buffer), one.header === PLAIN], [5, 0, u8(9, 9), true]);
  assert.is(pack.count, 0);
});

packing.run();

// --- one process, every progress mode ------------------------------------------------------------

for (const mode of MODES) {
  const test = suite(`core/am (${mode})`);

  test("0 B, 8 B, 1 MiB and 64 MiB arrive intact with their user header; unread messages queue in order", async () => {
    const p = await pair(mode);
    try {
      const ba = await p.run(p.a.address().then((x) => p.b.connect(x)));
      for (const [k, size] of [0, 8, 1 << 20, 64 << 20].entries()) {
        const [m] = await p.run(Promise.all([ba.amRecv(), p.ab.amSend(pattern(size, k), { header: u8(k, 7) })]));
        assert.is(m.data.length, size);
        assert.ok(samePattern(m.data, k), `${size} bytes`);
        assert.equal(m.header, u8(k, 7));
        assert.is(m.memoryType, 0);
        // Given back: detached here at once (never a view of memory reused for later messages).
        m.release();
        assert.is(m.data.length, size >= 8192 ? 0 : size);
        m.release();
      }
      // Sent before anyone waits: queued on the endpoint, read in order (eager and rendezvous
      // mixed), each released once checked: the large ones land in reused memory, intact.
      await p.run(Promise.all(Array.from({ length: 50 }, (_, i) => p.ab.amSend(pattern(i % 5 === 0 ? 100_000 : i, i)))));
      await p.run(p.ab.flush());
      for (let i = 0; i < 50; i++) {
        const m = await p.run(ba.amRecv());
        assert.ok(m.data.length === (i % 5 === 0 ? 100_000 : i) && samePattern(m.data, i), `queued message ${i}`);
        m.release();
      }
      for (const k of [0, 1]) {
        const [m] = await p.run(Promise.all([ba.amRecv(), p.ab.amSend(pattern(70_000, k))]));
        assert.ok(m.data.length === 70_000 && samePattern(m.data, k), `70,000 B into reused memory (${k})`);
      }
      // worker.amRecv() takes from any endpoint.
      const [any] = await p.run(Promise.all([p.b.amRecv(), p.ab.amSend(u8(42))]));
      assert.equal(any.data, u8(42));
    } finally {
      await p.close();
    }
  });

  test("a message whose data and header fit a record is copied at the call; a window of them arrives in order", async () => {
    const p = await pair(mode);
    try {
      const ba = await p.run(p.a.address().then((x) => p.b.connect(x)));
      // 14 B of UCXX's header (+1 with a user header) and the data: up to 192 B ride in the
      // record (copied: the shared buffer is overwritten right after each call), 193 B go by
      // address (a buffer of their own, untouched until the send resolves).
      const shared = new Uint8Array(200);
      const sizes = [0, 8, 177, 178, 179, 200];
      const sends: Promise<void>[] = [];
      for (let i = 0; i < 240; i++) {
        const n = sizes[i % sizes.length]!;
        const options = i % 2 === 1 ? { header: u8(i & 255) } : {};
        const inline = n + 14 + (i % 2) <= 192;
        const data = inline ? shared.subarray(0, n).fill(i & 255) : new Uint8Array(n).fill(i & 255);
        sends.push(p.ab.amSend(data, options));
        if (inline) shared.fill(0xee);
      }
      await p.run(Promise.all(sends));
      for (let i = 0; i < 240; i++) {
        const m = await p.run(ba.amRecv());
        const n = sizes[i % sizes.length]!;
        assert.is(m.data.length, n, `message ${i}: length`);
        assert.ok(m.data.every((b) => b === (i & 255)), `message ${i}: bytes as they were at the call`);
        assert.equal(m.header, i % 2 === 1 ? u8(i & 255) : u8(), `message ${i}: user header`);
      }
    } finally {
      await p.close();
    }
  });

  test("a full queue refuses messages with a clear error at their place in the order, then goes on", async () => {
    const p = await pair(mode, { am: { maxQueuedMessages: 3 } });
    try {
      const ba = await p.run(p.a.address().then((x) => p.b.connect(x)));
      for (let i = 0; i < 5; i++) await p.run(p.ab.amSend(u8(i)));
      await p.run(p.ab.flush());
      await p.run(new Promise((r) => setTimeout(r, 50)));
      await p.run(p.b.flush()); // let b take in everything that arrived
      for (let i = 0; i < 3; i++) assert.equal((await p.run(ba.amRecv())).data, u8(i));
      const refused = await p.run(ba.amRecv().then(() => null, (e: UcxError) => e));
      assert.is(refused?.code, "UCX_TS_LIMIT_EXCEEDED");
      assert.match(refused!.message, /2 active message\(s\) were refused/);
      const [m] = await p.run(Promise.all([ba.amRecv(), p.ab.amSend(u8(9))]));
      assert.equal(m.data, u8(9));
      // Aborting a waiting receive rejects it with UCS_ERR_CANCELED.
      const ac = new AbortController();
      const waiting = ba.amRecv({ signal: ac.signal }).catch((e: UcxError) => e.code);
      ac.abort();
      assert.is(await p.run(waiting), "UCS_ERR_CANCELED");
    } finally {
      await p.close();
    }
  });

  // The windows live in the inbox, on the application thread, the same in every mode: two modes
  // (one with a progress thread, one without) cover how messages reach it, at half the time.
  if (mode === "thread" || mode === "polling") {
    test("amRecvMany: windows in posting order beside amRecv, partial windows, abort and refusal give messages back", async () => {
      const p = await pair(mode, { am: { maxQueuedMessages: 6 } });
      try {
        const ba = await p.run(p.a.address().then((x) => p.b.connect(x)));
        const firsts = (ms: AmMessage[]) => ms.map((m) => m.data[0]);
        const sendAll = (from: number, n: number) => p.run(Promise.all(Array.from({ length: n }, (_, i) => p.ab.amSend(u8(from + i)))));
        const takenIn = async () => {
          await p.run(p.ab.flush());
          await p.run(new Promise((r) => setTimeout(r, 10)));
          await p.run(p.b.flush()); // let b take in everything that arrived
        };
        for (const bad of [-1, 1.5, Number.NaN, "2" as unknown as number])
          assert.throws(() => ba.amRecvMany(bad), (e: UcxError) => e.code === "UCX_TS_INVALID_ARGUMENT", `count ${String(bad)}`);
        assert.equal(await p.run(ba.amRecvMany(0)), []);
        // Receives posted before anything arrived take messages in the order they were posted.
        const first = ba.amRecv();
        const window = ba.amRecvMany(3);
        const after = ba.amRecv();
        await sendAll(0, 5);
        assert.equal([(await p.run(first)).data[0], firsts(await p.run(window)), (await p.run(after)).data[0]], [0, [1, 2, 3], 4]);
        // A partial window: two queued when it is posted, two more arriving afterwards.
        await sendAll(10, 2);
        await takenIn();
        const partial = ba.amRecvMany(4);
        await sendAll(12, 2);
        assert.equal(firsts(await p.run(partial)), [10, 11, 12, 13]);
        // An aborted window gives back what it collected: the next receives get it, in order.
        const ac = new AbortController();
        const aborted = ba.amRecvMany(3, { signal: ac.signal }).catch((e: UcxError) => e.code);
        await sendAll(20, 2);
        await takenIn();
        ac.abort();
        assert.is(await p.run(aborted), "UCS_ERR_CANCELED");
        assert.equal((await p.run(ba.amRecv())).data, u8(20));
        assert.equal(firsts(await p.run(ba.amRecvMany(1))), [21]);
        // A refusal in line (queue of 6 full) rejects the window reaching it; its messages go back.
        await sendAll(30, 8);
        await takenIn();
        const refused = await p.run(ba.amRecvMany(8).then(() => null, (e: UcxError) => e));
        assert.is(refused?.code, "UCX_TS_LIMIT_EXCEEDED");
        assert.equal(firsts(await p.run(ba.amRecvMany(6))), [30, 31, 32, 33, 34, 35]);
        // From any endpoint: the queued messages first, then those arriving, as one window.
        await sendAll(40, 1);
        await takenIn();
        const any = p.b.amRecvMany(3);
        await sendAll(41, 2);
        assert.equal(firsts(await p.run(any)), [40, 41, 42]);
      } finally {
        await p.close();
      }
    });
  }

  test("amSendMany: windows of 1 to 1,000 messages (eager and rendezvous) arrive in order with every byte and header", async () => {
    const p = await pair(mode);
    try {
      const ba = await p.run(p.a.address().then((x) => p.b.connect(x)));
      const invalid = (e: UcxError) => e.code === "UCX_TS_INVALID_ARGUMENT";
      assert.throws(() => p.ab.amSendMany("no" as never), invalid);
      assert.throws(() => p.ab.amSendMany([u8(1), 5 as never]), invalid);
      assert.throws(() => p.ab.amSendMany([u8(1)], { callback: { owner: "ucxx", id: 1 } }), (e: UcxError) => /reserved/.test(e.message));
      await p.run(p.ab.amSendMany([]));
      // Mostly 8 B, some empty, some past the eager threshold (rendezvous), one of 1 MiB.
      const sizeOf = (i: number, k: number) => (i === 5 && k === 2 ? 1 << 20 : i % 7 === 3 ? 70_000 + i : i % 5 === 0 ? 0 : 8);
      for (const [k, n] of [1, 64, 256, 1000].entries()) {
        const window = Array.from({ length: n }, (_, i) => pattern(sizeOf(i, k), 10 * k + i));
        const [got] = await p.run(Promise.all([ba.amRecvMany(n), p.ab.amSendMany(window, { header: u8(k, 9) })]));
        got.forEach((m, i) => {
          assert.is(m.data.length, sizeOf(i, k), `window of ${n}, message ${i}: length`);
          assert.ok(samePattern(m.data, 10 * k + i), `window of ${n}, message ${i}: bytes`);
          assert.equal(m.header, u8(k, 9), `window of ${n}, message ${i}: user header`);
          m.release();
        });
      }
      // Several windows in flight at once, received one by one: the order holds across windows.
      const windows = [0, 1, 2].map((w) => p.ab.amSendMany(Array.from({ length: 100 }, (_, i) => u8(w, i))));
      await p.run(Promise.all(windows));
      for (let i = 0; i < 300; i++) assert.equal((await p.run(ba.amRecv())).data, u8(Math.floor(i / 100), i % 100), `message ${i} of three windows`);
      // A raw AM id and a receiver callback apply to every message of the window.
      const raw: AmMessage[] = [];
      const offRaw = await p.run(p.b.onAm(6, (m) => raw.push(m)));
      await p.run(p.ab.amSendMany([u8(1), u8(2), u8(3)], { amId: 6, header: u8(0xfe) }));
      const viaCallback: AmMessage[] = [];
      const off = p.b.onAmCallback("test", 8n, (m) => viaCallback.push(m));
      await p.run(p.ab.amSendMany([u8(4), u8(5)], { callback: { owner: "test", id: 8 } }));
      await p.run(new Promise<void>((resolve) => {
        const t = setInterval(() => raw.length === 3 && viaCallback.length === 2 && (clearInterval(t), resolve()), 5);
      }));
      assert.equal(raw.map((m) => [m.data[0], m.header[0]]), [[1, 0xfe], [2, 0xfe], [3, 0xfe]]);
      assert.equal(viaCallback.map((m) => m.data[0]), [4, 5]);
      offRaw();
      off();
      assert.is(p.a.pendingRequests, 0);
    } finally {
      await p.close();
    }
  });

  test("rendezvous windows fetched several per progress round: in order, every byte, tag messages beside them delivered", async () => {
    // A round calls UCX again while fetches finish (executor.ts FETCH_BURST_MS): 64 KiB messages
    // sent by rendezvous (protocol "rndv": "auto" sends them eager) are fetched over shared
    // memory one per call. Windows of 48, received one
    // message at a time and released (later fetches reuse that memory) or all at once, with a
    // tag message sent between the windows' halves that must not wait for them.
    const p = await pair(mode);
    try {
      const SIZE = 64 << 10;
      for (let w = 0; w < 3; w++) {
        const seed = (i: number) => 100 * w + i;
        const first = Array.from({ length: 24 }, (_, i) => pattern(SIZE, seed(i)));
        const second = Array.from({ length: 24 }, (_, i) => pattern(SIZE + i, seed(24 + i)));
        const tagged = new Uint8Array(4);
        const received = p.b.recv(tagged, 40 + w);
        const rndv = { protocol: "rndv" } as const;
        const sends = Promise.all([p.ab.amSendMany(first, rndv), p.ab.send(u8(w, 1, 2, 3), 40 + w), p.ab.amSendMany(second, rndv)]);
        if (w === 1)
          (await p.run(p.b.amRecvMany(48))).forEach((m, i) => {
            assert.is(m.data.length, i < 24 ? SIZE : SIZE + i - 24, `window ${w}, message ${i}: length`);
            assert.ok(samePattern(m.data, seed(i)), `window ${w}, message ${i}: bytes`);
            m.release();
          });
        else
          for (let i = 0; i < 48; i++) {
            const m = await p.run(p.b.amRecv());
            assert.ok(samePattern(m.data, seed(i)), `window ${w}, message ${i}: bytes`);
            m.release();
          }
        await p.run(Promise.all([sends, received]));
        assert.equal(tagged, u8(w, 1, 2, 3), `window ${w}: the tag message`);
      }
      assert.is(p.a.pendingRequests + p.b.pendingRequests, 0);
    } finally {
      await p.close();
    }
  });

  test("release() detaches the message's memory at once; a later message reusing it is never seen through the old view", async () => {
    const p = await pair(mode);
    try {
      const SIZE = 64 << 10;
      const first = await p.run(Promise.all([p.b.amRecv(), p.ab.amSend(pattern(SIZE, 1))]).then(([m]) => m));
      const old = first.data;
      assert.ok(samePattern(old, 1));
      first.release();
      assert.is(old.byteLength, 0, "the released view reads as empty");
      assert.is(first.data.byteLength, 0, "so does the message's own");
      first.release(); // a second release does nothing
      // The next messages of that size take the released memory (the pool): still nothing shows.
      for (let k = 2; k < 6; k++) {
        const m = await p.run(Promise.all([p.b.amRecv(), p.ab.amSend(pattern(SIZE, k))]).then(([x]) => x));
        assert.ok(samePattern(m.data, k), `message ${k}`);
        assert.is(old.byteLength, 0);
        m.release();
      }
    } finally {
      await p.close();
    }
  });

  test("receiver callbacks by (owner, id), raw AM ids, and malformed headers refused one message at a time", async () => {
    const p = await pair(mode);
    try {
      const ba = await p.run(p.a.address().then((x) => p.b.connect(x)));
      assert.throws(() => p.b.onAmCallback("ucxx", 1, () => {}), (e: UcxError) => /reserved/.test(e.message));
      assert.throws(() => p.ab.amSend(u8(), { callback: { owner: "ucxx", id: 1 } }), (e: UcxError) => /reserved/.test(e.message));
      const viaCallback: AmMessage[] = [];
      const off = p.b.onAmCallback("test", 7n, (m) => viaCallback.push(m));
      await p.run(p.ab.amSend(pattern(300, 3), { header: u8(5), callback: { owner: "test", id: 7 } }));
      await p.run(new Promise<void>((resolve) => {
        const t = setInterval(() => viaCallback.length && (clearInterval(t), resolve()), 5);
      }));
      assert.ok(samePattern(viaCallback[0]!.data, 3));
      assert.equal(viaCallback[0]!.header, u8(5));
      off();
      // Raw UCX AM id: the header goes as UCX's header, untouched.
      const raw: [AmMessage, unknown][] = [];
      const offRaw = await p.run(p.b.onAm(5, (m, ep) => raw.push([m, ep])));
      await p.run(p.ab.amSend(u8(1, 2, 3), { amId: 5, header: u8(0xff, 0xfe) }));
      await p.run(new Promise<void>((resolve) => {
        const t = setInterval(() => raw.length && (clearInterval(t), resolve()), 5);
      }));
      assert.equal(raw[0]![0].data, u8(1, 2, 3));
      assert.equal(raw[0]![0].header, u8(0xff, 0xfe));
      assert.is(raw[0]![1], ba);
      offRaw();
      // A header that does not parse fails that message only; the next one arrives.
      await p.run(p.ab.amSend(u8(1), { amId: 0, header: u8(0, 0, 0, 0, 0, 0, ...le64(9)) }));
      await p.run(p.ab.amSend(u8(2)));
      const bad = await p.run(ba.amRecv().then(() => null, (e: UcxError) => e));
      assert.is(bad?.code, "UCX_TS_PROTOCOL_ERROR");
      assert.match(bad!.message, /user header is 9 bytes; 0 follow/);
      assert.equal((await p.run(ba.amRecv())).data, u8(2));
      // No header at all (UCX's C example): host memory, no user header.
      const [plain] = await p.run(Promise.all([ba.amRecv(), p.ab.amSend(u8(4), { amId: 0 })]));
      assert.equal([plain.data, plain.header, plain.memoryType], [u8(4), u8(), 0]);
    } finally {
      await p.close();
    }
  });

  test("a worker connected to its own listener: each end's messages and stream bytes reach the other end, not itself", async () => {
    // UCX makes both endpoints of a worker-to-itself connection loops to themselves; the
    // message must still reach the end it was sent to (Endpoint.loopPartner).
    const w = await Worker.create({ progressMode: mode, features: ["tag", "stream", "am"] });
    const run = <T>(q: Promise<T>) => drive([w], q);
    try {
      const { ab, ba } = await helloEndpoints(w, w, run);
      const [atB] = await run(Promise.all([ba.amRecv(), ab.amSend(u8(1, 2, 3), { header: u8(7) })]));
      assert.equal([atB.data, atB.header], [u8(1, 2, 3), u8(7)]);
      const [atA] = await run(Promise.all([ab.amRecv(), ba.amSend(u8(4))]));
      assert.equal(atA.data, u8(4));
      // Nothing stayed behind at the sending ends: both inboxes are empty now.
      assert.is(await run(Promise.race([ab.amRecv(), ba.amRecv(), new Promise((r) => setTimeout(() => r("empty"), 200))])), "empty");
      const into = new Uint8Array(5);
      await run(Promise.all([ba.streamRecv(into), ab.streamSend(u8(5, 6, 7, 8, 9))]));
      assert.equal(into, u8(5, 6, 7, 8, 9));
      const tagged = new Uint8Array(2);
      await run(Promise.all([ab.recv(tagged, 3), ba.send(u8(10, 11), 3)]));
      assert.equal(tagged, u8(10, 11));
    } finally {
      await run(w.close());
    }
  });

  test.run();
}

// --- two processes ---------------------------------------------------------------------------

for (const mode of MODES) {
  const test = suite(`core/am two processes (${mode})`);

  test("a peer echoes amSendMany windows of 1 to 1,000 messages with amRecvMany/amSendMany, every byte checked", async () => {
    await withPeer(mode, "am-many", async ({ ep, run, peer }) => {
      const sizeOf = (i: number, k: number) => (i % 9 === 4 ? 70_000 + k : i % 5 === 0 ? 0 : 8 + (i % 3));
      for (const [k, n] of [1, 64, 256, 1000].entries()) {
        const back = ep.amRecvMany(n);
        await run(ep.send(new Float64Array([n]), 5));
        await run(ep.amSendMany(Array.from({ length: n }, (_, i) => pattern(sizeOf(i, k), 10 * k + i)), { header: u8(k) }));
        (await run(back)).forEach((m, i) => {
          assert.ok(m.data.length === sizeOf(i, k) && samePattern(m.data, 10 * k + i), `window of ${n}, message ${i} back`);
          assert.equal(m.header, u8(k), `window of ${n}, message ${i}: user header`);
        });
      }
      await run(ep.send(new Float64Array([0]), 5));
      assert.is(await run(peer.exited), 0);
    });
  });

  test("amSendMany windows in flight when the peer dies reject with a UcxError, none hangs", async () => {
    const peer = await startPeer(mode, "peer", "hang");
    const w = await Worker.create({ progressMode: mode }); // error handling: peer
    const run = <T>(p: Promise<T>, ms = 60_000) => drive([w], p, ms);
    try {
      const ep = await run(w.connect({ host: "127.0.0.1", port: peer.port }));
      // The peer stopped: rendezvous-sized messages cannot complete (it never fetches them), so
      // every window is still in UCX's hands when the peer is killed.
      // (process.kill, not peer.kill: Deno's ChildProcess sends no signal after its first kill().)
      process.kill(peer.child.pid!, "SIGSTOP");
      let settled = 0;
      const settle = (p: Promise<void>) => p.then(() => null, (e: unknown) => e).finally(() => settled++);
      const windows = Array.from({ length: 4 }, (_, k) => settle(ep.amSendMany(Array.from({ length: 8 }, (_, i) => pattern(1 << 20, k + i)))));
      await run(new Promise((r) => setTimeout(r, 200)));
      assert.is(settled, 0, "no window may settle while the peer cannot take its messages");
      process.kill(peer.child.pid!, "SIGKILL");
      const results = await run(Promise.all(windows), 30_000);
      for (const r of results) assert.instance(r, UcxError, `a window settled with ${String(r)}`);
      // Once the endpoint failed, a new window rejects with its error at once.
      for (let i = 0; !ep.error; i++) {
        if (i > 3000) throw new Error("the endpoint was not reported failed within 30 s");
        await run(new Promise((r) => setTimeout(r, 10)));
      }
      const late = await run(settle(ep.amSendMany([u8(1), u8(2)])));
      assert.is(late, ep.error);
      assert.is(w.pendingRequests, 0);
      await run(ep.close()).catch(() => {});
    } finally {
      peer.kill();
      await run(w.close());
    }
  });

  test("an echo peer returns 0 B .. 256 MiB intact (eager and rendezvous)", async () => {
    await withPeer(mode, "am", async ({ ep, run, peer }) => {
      for (const [k, size] of [0, 8, 1 << 20, 256 << 20].entries()) {
        const [m] = await run(Promise.all([ep.amRecv(), ep.amSend(pattern(size, k), { header: u8(k) })]));
        assert.ok(m.data.length === size && samePattern(m.data, k), `${size} bytes back`);
        assert.equal(m.header, u8(k));
      }
      const end = new TextEncoder().encode("end");
      await run(Promise.all([ep.amRecv(), ep.amSend(u8(), { header: end })]));
      assert.is(await run(peer.exited), 0);
    });
  });

  test("protocol: eager messages (auto up to 64 KiB) leave while the peer is stopped, rendezvous ones wait for it; all arrive", async () => {
    // send-protocol.ts. An eager message is in UCX's shared-memory FIFO once sent, so its send
    // completes with the receiver stopped; a rendezvous one completes only once the receiver
    // has fetched it. The echo peer, resumed, sends every message back, bytes and header.
    await withPeer(mode, "am", async ({ ep, run, peer }) => {
      const settledOf = (p: Promise<void>) => {
        const s = { done: false, error: undefined as unknown };
        p.then(() => (s.done = true), (e: unknown) => ((s.done = true), (s.error = e)));
        return s;
      };
      // Connected: one echo first, so that the peer is past its set-up when it is stopped.
      await run(Promise.all([ep.amRecv(), ep.amSend(u8(1), { header: u8(0) })]));
      process.kill(peer.child.pid!, "SIGSTOP");
      const sends: { size: number; protocol: "auto" | "eager" | "rndv" | "ucx" | undefined; rendezvous: boolean }[] = [
        { size: 16 << 10, protocol: undefined, rendezvous: false },
        { size: 64 << 10, protocol: "auto", rendezvous: false },
        { size: 40_000, protocol: "eager", rendezvous: false },
        { size: 16 << 10, protocol: "rndv", rendezvous: true },
        { size: 1 << 20, protocol: undefined, rendezvous: true }, // auto above 64 KiB: UCX's choice, rendezvous at 1 MiB
        { size: 1 << 20, protocol: "ucx", rendezvous: true },
      ];
      const states = sends.map((s, i) => settledOf(ep.amSend(pattern(s.size, i + 1), { header: u8(i + 1), protocol: s.protocol })));
      try {
        const eager = states.filter((_, i) => !sends[i]!.rendezvous);
        await run(
          (async () => {
            for (let t = 0; eager.some((s) => !s.done); t++) {
              if (t > 1000) throw new Error("eager sends did not complete within 10 s with the peer stopped");
              await new Promise((r) => setTimeout(r, 10));
            }
          })(),
        );
        for (const [i, s] of states.entries()) if (!sends[i]!.rendezvous) assert.is(s.error, undefined, `message ${i}`);
        await run(new Promise((r) => setTimeout(r, 200)));
        for (const [i, s] of states.entries()) if (sends[i]!.rendezvous) assert.not.ok(s.done, `message ${i} (${sends[i]!.protocol}, ${sends[i]!.size} B) completed with the peer stopped`);
      } finally {
        process.kill(peer.child.pid!, "SIGCONT");
      }
      for (const [i, s] of sends.entries()) {
        const m = await run(ep.amRecv());
        assert.equal(m.header, u8(i + 1), `message ${i} back in order`);
        assert.ok(m.data.length === s.size && samePattern(m.data, i + 1), `message ${i}: every byte`);
      }
      for (const s of states) assert.ok(s.done && s.error === undefined);
      assert.throws(() => ep.amSend(u8(1), { protocol: "fast" as "eager" }), (e: unknown) => e instanceof UcxError && /protocol must be one of auto, eager, rndv, ucx/.test((e as Error).message));
      const end = new TextEncoder().encode("end");
      await run(Promise.all([ep.amRecv(), ep.amSend(u8(), { header: end })]));
      assert.is(await run(peer.exited), 0);
    });
  });

  test.run();
}

const c = suite("core/am with UCX's C example as the peer");
const example = ucpClientServer();
if ("reason" in example) skipWithReason(c, "ucp_client_server sends AM id 0 without a header", example.reason);
else
  c("ucp_client_server -c am sends AM id 0 without a header, eager (16 B) and rendezvous (1 MB); both arrive", async () => {
    const w = await Worker.create();
    const run = <T>(p: Promise<T>) => drive([w], p, 60_000);
    try {
      for (const size of [16, 1_000_000]) {
        const listener = await run(w.listen({ host: "127.0.0.1", port: 0, protocol: "ucx" })); // a plain UCX client
        const child = spawn(example.path, ["-a", "127.0.0.1", "-p", String(listener.port), "-c", "am", "-s", String(size)], { stdio: "ignore" });
        const exited = new Promise<number | null>((resolve) => child.on("exit", resolve));
        const m = await run(w.amRecv());
        // generate_test_string: 'A' + i % 26, then a NUL.
        assert.is(m.data.length, size);
        assert.ok(m.data.subarray(0, size - 1).every((b, i) => b === 65 + (i % 26)), "the example's test string");
        assert.equal([m.header, m.memoryType], [u8(), 0]);
        assert.is(await run(exited), 0);
        await run(listener.close());
      }
    } finally {
      await run(w.close());
    }
  });
c.run();
