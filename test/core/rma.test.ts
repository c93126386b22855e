/**
 * Remote memory access: registered memory, remote keys, put/get, atomics, and the refusals that
 * keep bad input away from UCX (out of range, misaligned, released key, unmapping in use).
 */
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { Worker, type UcxError } from "../../src/index.ts";
import { runtime } from "../../src/ffi/index.ts";
import { skipWithReason } from "../helpers/skip.ts";
import { withPeer } from "../helpers/peer-process.ts";
import { MODES, pair, pattern, samePattern } from "../helpers/workers.ts";
import { checkAtomicSemantics } from "../helpers/atomic-semantics.ts";

const code = (e: unknown) => (e as UcxError).code;

for (const mode of MODES) {
  const test = suite(`core/rma (${mode})`);

  test("put and get of 1 B .. 64 MiB land where they should, checked on the owner's side", async () => {
    const p = await pair(mode);
    try {
      const mem = await p.run(p.b.memMap((64 << 20) + 4096));
      const rkey = await p.run(p.ab.unpackRkey(await p.run(mem.packRkey())));
      assert.is(rkey.address, mem.address);
      assert.is(rkey.length, mem.length);
      for (const [k, size] of [1, 4096, 1 << 20, 64 << 20].entries()) {
        const at = 4096 - k; // unaligned offsets too
        await p.run(p.ab.put(pattern(size, k), mem.address + at, rkey));
        await p.run(p.ab.flush());
        assert.ok(samePattern(mem.bytes.subarray(at, at + size), k), `put of ${size} bytes`);
        mem.bytes.set(pattern(size, k + 50), at);
        const back = new Uint8Array(size);
        await p.run(p.ab.get(back, mem.address + at, rkey));
        assert.ok(samePattern(back, k + 50), `get of ${size} bytes`);
      }
      await p.run(rkey.destroy());
      await p.run(mem.unmap());
    } finally {
      await p.close();
    }
  });

  test("every atomic on 32- and 64-bit words gives the values ucp.h defines", async () => {
    const p = await pair(mode);
    try {
      const mem = await p.run(p.b.memMap(64));
      const rkey = await p.run(p.ab.unpackRkey(await p.run(mem.packRkey())));
      await checkAtomicSemantics((x) => p.run(x), p.ab, rkey, mem);
    } finally {
      await p.close();
    }
  });

  test("refusals: out of range, misaligned, wrong key, released key, unmapping memory in use", async () => {
    const p = await pair(mode);
    try {
      const mem = await p.run(p.b.memMap(4096));
      const rkey = await p.run(p.ab.unpackRkey(await p.run(mem.packRkey())));
      assert.throws(() => p.ab.put(new Uint8Array(10), mem.address + 4090, rkey), (e: UcxError) => e.code === "UCS_ERR_OUT_OF_RANGE");
      assert.throws(() => p.ab.get(new Uint8Array(1), mem.address - 1, rkey), (e: UcxError) => e.code === "UCS_ERR_OUT_OF_RANGE");
      assert.throws(() => p.ab.atomic("add", mem.address + 4, rkey, 1), (e: UcxError) => /aligned/.test(e.message));
      assert.throws(() => p.ab.atomic("nand" as never, mem.address, rkey, 1), (e: UcxError) => e.code === "UCX_TS_INVALID_ARGUMENT");
      assert.throws(() => p.ab.atomic("cswap", mem.address, rkey, 1), (e: UcxError) => /compare/.test(e.message));
      await p.run(p.ab.unpackRkey(new Uint8Array(40)).then(() => assert.unreachable(), (e) => assert.is(code(e), "UCX_TS_INVALID_ARGUMENT")));
      // A key works on the endpoint it was unpacked for only.
      const other = await p.run(p.b.address().then((a) => p.a.connect(a)));
      assert.throws(() => other.put(new Uint8Array(1), mem.address, rkey), (e: UcxError) => /another endpoint/.test(e.message));
      // Local registered memory in flight cannot be unmapped; the remote key neither.
      const local = await p.run(p.a.memMap(1 << 20));
      assert.throws(() => p.ab.get(local.bytes, mem.address, { ...rkey } as never), (e: UcxError) => /must be a RemoteKey/.test(e.message));
      const big = await p.run(p.b.memMap(1 << 20));
      const bigKey = await p.run(p.ab.unpackRkey(await p.run(big.packRkey())));
      // Both refusals are decided when called, while the get is surely in flight.
      const inFlight = p.ab.get(local.bytes, big.address, bigKey);
      const unmapping = local.unmap().then(() => "unmapped", code);
      const destroying = bigKey.destroy().then(() => "destroyed", code);
      assert.equal(await p.run(Promise.all([unmapping, destroying])), ["UCS_ERR_BUSY", "UCS_ERR_BUSY"]);
      await p.run(inFlight);
      await p.run(local.unmap());
      await p.run(bigKey.destroy());
      assert.throws(() => p.ab.put(new Uint8Array(1), big.address, bigKey), (e: UcxError) => e.code === "UCX_TS_CLOSED");
      assert.throws(() => local.packRkey(), (e: UcxError) => e.code === "UCX_TS_CLOSED");
      await p.run(other.close());
    } finally {
      await p.close();
    }
  });

  test("memory UCX allocates (allocator 'ucx') is read and written by JS and reached by put/get", async () => {
    const p = await pair(mode);
    try {
      const mem = await p.run(p.b.memMap(1 << 20, { allocator: "ucx" }));
      assert.is(mem.length, 1 << 20);
      assert.ok(mem.address !== 0);
      const rkey = await p.run(p.ab.unpackRkey(await p.run(mem.packRkey())));
      await p.run(p.ab.put(pattern(70_000, 4), mem.address + 10, rkey));
      await p.run(p.ab.flush());
      assert.ok(samePattern(mem.bytes.subarray(10, 70_010), 4));
      mem.bytes.set(pattern(1000, 6), 5000);
      const back = new Uint8Array(1000);
      await p.run(p.ab.get(back, mem.address + 5000, rkey));
      assert.ok(samePattern(back, 6));
      assert.is(await p.b.memMap(new Uint8Array(8), { allocator: "ucx" }).then(() => "mapped", code), "UCX_TS_INVALID_ARGUMENT");
      await p.run(rkey.destroy());
      await p.run(mem.unmap());
      if (runtime !== "node") assert.is(mem.bytes.length, 0, "unmap detached the view of UCX's memory");
    } finally {
      await p.close();
    }
  });

  test("a worker without the amo features refuses atomics with a clear error", async () => {
    const p = await pair(mode, { features: ["tag", "rma"] });
    try {
      const mem = await p.run(p.b.memMap(64));
      const rkey = await p.run(p.ab.unpackRkey(await p.run(mem.packRkey())));
      assert.throws(() => p.ab.atomic("add", mem.address, rkey, 1), (e: UcxError) => /'amo64' feature/.test(e.message));
      assert.throws(() => p.ab.atomic("add", mem.address, rkey, 1, { bits: 32 }), (e: UcxError) => /'amo32' feature/.test(e.message));
      // The endpoint never carried anything: let its shared-memory lanes finish wiring up before
      // both workers go (else UCX prints "shmat ... failed" as the peer's segment disappears).
      await p.run(p.ab.flush());
    } finally {
      await p.close();
    }
  });

  test.run();
}

const detach = suite("core/rma (views of UCX's memory)");
if (runtime === "node") {
  skipWithReason(detach, "unmap detaches the view of UCX-allocated memory", "koffi's views of C memory cannot be detached on Node (structuredClone copies them): the view must not be used after unmap()");
} else {
  detach("unmap and worker close detach the view of UCX-allocated memory", async () => {
    const w = await Worker.create({ progressMode: "polling" });
    const a = await w.settled(w.memMap(4096, { allocator: "ucx" }));
    const b = await w.settled(w.memMap(4096, { allocator: "ucx" }));
    const keep = new Uint8Array(b.bytes.buffer, 100, 10); // another view of the same buffer
    await w.settled(a.unmap());
    assert.is(a.bytes.length, 0);
    await w.close();
    assert.is(b.bytes.length, 0);
    assert.is(keep.length, 0);
  });
}
detach.run();

for (const mode of MODES) {
  const test = suite(`core/rma two processes (${mode})`);

  test("put/get against another process's memory, flush ordering, and concurrent atomics from both processes", async () => {
    await withPeer(mode, "rma", async ({ worker: w, ep, run, peer }) => {
      const ask = async (tag: number, offset: number, length: number, seed: number) => {
        const answer = new Uint8Array(1);
        const r = ep.recv(answer, tag + 1);
        await run(ep.send(new Float64Array([offset, length, seed]), tag));
        await run(r);
        return answer[0];
      };
      const packed = new Uint8Array(4096);
      const { length } = await run(ep.recv(packed, 7));
      const rkey = await run(ep.unpackRkey(packed.subarray(0, length)));
      for (const [k, size] of [1, 4096, 1 << 20, 64 << 20].entries()) {
        // put, flush, then a message: the owner sees the data when the message arrives.
        await run(ep.put(pattern(size, k), rkey.address + 7, rkey));
        await run(ep.flush());
        assert.is(await ask(10, 7, size, k), 1, `put of ${size} bytes seen by the owner`);
        assert.is(await ask(12, 64, size, k + 9), 0); // the owner fills, then we get
        const back = new Uint8Array(size);
        await run(ep.get(back, rkey.address + 64, rkey));
        assert.ok(samePattern(back, k + 9), `get of ${size} bytes`);
      }
      // 1,000 adds from here and 1,000 from the owner itself, at the same time, on one word.
      const counter = rkey.address + (64 << 20) + 8;
      await run(ep.atomic("swap", counter, rkey, 0n));
      const owner = ask(20, (64 << 20) + 8, 1000, 0);
      const mine = Promise.all(Array.from({ length: 1000 }, () => ep.atomic("add", counter, rkey, 1)));
      await run(Promise.all([owner, mine]));
      await run(ep.flush());
      assert.is(await run(ep.atomic("add", counter, rkey, 0, { fetch: true })), 2000n);
      await run(rkey.destroy());
      await run(ep.send(new Float64Array(3), 0));
      assert.is(await run(peer.exited), 0);
    });
  });

  test.run();
}
