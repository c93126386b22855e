/**
 * ucx-ts's staged device frames in multi-buffer batches (src/core/multi/header.ts): the header's
 * isCUDA = log2(chunk) and the chunked messages, received by any ucx-ts receiver, with or without
 * CUDA (no libcudart is needed here: the frames arrive in host memory).
 */
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { decodeHeader, encodeHeaders, type UcxError } from "../../src/index.ts";
import { messagesOf } from "../../src/core/multi/header.ts";
import { chunkBytesFor } from "../../src/core/cuda/transfers.ts";
import { pair, pattern, samePattern } from "../helpers/workers.ts";

const test = suite("cuda/staged device frames");

test("isCUDA carries log2 of the chunk; 0 and 1 keep UCXX's meaning; other values are refused", () => {
  const frames = [
    { size: 3 << 20, device: true, chunkBytes: 1 << 19 },
    { size: 10, device: false },
    { size: 0, device: true, chunkBytes: 1 << 16 },
    { size: 5, device: true },
  ];
  const bytes = encodeHeaders(frames);
  assert.equal([bytes[9], bytes[13], bytes[17], bytes[21]], [19, 0, 16, 1]);
  assert.equal(decodeHeader(bytes).frames, frames);
  assert.equal(frames.map(messagesOf), [6, 1, 1, 1]);
  assert.throws(() => encodeHeaders([{ size: 8, device: true, chunkBytes: 3000 }]), /power of two/);
  assert.throws(() => encodeHeaders([{ size: 8, device: false, chunkBytes: 1 << 16 }]), /device frame/);
  for (const bad of [2, 15, 31, -1]) {
    const h = encodeHeaders([{ size: 1, device: true }]);
    new DataView(h.buffer).setInt32(9, bad, true);
    assert.throws(() => decodeHeader(h), new RegExp(`isCUDA is ${bad}`));
  }
});

test("the sender's chunk: about 8 per frame, 256 KiB to 8 MiB", () => {
  assert.is(chunkBytesFor(1), 256 << 10);
  assert.is(chunkBytesFor(3 << 20), 512 << 10);
  assert.is(chunkBytesFor(64 << 20), 8 << 20);
  assert.is(chunkBytesFor(1 << 30), 8 << 20);
});

test("a batch with chunked device frames is received whole (host memory here); a wrong chunk is a protocol error", async () => {
  const p = await pair("thread");
  try {
    const size = 300_000;
    const chunk = 1 << 16;
    const header = encodeHeaders([{ size, device: true, chunkBytes: chunk }, { size: 7, device: false }]);
    const whole = pattern(size, 5);
    const recv = p.b.recvMulti(4);
    await p.run(p.ab.send(header, 4));
    for (let at = 0; at < size; at += chunk) await p.run(p.ab.send(whole.subarray(at, Math.min(size, at + chunk)), 4));
    await p.run(p.ab.send(pattern(7, 6), 4));
    const frames = await p.run(recv);
    assert.is(frames.length, 2);
    assert.ok(samePattern(frames[0]!, 5) && frames[0]!.length === size, "the chunks reassembled in order");
    assert.ok(samePattern(frames[1]!, 6));

    const bad = p.b.recvMulti(5).then(
      () => assert.unreachable("a short chunk must be refused"),
      (e: UcxError) => e,
    );
    await p.run(p.ab.send(encodeHeaders([{ size: 2 * chunk, device: true, chunkBytes: chunk }]), 5));
    await p.run(p.ab.send(new Uint8Array(100), 5));
    await p.run(p.ab.send(new Uint8Array(chunk), 5));
    const e = (await p.run(bad)) as UcxError;
    assert.is(e.code, "UCX_TS_PROTOCOL_ERROR", e.message);
  } finally {
    await p.close();
  }
});

test.run();
