/**
 * UCT between two interfaces of one process, over every transport this host reports that
 * supports the operation: active messages (short, bcopy, zcopy) with content checks, a flood
 * that meets UCS_ERR_NO_RESOURCE and goes through the pending queue without losing or
 * duplicating a message, put/get and atomics checked in the owner's memory, flush semantics,
 * keeping AM descriptors, and bad input.
 */
import { suite } from "uvu";
import * as assert from "uvu/assert";
import {
  UCS_ERR_NO_RESOURCE,
  UCS_INPROGRESS,
  UCS_OK,
  UctCompletion,
  UctMemory,
  UctRemoteKey,
  type UctAmMessage,
  type UctHeldMessage,
} from "../../../src/core/uct/index.ts";
import type { UcxError } from "../../../src/index.ts";
import { pattern, same, uctPair, uctTargets, type UctPair, type UctTarget } from "../../helpers/uct.ts";

const code = (e: unknown) => (e as UcxError).code;
const has = (p: UctPair, cap: string) => p.a.attributes.capabilities.includes(cap);

function modes(t: UctTarget): Array<"iface" | "ep"> {
  const p = uctPair(t);
  const m: Array<"iface" | "ep"> = [];
  if (p.a.attributes.connectToInterface) m.push("iface");
  if (p.a.attributes.connectToEndpoint) m.push("ep");
  p.close();
  return m;
}

for (const target of uctTargets()) {
  for (const mode of modes(target)) {
    const name = `${target.transport}/${target.device} connect-to-${mode}`;
    const test = suite(`core/uct one process (${name})`);

    test("active messages short, bcopy and zcopy make a round trip with their content", async () => {
      const p = uctPair(target, mode);
      try {
        if (!["am_short", "am_bcopy", "am_zcopy"].some((c) => has(p, c))) {
          assert.throws(() => p.b.setAmHandler(1, () => {}), (e: unknown) => code(e) === "UCS_ERR_UNSUPPORTED");
          return;
        }
        const got: Array<{ id: number; data: Uint8Array }> = [];
        const atB: Uint8Array[] = [];
        // b echoes every message back to a with am_bcopy (id + 8), a records what comes back.
        for (const id of [1, 2, 3]) {
          p.b.setAmHandler(id, (m: UctAmMessage) => {
            // Larger than a bcopy (a zcopy of 50 KB over tcp): b keeps it and acks with its length.
            const copy = m.data.slice();
            const fits = copy.length <= p.b.attributes.am.maxBcopy;
            if (!fits) atB.push(copy);
            const reply = fits ? copy : new Uint8Array(new Uint32Array([copy.length]).buffer);
            if (p.ba.amBcopy(id + 8, reply) === UCS_ERR_NO_RESOURCE) {
              p.ba.pendingAdd(() => (p.ba.amBcopy(id + 8, reply) === UCS_ERR_NO_RESOURCE ? UCS_ERR_NO_RESOURCE : UCS_OK));
            }
          });
          p.a.setAmHandler(id + 8, (m: UctAmMessage) => void got.push({ id: m.id, data: m.data.slice() }));
        }
        const sent: Array<{ id: number; data: Uint8Array }> = [];
        const send = async (id: number, data: Uint8Array, op: () => number) => {
          let s = op();
          while (s === UCS_ERR_NO_RESOURCE) {
            p.worker.progress();
            s = op();
          }
          sent.push({ id: id + 8, data });
          await p.worker.progressUntil(() => got.length === sent.length, { what: `echo of AM ${id}` });
        };
        if (has(p, "am_short")) {
          const payload = pattern(Math.min(64, p.a.attributes.am.maxShort - 8), 1);
          const header = new Uint8Array(8);
          new DataView(header.buffer).setBigUint64(0, 0x1122334455667788n, true);
          const whole = new Uint8Array(8 + payload.length);
          whole.set(header);
          whole.set(payload, 8);
          await send(1, whole, () => p.ab.amShort(1, 0x1122334455667788n, payload));
        }
        if (has(p, "am_bcopy")) {
          const data = pattern(Math.min(4000, p.a.attributes.am.maxBcopy), 2);
          await send(2, data, () => p.ab.amBcopy(2, data));
          // a pack function writing into UCT's buffer
          const packed = pattern(100, 3);
          await send(2, packed, () => p.ab.amBcopy(2, (dest) => (dest.set(packed), packed.length)));
        }
        if (has(p, "am_zcopy")) {
          const header = pattern(Math.min(8, p.a.attributes.am.maxHeader), 4);
          const part1 = pattern(20_000, 5);
          const part2 = pattern(30_000, 6);
          const comp = new UctCompletion();
          comp.count = 1;
          let s = p.ab.amZcopy(3, header, [{ buffer: part1 }, { buffer: part2 }], comp);
          while (s === UCS_ERR_NO_RESOURCE) {
            p.worker.progress();
            s = p.ab.amZcopy(3, header, [{ buffer: part1 }, { buffer: part2 }], comp);
          }
          if (s === UCS_INPROGRESS) await p.worker.progressUntil(() => comp.completions === 1, { what: "am_zcopy completion" });
          else assert.is(comp.completions, 0, "UCS_OK: the completion is not called");
          const whole = new Uint8Array(header.length + 50_000);
          whole.set(header);
          whole.set(part1, header.length);
          whole.set(part2, header.length + 20_000);
          const fits = whole.length <= p.b.attributes.am.maxBcopy;
          sent.push({ id: 11, data: fits ? whole : new Uint8Array(new Uint32Array([whole.length]).buffer) });
          await p.worker.progressUntil(() => got.length === sent.length, { what: "echo of am_zcopy" });
          if (!fits) assert.ok(same(atB[0]!, whole), "the am_zcopy arrived intact");
        }
        assert.ok(sent.length > 0, "the transport has some AM to test");
        assert.is(got.length, sent.length);
        for (const [i, s] of sent.entries()) {
          assert.is(got[i]!.id, s.id);
          assert.ok(same(got[i]!.data, s.data), `message ${i} (id ${s.id}, ${s.data.length} B) came back intact`);
        }
      } finally {
        p.close();
      }
    });

    test("a flood meets UCS_ERR_NO_RESOURCE, goes through the pending queue, and every message arrives once", async () => {
      const p = uctPair(target, mode);
      try {
        if (!has(p, "am_bcopy")) return;
        const total = 3000;
        const seen = new Uint32Array(total);
        let received = 0;
        p.b.setAmHandler(5, (m) => {
          const seq = new DataView(m.data.buffer, m.data.byteOffset).getUint32(0, true);
          seen[seq] = seen[seq]! + 1;
          received++;
        });
        let noResource = 0;
        let pendingCalls = 0;
        let next = 0;
        const msg = new Uint8Array(256);
        const dv = new DataView(msg.buffer);
        // Send without progressing until UCT says no; then queue one pending request that sends
        // the rest as resources come back (the seed's "add to the pending queue").
        const pump = (): number => {
          while (next < total) {
            dv.setUint32(0, next, true);
            const r = p.ab.amBcopy(5, msg);
            if (r === UCS_ERR_NO_RESOURCE) {
              noResource++;
              return UCS_ERR_NO_RESOURCE;
            }
            next++;
          }
          return UCS_OK;
        };
        if (pump() === UCS_ERR_NO_RESOURCE) {
          const queue = () => {
            const s = p.ab.pendingAdd(() => {
              pendingCalls++;
              return pump();
            });
            if (s !== UCS_OK) pump(); // UCS_ERR_BUSY: resources are back already
          };
          queue();
          await p.worker.progressUntil(() => next === total, { what: "pending flood" });
        }
        await p.worker.progressUntil(() => received === total, { what: `${total} messages received` });
        assert.is(received, total);
        assert.ok(seen.every((n) => n === 1), "each message exactly once");
        if (target.transport === "posix" || target.transport === "sysv") {
          assert.ok(noResource > 0, "the shared-memory FIFO filled up");
          assert.ok(pendingCalls > 0, "the pending callback was called");
        }
      } finally {
        p.close();
      }
    });

    if (target.transport === "posix" || target.transport === "sysv") {
      test("destroying an endpoint purges its pending queue: each request is told, none is run", () => {
        const p = uctPair(target, mode);
        try {
          p.b.setAmHandler(6, () => {});
          const msg = new Uint8Array(64);
          let sent = 0;
          while (p.ab.amBcopy(6, msg) !== UCS_ERR_NO_RESOURCE) if (++sent > 100_000) throw new Error("the FIFO never filled");
          let ran = 0;
          let purged = 0;
          for (let i = 0; i < 3; i++) assert.is(p.ab.pendingAdd(() => (ran++, UCS_OK), () => purged++), UCS_OK);
          p.ab.destroy();
          assert.is(purged, 3);
          assert.is(ran, 0);
          assert.throws(() => p.ab.amBcopy(6, msg), (e: unknown) => code(e) === "UCX_TS_CLOSED");
        } finally {
          p.close();
        }
      });
    }

    test("put and get (short, bcopy, zcopy) land in the owner's memory; flush completes them", async () => {
      const p = uctPair(target, mode);
      try {
        if (!["put_short", "put_bcopy", "put_zcopy"].some((c) => has(p, c))) return;
        const mem = p.b.memoryForRemoteAccess(1 << 16);
        const rkey = UctRemoteKey.unpack(p.component, mem.packRemoteKey());
        const base = mem.address;
        const flushed = async () => {
          const c = new UctCompletion();
          c.count = 1;
          const s = p.ab.flush(c);
          if (s === UCS_INPROGRESS) await p.worker.progressUntil(() => c.completions === 1, { what: "flush" });
          else assert.is(s, UCS_OK);
        };
        let checked = 0;
        if (has(p, "put_short")) {
          const d = pattern(64, 10);
          assert.is(p.ab.putShort(d, base + 8, rkey), UCS_OK);
          await flushed();
          assert.ok(same(mem.bytes.subarray(8, 72), d), "put_short");
          checked++;
        }
        if (has(p, "put_bcopy")) {
          const d = pattern(5000, 11);
          assert.is(p.ab.putBcopy(d, base + 100, rkey), d.length);
          await flushed();
          assert.ok(same(mem.bytes.subarray(100, 5100), d), "put_bcopy");
          checked++;
        }
        if (has(p, "put_zcopy")) {
          const d = pattern(40_000, 12);
          const local = UctMemory.forRemoteAccess(p.a, d.length);
          local.bytes.set(d);
          const comp = new UctCompletion();
          comp.count = 1;
          let s = p.ab.putZcopy([{ buffer: local.bytes, memory: local }], base + 6000, rkey, comp);
          for (let i = 0; s === UCS_ERR_NO_RESOURCE && i < 1_000_000; i++) {
            p.worker.progress(); // tcp: not connected yet
            s = p.ab.putZcopy([{ buffer: local.bytes, memory: local }], base + 6000, rkey, comp);
          }
          assert.ok(s === UCS_OK || s === UCS_INPROGRESS, `put_zcopy returned ${s}`);
          await flushed();
          if (s === UCS_INPROGRESS) assert.is(comp.completions, 1, "the put's completion fired by the time flush completed");
          // UCT_FLUSH_FLAG_LOCAL promises the transfer is done, not that the target is updated:
          // tcp writes on the owner's progress.
          await p.worker.progressUntil(() => same(mem.bytes.subarray(6000, 46000), d), { what: "put_zcopy data at the owner" });
          local.release();
          checked++;
        }
        mem.bytes.set(pattern(3000, 13), 50_000);
        if (has(p, "get_bcopy")) {
          const back = new Uint8Array(3000);
          const comp = new UctCompletion();
          comp.count = 1;
          const s = p.ab.getBcopy(back, base + 50_000, rkey, comp);
          if (s === UCS_INPROGRESS) await p.worker.progressUntil(() => comp.completions === 1, { what: "get_bcopy" });
          assert.ok(same(back, pattern(3000, 13)), "get_bcopy");
        }
        if (has(p, "get_zcopy")) {
          const local = UctMemory.forRemoteAccess(p.a, 3000);
          const comp = new UctCompletion();
          comp.count = 1;
          const s = p.ab.getZcopy([{ buffer: local.bytes, memory: local }], base + 50_000, rkey, comp);
          if (s === UCS_INPROGRESS) await p.worker.progressUntil(() => comp.completions === 1, { what: "get_zcopy" });
          assert.ok(same(local.bytes, pattern(3000, 13)), "get_zcopy");
          local.release();
        }
        assert.ok(checked > 0);
        // fence: a put issued after it is ordered after the one before it (the same bytes: the later wins)
        if (has(p, "put_short") || has(p, "put_bcopy")) {
          const put = (d: Uint8Array) => (has(p, "put_short") ? p.ab.putShort(d, base + 60_000, rkey) : p.ab.putBcopy(d, base + 60_000, rkey));
          for (let round = 0; round < 20; round++) {
            put(pattern(32, 100 + round));
            p.ab.fence();
            p.a.fence();
            put(pattern(32, 200 + round));
          }
          await flushed();
          await p.worker.progressUntil(() => same(mem.bytes.subarray(60_000, 60_032), pattern(32, 219)), { what: "the fenced put" });
        } else {
          p.ab.fence(); // no short/bcopy put to order here: the call itself must succeed
          p.a.fence();
        }
        assert.is(p.a.flush(), UCS_OK, "nothing left in flight on the interface");
        rkey.release();
        const one = [{ buffer: new Uint8Array(1) }];
        const put = has(p, "put_short") ? () => p.ab.putShort(one[0]!.buffer, base, rkey) : () => p.ab.putZcopy(one, base, rkey);
        assert.throws(put, (e: unknown) => code(e) === "UCX_TS_CLOSED", "a released key is refused");
        mem.release();
      } finally {
        p.close();
      }
    });

    test("atomics add, fetch-add, swap and compare-swap (32 and 64 bit) give the owner the right words", async () => {
      const p = uctPair(target, mode);
      try {
        if (p.a.attributes.atomic64.fetch.length === 0) {
          assert.throws(() => p.ab.atomicPost(64, "add", 1, 0, {} as UctRemoteKey), (e: unknown) => code(e) === "UCS_ERR_UNSUPPORTED");
          return;
        }
        const mem = p.b.memoryForRemoteAccess(64);
        const rkey = UctRemoteKey.unpack(p.component, mem.packRemoteKey());
        const w = new DataView(mem.bytes.buffer, mem.bytes.byteOffset, 64);
        const at = mem.address;
        const done = async (s: number) => {
          if (s === UCS_INPROGRESS) await p.worker.progressUntil(() => p.ab.flush() === UCS_OK, { what: "atomic" });
        };
        for (const bits of [32, 64] as const) {
          const off = bits === 32 ? 0 : 8;
          const get = () => (bits === 32 ? BigInt(w.getUint32(off, true)) : w.getBigUint64(off, true));
          const set = (v: bigint) => (bits === 32 ? w.setUint32(off, Number(v), true) : w.setBigUint64(off, v, true));
          set(10n);
          await done(p.ab.atomicPost(bits, "add", 5, at + off, rkey));
          assert.is(get(), 15n, `${bits} add`);
          await done(p.ab.atomicFetch(bits, "add", 7, at + off, rkey));
          assert.is(p.ab.fetched(bits), 15n, `${bits} fadd old value`);
          assert.is(get(), 22n);
          await done(p.ab.atomicFetch(bits, "swap", 99, at + off, rkey));
          assert.is(p.ab.fetched(bits), 22n, `${bits} swap old value`);
          assert.is(get(), 99n);
          await done(p.ab.atomicCompareSwap(bits, 1, 5, at + off, rkey));
          assert.is(p.ab.fetched(bits), 99n, `${bits} failed cswap returns the current value`);
          assert.is(get(), 99n, "and leaves it");
          await done(p.ab.atomicCompareSwap(bits, 99, bits === 32 ? 0xfffffffe : 2n ** 63n + 3n, at + off, rkey));
          assert.is(get(), bits === 32 ? 0xfffffffen : 2n ** 63n + 3n, `${bits} cswap stored the full width`);
        }
        // several fetching atomics in flight, each with its own result slot
        w.setBigUint64(16, 1000n, true);
        const slots = [new BigUint64Array(1), new BigUint64Array(1), new BigUint64Array(1)];
        const comp = new UctCompletion();
        let inProgress = 0;
        for (const slot of slots) if (p.ab.atomicFetch(64, "add", 1, at + 16, rkey, comp, slot) === UCS_INPROGRESS) inProgress++;
        if (inProgress > 0) {
          comp.count = inProgress; // set after the calls: UCT decrements only during progress
          await p.worker.progressUntil(() => comp.completions === 1, { what: "the fetching atomics" });
        }
        assert.equal(slots.map((s) => s[0]), [1000n, 1001n, 1002n], "each old value in its own slot");
        assert.is(w.getBigUint64(16, true), 1003n);
        assert.throws(() => p.ab.atomicPost(64, "add", 1, at + 4, rkey), (e: unknown) => code(e) === "UCX_TS_INVALID_ARGUMENT");
        rkey.release();
        mem.release();
      } finally {
        p.close();
      }
    });

    test("a handler may keep a descriptor past its return and release it later", async () => {
      const p = uctPair(target, mode);
      try {
        if (!has(p, "am_bcopy")) return;
        const held: UctHeldMessage[] = [];
        p.b.setAmHandler(7, (m) => void held.push(m.keep()));
        const message = (i: number) => {
          const d = pattern(200, i);
          new DataView(d.buffer).setUint32(0, i, true);
          return d;
        };
        const verify = () => {
          for (const h of held) {
            const i = new DataView(h.data.buffer, h.data.byteOffset).getUint32(0, true);
            assert.ok(same(h.data, message(i)), `kept message ${i} is intact after later messages arrived`);
            // shared memory hands out its receive descriptors (UCT_CB_PARAM_FLAG_DESC); the others copy
            assert.is(h.copied, !(target.transport === "posix" || target.transport === "sysv"), "descriptor kept without a copy");
          }
        };
        let received = 0;
        for (let i = 0; i < 300; i++) {
          let s = p.ab.amBcopy(7, message(i));
          while (s === UCS_ERR_NO_RESOURCE) {
            p.worker.progress();
            s = p.ab.amBcopy(7, message(i));
          }
          if (i % 50 === 49) {
            await p.worker.progressUntil(() => received + held.length === i + 1, { what: `${i + 1} messages` });
            verify();
            received += held.length;
            for (const h of held.splice(0)) h.release();
          }
        }
        assert.is(received, 300);
      } finally {
        p.close();
      }
    });

    test("bad input gets a typed error before UCT sees it", () => {
      const p = uctPair(target, mode);
      try {
        assert.throws(() => p.a.setAmHandler(32, () => {}), (e: unknown) => code(e) === "UCX_TS_INVALID_ARGUMENT");
        if (has(p, "am_short")) {
          const big = new Uint8Array(p.a.attributes.am.maxShort);
          assert.throws(() => p.ab.amShort(1, 0, big), (e: unknown) => code(e) === "UCX_TS_INVALID_ARGUMENT");
        } else assert.throws(() => p.ab.amShort(1, 0, new Uint8Array(1)), (e: unknown) => code(e) === "UCS_ERR_UNSUPPORTED");
        if (!p.a.attributes.connectToEndpoint) {
          // these ops are NULL in such a transport's table: uct.h would jump to address 0
          assert.throws(() => p.ab.address(), (e: unknown) => code(e) === "UCS_ERR_UNSUPPORTED");
          assert.throws(() => p.ab.connectToEndpoint(new Uint8Array(8), new Uint8Array(8)), (e: unknown) => code(e) === "UCS_ERR_UNSUPPORTED");
        }
        // memory left registered when everything closes is released by its memory domain, once
        const left = p.b.memoryForRemoteAccess(4096);
        assert.ok(p.md.memories.has(left));
        assert.throws(() => p.a.connect({ deviceAddress: new Uint8Array(3), interfaceAddress: new Uint8Array(1) }), (e: unknown) =>
          ["UCX_TS_INVALID_ARGUMENT", "UCS_ERR_UNSUPPORTED"].includes(code(e)),
        );
        p.close();
        assert.is(p.md.memories.size, 0, "closing the memory domain released what was left");
        left.release(); // already released: nothing happens
      } finally {
        p.close();
      }
    });

    test.run();
  }
}
