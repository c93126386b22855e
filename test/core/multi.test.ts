/**
 * Multi-buffer transfers (sendMulti / recvMulti, UCXX's wire format): the header bytes, batches
 * of every shape in one process and between two processes, concurrency on one endpoint, and
 * every malformed header a peer could send.
 */
import { suite } from "uvu";
import * as assert from "uvu/assert";
import {
  decodeHeader,
  encodeHeaders,
  FRAMES_PER_HEADER,
  HEADER_BYTES,
  HeaderFormatError,
  type UcxError,
} from "../../src/index.ts";
import { withPeer } from "../helpers/peer-process.ts";
import { MODES, pair, pattern, samePattern } from "../helpers/workers.ts";

// --- the header, byte for byte -------------------------------------------------------------

const header = suite("core/multi header");

/** A header as UCXX lays it out, written field by field from the format's description. */
function handHeader(next: number, sizes: readonly number[], cuda: readonly number[] = []): Uint8Array {
  const h = new Uint8Array(1209);
  h[0] = next;
  h[1] = sizes.length; // nframes, u64 little-endian: the low byte is enough here
  cuda.forEach((c, i) => (h[9 + 4 * i] = c));
  sizes.forEach((size, i) => {
    for (let b = 0; b < 8; b++) h[409 + 8 * i + b] = Math.floor(size / 2 ** (8 * b)) & 255;
  });
  return h;
}

header("the format's constants are UCXX's: 1,209-byte headers of 100 frames", () => {
  assert.is(HEADER_BYTES, 1209);
  assert.is(FRAMES_PER_HEADER, 100);
});

header("a known batch encodes to the hand-computed bytes", () => {
  const bytes = encodeHeaders([
    { size: 1, device: false },
    { size: 256, device: true },
    { size: 0, device: false },
    { size: 2 ** 40 + 5, device: false },
  ]);
  assert.is(bytes.length, 1209);
  assert.equal([...bytes.subarray(0, 17)], [0, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0]);
  assert.equal([...bytes.subarray(409, 441)], [1, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 5, 0, 0, 0, 0, 1, 0, 0]);
  assert.equal(bytes, handHeader(0, [1, 256, 0, 2 ** 40 + 5], [0, 1, 0, 0]));
});

header("101 frames take two headers: 100 with next = 1, then 1; zero frames take one empty header", () => {
  const sizes = Array.from({ length: 101 }, (_, i) => i);
  const bytes = encodeHeaders(sizes.map((size) => ({ size, device: false })));
  assert.is(bytes.length, 2 * 1209);
  assert.equal(bytes.subarray(0, 1209), handHeader(1, sizes.slice(0, 100)));
  assert.equal(bytes.subarray(1209), handHeader(0, [100]));
  assert.equal(encodeHeaders([]), handHeader(0, []));
});

header("decoding reads back what was encoded and refuses what UCXX would never send", () => {
  const frames = [{ size: 7, device: false }, { size: 2 ** 50, device: true }];
  assert.equal(decodeHeader(encodeHeaders(frames)), { next: false, frames });
  const refuse = (bytes: Uint8Array, length: number, pattern: RegExp) =>
    assert.throws(() => decodeHeader(bytes, length), (e: Error) => e instanceof HeaderFormatError && pattern.test(e.message));
  refuse(new Uint8Array(1209), 100, /1209 bytes; this message has 100/);
  refuse(handHeader(2, [1]), 1209, /'next' is 2/);
  const tooMany = handHeader(0, []);
  tooMany[1] = 101;
  refuse(tooMany, 1209, /101 frames; one header holds at most 100/);
  refuse(handHeader(0, [1], [7]), 1209, /isCUDA is 7/);
  const huge = handHeader(0, [1]);
  huge.fill(255, 409, 417);
  refuse(huge, 1209, /beyond 2\^53/);
});

header.run();

// --- in one process, every progress mode ---------------------------------------------------

/** Frames of the given sizes, frame i filled with pattern seed `seed + i`. */
function framesOf(sizes: readonly number[], seed = 0): Uint8Array[] {
  return sizes.map((size, i) => pattern(size, seed + i));
}

function assertFrames(got: readonly Uint8Array[], sizes: readonly number[], seed = 0, what = "batch"): void {
  assert.is(got.length, sizes.length, `${what}: frame count`);
  got.forEach((g, i) => {
    assert.is(g.length, sizes[i], `${what}: frame ${i} size`);
    assert.ok(samePattern(g, seed + i), `${what}: frame ${i} content`);
  });
}

const sizesOf = (n: number) => Array.from({ length: n }, (_, i) => (i * 37) % 3000);

for (const mode of MODES) {
  const test = suite(`core/multi (${mode})`);

  test("0, 1, 100, 101, 250 and 1,000 frames arrive in order, every byte checked", async () => {
    const p = await pair(mode);
    try {
      for (const [k, n] of [0, 1, 100, 101, 250, 1000].entries()) {
        const sizes = sizesOf(n);
        const [got] = await p.run(Promise.all([p.b.recvMulti(10 + k), p.ab.sendMulti(framesOf(sizes, k), 10 + k)]));
        assertFrames(got, sizes, k, `${n} frames`);
      }
    } finally {
      await p.close();
    }
  });

  test("concurrent batches on one endpoint: distinct tags, and the same tag in posting order", async () => {
    const p = await pair(mode);
    try {
      // Same tag: receives posted first, batches of different shapes sent back to back.
      const shapes = [3, 0, 120, 1, 45, 100, 7, 201];
      const recvs = shapes.map(() => p.b.recvMulti(77));
      const sends = shapes.map((n, k) => p.ab.sendMulti(framesOf(sizesOf(n), 100 * k), 77));
      const same = await p.run(Promise.all([...recvs, ...sends]));
      shapes.forEach((n, k) => assertFrames(same[k] as Uint8Array[], sizesOf(n), 100 * k, `same tag, batch ${k}`));
      // Distinct tags: sends first this time (unexpected messages), receives in reverse order.
      const sent = Array.from({ length: 20 }, (_, k) => p.ab.sendMulti(framesOf(sizesOf(k * 11), k), 1000 + k));
      const got = Array.from({ length: 20 }, (_, k) => p.b.recvMulti(1019 - k));
      const results = await p.run(Promise.all([...got, ...sent]));
      for (let k = 0; k < 20; k++) assertFrames(results[19 - k] as Uint8Array[], sizesOf(k * 11), k, `tag ${1000 + k}`);
    } finally {
      await p.close();
    }
  });

  test("a wildcard mask takes a whole batch from one sender's tag; frames go to their own buffers", async () => {
    const p = await pair(mode);
    try {
      const [got] = await p.run(Promise.all([p.b.recvMulti(0, { mask: 0 }), p.ab.sendMulti(framesOf([5, 0, 9000]), 4242)]));
      assertFrames(got, [5, 0, 9000]);
      got.forEach((g) => assert.is(g.byteOffset, 0));
      assert.is(new Set(got.map((g) => g.buffer)).size, 3);
    } finally {
      await p.close();
    }
  });

  test("malformed headers reject with a clear error and the endpoint stays usable", async () => {
    const p = await pair(mode);
    const expectError = async (tag: number, crafted: Uint8Array[], code: string, message: RegExp, limits = {}) => {
      const recv = p.b.recvMulti(tag, limits).then(
        () => assert.unreachable(`tag ${tag}: should have been refused`),
        (e: UcxError) => e,
      );
      for (const m of crafted) await p.run(p.ab.send(m, tag));
      const e = (await p.run(recv)) as UcxError;
      assert.is(e.name, "UcxError");
      assert.is(e.code, code, e.message);
      assert.match(e.message, message);
    };
    try {
      const tooMany = handHeader(0, []);
      tooMany[1] = 101;
      await expectError(1, [new Uint8Array(100)], "UCX_TS_PROTOCOL_ERROR", /1209 bytes; the message received was 100|this message has 100/);
      await expectError(2, [new Uint8Array(5000)], "UCX_TS_PROTOCOL_ERROR", /1209 bytes; the message received was 5000/);
      await expectError(3, [tooMany], "UCX_TS_PROTOCOL_ERROR", /101 frames/);
      await expectError(4, [handHeader(2, [1])], "UCX_TS_PROTOCOL_ERROR", /'next' is 2/);
      await expectError(5, [handHeader(1, [1]), handHeader(1, [1]), handHeader(0, [1])], "UCX_TS_LIMIT_EXCEEDED", /more than 2 headers/, {
        maxHeaders: 2,
      });
      await p.run(p.b.recv(new Uint8Array(1209), 5)); // the chain's last header, left unmatched
      await expectError(6, [handHeader(0, [600, 600])], "UCX_TS_LIMIT_EXCEEDED", /1200 bytes; maxBytes is 1000/, { maxBytes: 1000 });
      // The default limit is finite: a header announcing 1 TiB is refused before any allocation.
      await expectError(7, [handHeader(0, [2 ** 40])], "UCX_TS_LIMIT_EXCEEDED", /maxBytes is 4294967296/);
      // A frame the sender marked device memory arrives in host memory unless the receiver asks
      // for device frames (deviceFrames: "device", test/cuda/gpu.test.ts).
      const deviceFrame = p.b.recvMulti(8);
      for (const m of [handHeader(0, [16], [1]), pattern(16, 8)]) await p.run(p.ab.send(m, 8));
      assert.ok(samePattern((await p.run(deviceFrame))[0]!, 8), "a frame marked device memory, received in host memory");
      await expectError(9, [handHeader(0, [10]), pattern(20, 0)], "UCX_TS_PROTOCOL_ERROR", /frame 0 is 20 bytes; its header said 10/);
      // A frame shorter than announced.
      await expectError(10, [handHeader(0, [10, 3]), pattern(4, 0), pattern(3, 1)], "UCX_TS_PROTOCOL_ERROR", /frame 0 is 4 bytes/);
      // And the endpoint still carries a good batch both ways.
      const [got] = await p.run(Promise.all([p.b.recvMulti(11), p.ab.sendMulti(framesOf([1, 2, 3]), 11)]));
      assertFrames(got, [1, 2, 3]);
    } finally {
      await p.close();
    }
  });

  test("bad arguments are refused up front; aborting a posted or queued receive rejects with UCS_ERR_CANCELED", async () => {
    const p = await pair(mode);
    try {
      assert.throws(() => p.b.recvMulti(1, { maxBytes: -1 }), (e: UcxError) => e.code === "UCX_TS_INVALID_ARGUMENT");
      assert.throws(() => p.b.recvMulti(1, { maxHeaders: 0 }), (e: UcxError) => e.code === "UCX_TS_INVALID_ARGUMENT");
      assert.throws(() => p.ab.sendMulti("no" as never, 1), (e: UcxError) => e.code === "UCX_TS_INVALID_ARGUMENT");
      assert.throws(() => p.ab.sendMulti([new Uint8Array(1), 5 as never], 1), (e: UcxError) => e.code === "UCX_TS_INVALID_ARGUMENT");
      const first = new AbortController();
      const second = new AbortController();
      const posted = p.b.recvMulti(50, { signal: first.signal }).catch((e: UcxError) => e.code);
      const queued = p.b.recvMulti(50, { signal: second.signal }).catch((e: UcxError) => e.code);
      const third = p.b.recvMulti(50);
      await p.run(new Promise((r) => setTimeout(r, 20)));
      second.abort();
      first.abort();
      assert.is(await p.run(posted), "UCS_ERR_CANCELED");
      assert.is(await p.run(queued), "UCS_ERR_CANCELED");
      // The receive behind them still gets the next batch on that tag.
      const [got] = await p.run(Promise.all([third, p.ab.sendMulti(framesOf([4, 4]), 50)]));
      assertFrames(got, [4, 4]);
      assert.is(p.b.pendingRequests, 0);
    } finally {
      await p.close();
    }
  });

  test.run();
}

// --- two processes ---------------------------------------------------------------------------

for (const mode of MODES) {
  const test = suite(`core/multi two processes (${mode})`);

  const name = "an echo peer returns batches of 1, 100, 101, 250, 1,000 frames and 64 MiB frames among empty ones";
  test(name, async () => {
    await withPeer(mode, "multi", async ({ ep, run, peer }) => {
      const batches = [[7], sizesOf(100), sizesOf(101), sizesOf(250), sizesOf(1000), [0, 64 << 20, 0, 1, 0, 64 << 20, 0]];
      for (const [k, sizes] of batches.entries()) {
        const [back] = await run(Promise.all([ep.recvMulti(2), ep.sendMulti(framesOf(sizes, k), 1)]));
        assertFrames(back, sizes, k, `batch ${k} (${sizes.length} frames)`);
      }
      // Zero frames: one empty header each way, and the peer's signal to finish.
      const [last] = await run(Promise.all([ep.recvMulti(2), ep.sendMulti([], 1)]));
      assert.equal(last, []);
      assert.is(await run(peer.exited), 0);
    });
  });

  test.run();
}
