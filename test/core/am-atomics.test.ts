/**
 * Atomics over active messages (engine/am-atomics.ts): what ucx-ts does on endpoints with peer
 * error handling where UCX >= 1.16 (protocols v2) has no atomic protocol. Forced on here
 * (UCX_TS_ATOMICS_OVER_AM=1) so that the path runs on every UCX, the 1.13 of CI included: every
 * value ucp.h defines, atomics from two processes on one word, the target's refusal of memory
 * it never exported and of forged or malformed requests, and a request whose target dies.
 */
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { UcxError, Worker } from "../../src/index.ts";
import { ATOMIC_AM_ID, ATOMIC_REQUEST_BYTES, encodeAtomicRequest } from "../../src/core/engine/am-atomic-wire.ts";
import { startPeer, withPeer } from "../helpers/peer-process.ts";
import { drive, MODES, pair } from "../helpers/workers.ts";
import { checkAtomicSemantics } from "../helpers/atomic-semantics.ts";

/** A request as a peer could forge it, with `patch` bytes written over the encoding. */
function forged(op: number, size: 4 | 8, address: number, value: bigint, patch: Record<number, number> = {}, length = ATOMIC_REQUEST_BYTES): Uint8Array {
  const header = new Uint8Array(ATOMIC_REQUEST_BYTES);
  encodeAtomicRequest(header, { op, size, fetch: true, token: 77, address, value, compare: 0n });
  for (const [at, b] of Object.entries(patch)) header[Number(at)] = b;
  if (length <= ATOMIC_REQUEST_BYTES) return header.slice(0, length);
  const longer = new Uint8Array(length);
  longer.set(header);
  return longer;
}

for (const mode of MODES) {
  const test = suite(`core/am-atomics (${mode})`);
  test.before(() => {
    process.env.UCX_TS_ATOMICS_OVER_AM = "1";
  });
  test.after(() => {
    delete process.env.UCX_TS_ATOMICS_OVER_AM;
  });

  test("every atomic on 32- and 64-bit words gives the values ucp.h defines, carried over active messages", async () => {
    const p = await pair(mode, { errorHandling: "peer" });
    try {
      const mem = await p.run(p.b.memMap(64));
      const rkey = await p.run(p.ab.unpackRkey(await p.run(mem.packRkey())));
      const issued = await checkAtomicSemantics((x) => p.run(x), p.ab, rkey, mem);
      // Where the executors run on this thread, the counts show the path was taken.
      const target = p.b.amAtomics();
      if (target) assert.is(target.served, issued, "every atomic was served by the target over AM");
      const initiator = p.a.amAtomics();
      if (initiator) assert.is(initiator.waiting, 0);
      await p.run(rkey.destroy());
      await p.run(mem.unmap());
    } finally {
      await p.close();
    }
  });

  test("a peer's forged requests reach only exported memory; malformed ones are dropped; honest atomics carry on", async () => {
    const p = await pair(mode, { errorHandling: "peer" });
    try {
      const run = <T>(x: Promise<T>) => p.run(x);
      const open = await run(p.b.memMap(64));
      const secret = await run(p.b.memMap(64)); // registered, its key never packed
      const rkey = await run(p.ab.unpackRkey(await run(open.packRkey())));
      const openWord = new DataView(open.bytes.buffer, open.bytes.byteOffset);
      const send = (header: Uint8Array, data = new Uint8Array(0)) => run(p.ab.amSend(data, { amId: ATOMIC_AM_ID, header }));
      await send(forged(0, 8, open.address, 5n)); // a valid request by hand: served
      await send(forged(0, 8, secret.address, 5n)); // memory never exported: refused
      await send(forged(0, 8, open.address + 64, 5n)); // just past the exported memory
      await send(forged(0, 8, open.address - 8, 5n)); // just before it
      const malformed = [
        forged(0, 8, open.address, 1n, {}, 31), // truncated
        forged(0, 8, open.address, 1n, {}, 40), // too long
        forged(0, 8, open.address, 1n, { 0: 9 }), // unknown kind
        forged(0, 8, open.address, 1n, { 1: 6 }), // unknown op
        forged(0, 8, open.address, 1n, { 2: 3 }), // size 3
        forged(0, 8, open.address, 1n, { 3: 0x80 }), // unknown flag
        forged(0, 8, open.address + 4, 1n), // misaligned
        forged(0, 4, open.address, 1n, { 20: 1 }), // a 32-bit operand with high bits
        forged(0, 8, open.address, 1n, { 24: 1 }), // a compare value on add
        forged(0, 8, 0, 1n), // address 0
      ];
      for (const m of malformed) await send(m);
      await send(forged(0, 8, open.address, 1n), new Uint8Array(8)); // data attached
      // An honest atomic behind them on the same endpoint: served after all of them.
      assert.is(await run(p.ab.atomic("add", open.address + 8, rkey, 1, { fetch: true })), 0n);
      assert.is(openWord.getBigUint64(0, true), 5n, "only the valid forged request changed the exported word");
      assert.ok(secret.bytes.every((b) => b === 0), "memory never exported is untouched");
      assert.ok(open.bytes.subarray(16).every((b) => b === 0), "nothing else of the exported memory changed");
      const target = p.b.amAtomics();
      if (target) {
        assert.is(target.served, 5, "the valid request, three refused ones and the honest atomic were answered");
        assert.is(target.dropped, malformed.length + 1, "every malformed request was dropped");
      }
      const initiator = p.a.amAtomics();
      if (initiator) assert.is(initiator.dropped, 4, "the answers to the forged requests match no request of ours");
      assert.is(await run(p.ab.atomic("add", open.address, rkey, 1, { fetch: true })), 5n);
      await run(rkey.destroy());
    } finally {
      await p.close();
    }
  });

  test("1,000 adds from each of two processes on one word, over active messages on both sides", async () => {
    await withPeer(mode, "rma", async ({ ep, run, peer }) => {
      const packed = new Uint8Array(4096);
      const { length } = await run(ep.recv(packed, 7));
      const rkey = await run(ep.unpackRkey(packed.subarray(0, length)));
      const offset = 64 << 20;
      const counter = rkey.address + offset;
      await run(ep.atomic("swap", counter, rkey, 0n));
      // The owner adds through an endpoint to itself (peer error handling: over AM too).
      const answer = new Uint8Array(1);
      const done = ep.recv(answer, 21);
      await run(ep.send(new Float64Array([offset, 1000, 0]), 20));
      const mine = Promise.all(Array.from({ length: 1000 }, () => ep.atomic("add", counter, rkey, 1)));
      await run(Promise.all([done, mine]));
      assert.is(await run(ep.atomic("add", counter, rkey, 0, { fetch: true })), 2000n);
      await run(rkey.destroy());
      await run(ep.send(new Float64Array(3), 0));
      assert.is(await run(peer.exited), 0);
    });
  });

  test("an atomic waiting for its reply rejects when the target dies; the worker carries on", async () => {
    // The peer accepts, progresses one second more, then never again: no reply ever comes.
    const peer = await startPeer("polling", "peer", "silent");
    const w = await Worker.create({ progressMode: mode });
    const run = <T>(q: Promise<T>, ms = 60_000) => drive([w], q, ms);
    try {
      const ep = await run(w.connect({ host: "127.0.0.1", port: peer.port }));
      await run(new Promise((r) => setTimeout(r, 1500)));
      // A key of our own memory, unpacked for the endpoint: the request goes to the peer regardless.
      const mem = await run(w.memMap(64));
      const rkey = await run(ep.unpackRkey(await run(mem.packRkey())));
      const settle = (q: Promise<unknown>) => q.then(() => null, (e: unknown) => e);
      const pending = [settle(ep.atomic("add", mem.address, rkey, 1, { fetch: true })), settle(ep.atomic("swap", mem.address + 8, rkey, 2))];
      await run(new Promise((r) => setTimeout(r, 300)));
      const atomics = w.amAtomics();
      if (atomics) assert.is(atomics.waiting, 2, "both wait for a reply");
      peer.kill("SIGKILL");
      const results = await run(Promise.all(pending));
      for (const r of results) assert.instance(r, UcxError, String(r));
      if (atomics) assert.is(atomics.waiting, 0, "none stays behind the failed endpoint");
      await run(ep.close());
      await run(mem.unmap());
    } finally {
      peer.kill();
      await run(w.close());
    }
  });

  test.run();
}
