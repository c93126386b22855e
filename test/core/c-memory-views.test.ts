/**
 * The per-operation paths read and write C memory by copying, never through a view of it.
 *
 * A view (koffi.view, Deno's UnsafePointerView.getArrayBuffer, Bun's toArrayBuffer) is an
 * external ArrayBuffer: under Node each holds ~200 B of malloc (node::Buffer's CallbackInfo and
 * the backing store's records) until the isolate that made it runs a full collection, which V8
 * does not schedule for memory it cannot see. A progress thread allocates little JavaScript, so
 * one view per batch there grew malloc for as long as the soak ran (issue 26: +3.5 MiB per 100k
 * operations over 40,000 operations; a worker_thread that made 2.5 million views held 500 MiB,
 * all of it freed by one full collection: docs/testing.md). This counts the views that windows,
 * multi-buffer batches, active messages and failed operations make, in polling mode, where the
 * executor runs on this thread (thread mode runs the same executor code on its progress thread).
 */
import { test } from "uvu";
import * as assert from "uvu/assert";
import { ucx } from "../../src/core/library.ts";
import type { UcxError } from "../../src/index.ts";
import { helloEndpoints, pair, pattern } from "../helpers/workers.ts";

test("the paths of windows, multi-buffer batches, active messages and failures make no view of C memory", async () => {
  const u = ucx();
  const p = await pair("polling");
  const { ab, ba } = await helloEndpoints(p.a, p.b, p.run);
  const mem = await p.run(p.b.memMap(1 << 20));
  const rkey = await p.run(p.ab.unpackRkey(await p.run(mem.packRkey())));
  const view = u.view;
  let views = 0;
  u.view = (address, length) => {
    views++;
    return view(address, length);
  };
  try {
    const round = async (k: number) => {
      // sendMany / recvMany windows (descriptors read and, for receives, written back).
      const sizes = Array.from({ length: 64 }, (_, i) => (i % 9 === 0 ? 9000 : 8));
      const buffers = sizes.map(() => new Uint8Array(9000));
      const [got] = await p.run(Promise.all([ba.recvMany(buffers, 50 + k), ab.sendMany(sizes.map((s, i) => pattern(s, i + k)), 50 + k)]));
      assert.equal(got.map((r) => r.length), sizes, "recvMany lengths come back");
      assert.equal(got.map((r) => r.tag), sizes.map(() => 50 + k), "recvMany tags come back");
      // A multi-buffer batch.
      const frames = [pattern(10, k), pattern(70_000, k + 1), pattern(0, 0)];
      const [multi] = await p.run(Promise.all([p.b.recvMulti(60 + k), p.ab.sendMulti(frames, 60 + k)]));
      assert.equal(multi.map((f) => f.length), [10, 70_000, 0]);
      // Active messages, one at a time and as a window, small and past the staging area (64 KiB).
      const [one] = await p.run(Promise.all([p.b.amRecv(), p.ab.amSend(pattern(100_000, k))]));
      assert.is(one.data.length, 100_000);
      one.release();
      const [window] = await p.run(Promise.all([p.b.amRecvMany(8), p.ab.amSendMany(Array.from({ length: 8 }, (_, i) => pattern(i * 20_000, i)))]));
      assert.equal(window.map((m) => m.data.length), Array.from({ length: 8 }, (_, i) => i * 20_000));
      for (const m of window) m.release();
      // One-sided and atomic operations.
      await p.run(p.ab.put(pattern(500_000, k), mem.address + k, rkey));
      const back = new Uint8Array(500_000);
      await p.run(p.ab.get(back, mem.address + k, rkey));
      assert.equal(back, pattern(500_000, k), "get reads what put wrote");
      await p.run(p.ab.atomic("add", mem.address + 1024, rkey, 1n));
      // A failure (its UCX status text).
      const small = ba.recv(new Uint8Array(4), 70 + k);
      await p.run(ab.send(pattern(64, 0), 70 + k).catch(() => {}));
      assert.is(((await p.run(small.catch((e: unknown) => e))) as UcxError).code, "UCS_ERR_MESSAGE_TRUNCATED");
    };
    await round(0); // first use: status texts read once, buffers and pools set up
    views = 0;
    for (let k = 1; k <= 5; k++) await round(k);
    assert.is(views, 0, "views of C memory made by five rounds of operations");
  } finally {
    u.view = view;
    await p.run(rkey.destroy());
    await p.run(mem.unmap());
    await p.close();
  }
});

test.run();
