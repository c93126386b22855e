/**
 * UCT between two processes (this one and test/helpers/uct-peer.ts under the same runtime: one
 * peer process serves every transport and mode, started by the first suite), over
 * each transport this host reports that reaches another process (posix, sysv, cma, tcp/lo; self
 * only reaches itself), connected as the transport's flags allow. Addresses, keys and the owner's
 * checks go over the peer's stdin and stdout.
 */
import { suite } from "uvu";
import * as assert from "uvu/assert";
import {
  UCS_ERR_NO_RESOURCE,
  UCS_INPROGRESS,
  UCS_OK,
  UctComponent,
  UctCompletion,
  UctInterface,
  UctMemory,
  UctRemoteKey,
  UctWorker,
  type UctEndpoint,
  type UctMemoryDomain,
} from "../../../src/core/uct/index.ts";
import { hex, unhex, UctPeerProcess, type UctPeerHello } from "../../helpers/uct-peer-process.ts";
import { skipWithReason } from "../../helpers/skip.ts";
import { fnv1a, pattern, same, uctTargets } from "../../helpers/uct.ts";

/** The one peer process, started on first use and asked to quit by the last suite. */
let shared: Promise<{ peer: UctPeerProcess; hello: Record<string, UctPeerHello> }> | undefined;

interface Ctx {
  worker: UctWorker;
  md: UctMemoryDomain;
  component: UctComponent;
  iface: UctInterface;
  ep: UctEndpoint;
  peer: UctPeerProcess;
  hello: UctPeerHello;
  /** "transport/device/mode": which of the peer's interfaces this suite talks to. */
  key: string;
}

for (const target of uctTargets()) {
  if (target.transport === "self") {
    const test = suite("core/uct two processes (self)");
    skipWithReason(test, "self between two processes", "the self transport only reaches its own interface (loopback)");
    test.run();
    continue;
  }
  const probe = (() => {
    const c = UctComponent.find(target.component);
    const md = c.openMemoryDomain(target.memoryDomain);
    const w = UctWorker.create();
    const i = UctInterface.open(w, md, target.transport, target.device);
    const a = i.attributes;
    w.close();
    md.close();
    return a;
  })();
  const modes = [...(probe.connectToInterface ? ["iface" as const] : []), ...(probe.connectToEndpoint ? ["ep" as const] : [])];
  for (const mode of modes) {
    const test = suite<Ctx>(`core/uct two processes (${target.transport}/${target.device} connect-to-${mode})`, {} as Ctx);
    const has = (cap: string) => probe.capabilities.includes(cap);

    test.before(async (ctx) => {
      ctx.component = UctComponent.find(target.component);
      ctx.md = ctx.component.openMemoryDomain(target.memoryDomain);
      ctx.worker = UctWorker.create();
      ctx.iface = UctInterface.open(ctx.worker, ctx.md, target.transport, target.device);
      shared ??= UctPeerProcess.start(ctx.worker);
      const { peer, hello: all } = await shared;
      ctx.key = `${target.transport}/${target.device}/${mode}`;
      ctx.peer = peer;
      const hello = (ctx.hello = all[ctx.key]!);
      const remote = { deviceAddress: unhex(hello.deviceAddress), interfaceAddress: unhex(hello.interfaceAddress) };
      if (mode === "ep") {
        ctx.ep = ctx.iface.createEndpoint();
        ctx.ep.connectToEndpoint(remote.deviceAddress, unhex(hello.endpointAddress));
      } else ctx.ep = ctx.iface.connect(remote);
      const mine = ctx.iface.address();
      await peer.ask(ctx.worker, {
        cmd: "connect",
        key: ctx.key,
        deviceAddress: hex(mine.deviceAddress),
        interfaceAddress: hex(mine.interfaceAddress),
        endpointAddress: mode === "ep" ? hex(ctx.ep.address()) : "",
      });
    });

    test.after((ctx) => {
      ctx.worker?.close();
      ctx.md?.close();
    });

    const retry = (ctx: Ctx, op: () => number): number => {
      let s = op();
      for (let i = 0; s === UCS_ERR_NO_RESOURCE && i < 5_000_000; i++) {
        ctx.worker.progress();
        s = op();
      }
      return s;
    };

    if (has("am_short") || has("am_bcopy")) {
      test("active messages short, bcopy and zcopy come back from the other process intact", async (ctx) => {
        const got: Uint8Array[] = [];
        for (const id of [9, 10, 11]) ctx.iface.setAmHandler(id, (m) => void got.push(m.data.slice()));
        const expect: Uint8Array[] = [];
        const roundTrip = async (op: () => number, back: Uint8Array) => {
          const s = retry(ctx, op);
          assert.ok(s >= 0, `sent (${s})`);
          expect.push(back);
          await ctx.worker.progressUntil(() => got.length === expect.length, { what: "the echo" });
          assert.ok(same(got[got.length - 1]!, back), `echo ${expect.length} intact (${back.length} B)`);
        };
        if (has("am_short")) {
          const payload = pattern(Math.min(80, probe.am.maxShort - 8), 1);
          const whole = new Uint8Array(8 + payload.length);
          new DataView(whole.buffer).setBigUint64(0, 0xfeedfacecafebeefn, true);
          whole.set(payload, 8);
          await roundTrip(() => ctx.ep.amShort(1, 0xfeedfacecafebeefn, payload), whole);
        }
        if (has("am_bcopy")) {
          const d = pattern(Math.min(8000, probe.am.maxBcopy), 2);
          await roundTrip(() => ctx.ep.amBcopy(2, d), d);
        }
        if (has("am_zcopy")) {
          const header = pattern(8, 3);
          const body = pattern(60_000, 4);
          const whole = new Uint8Array(8 + body.length);
          whole.set(header);
          whole.set(body, 8);
          const comp = new UctCompletion();
          comp.count = 1;
          const s = retry(ctx, () => ctx.ep.amZcopy(3, header, [{ buffer: body.subarray(0, 30_000) }, { buffer: body.subarray(30_000) }], comp));
          const back = whole.length <= probe.am.maxBcopy ? whole : new Uint8Array(new Uint32Array([whole.length, fnv1a(whole)]).buffer);
          expect.push(back);
          await ctx.worker.progressUntil(() => got.length === expect.length && (s !== UCS_INPROGRESS || comp.completions === 1), { what: "am_zcopy echo" });
          assert.ok(same(got[got.length - 1]!, back), "am_zcopy arrived intact (length and hash)");
        }
      });

      test("a flood through NO_RESOURCE and the pending queue: every message arrives once", async (ctx) => {
        const total = 5000;
        let next = 0;
        let noResource = 0;
        const msg = new Uint8Array(Math.min(512, probe.am.maxBcopy));
        const dv = new DataView(msg.buffer);
        const pump = (): number => {
          while (next < total) {
            dv.setUint32(0, next, true);
            if (ctx.ep.amBcopy(5, msg) === UCS_ERR_NO_RESOURCE) {
              noResource++;
              return UCS_ERR_NO_RESOURCE;
            }
            next++;
          }
          return UCS_OK;
        };
        // On NO_RESOURCE, queue a pending request that goes on sending when resources return;
        // UCS_ERR_BUSY from pendingAdd means they are back already: pump again at once.
        while (pump() === UCS_ERR_NO_RESOURCE) {
          if (ctx.ep.pendingAdd(() => pump()) === UCS_OK) await ctx.worker.progressUntil(() => next === total, { what: "pending queue" });
        }
        assert.is(next, total);
        let report = { received: 0, once: 0 };
        const deadline = Date.now() + 20_000;
        while (report.once < total && Date.now() < deadline) {
          ctx.ep.flush(); // push out what tcp may still hold; the peer's count is the check
          report = await ctx.peer.ask<{ received: number; once: number }>(ctx.worker, { cmd: "flood", key: ctx.key, total });
        }
        assert.is(report.once, total, "each sequence number exactly once");
        assert.is(report.received, total, "no duplicates");
        if (target.transport !== "tcp") assert.ok(noResource > 0, "the peer's FIFO filled up (UCS_ERR_NO_RESOURCE)");
      });
    }

    test("put and get land in the other process's memory, checked by the owner", async (ctx) => {
      const rkey = UctRemoteKey.unpack(ctx.component, unhex(ctx.hello.rkey));
      const base = ctx.hello.memAddress;
      const read = async (offset: number, length: number) => unhex((await ctx.peer.ask<{ hex: string }>(ctx.worker, { cmd: "read", key: ctx.key, offset, length })).hex);
      const flushAll = async () => {
        const c = new UctCompletion();
        c.count = 1;
        if (retry(ctx, () => ctx.ep.flush(c)) === UCS_INPROGRESS) await ctx.worker.progressUntil(() => c.completions === 1, { what: "flush" });
      };
      if (has("put_short")) {
        const d = pattern(100, 20);
        assert.is(retry(ctx, () => ctx.ep.putShort(d, base + 16, rkey)), UCS_OK);
        await flushAll();
        assert.ok(same(await read(16, 100), d), "put_short");
      }
      if (has("put_bcopy")) {
        const d = pattern(6000, 21);
        assert.is(retry(ctx, () => ctx.ep.putBcopy(d, base + 200, rkey)), d.length);
        await flushAll();
        assert.ok(same(await read(200, 6000), d), "put_bcopy");
      }
      if (has("put_zcopy")) {
        const d = pattern(20_000, 22);
        const local = UctMemory.forRemoteAccess(ctx.iface, d.length);
        local.bytes.set(d);
        const comp = new UctCompletion();
        comp.count = 1;
        const s = retry(ctx, () => ctx.ep.putZcopy([{ buffer: local.bytes, memory: local }], base + 10_000, rkey, comp));
        if (s === UCS_INPROGRESS) await ctx.worker.progressUntil(() => comp.completions === 1, { what: "put_zcopy completion" });
        await flushAll();
        // flush is local completion: poll the owner until the bytes are there (tcp writes on its progress)
        let seen = await read(10_000, 20_000);
        for (let i = 0; i < 50 && !same(seen, d); i++) seen = await read(10_000, 20_000);
        assert.ok(same(seen, d), "put_zcopy");
        local.release();
      }
      const original = pattern(65536, 77).subarray(40_000, 45_000);
      if (has("get_bcopy")) {
        const back = new Uint8Array(5000);
        const comp = new UctCompletion();
        comp.count = 1;
        const s = retry(ctx, () => ctx.ep.getBcopy(back, base + 40_000, rkey, comp));
        if (s === UCS_INPROGRESS) await ctx.worker.progressUntil(() => comp.completions === 1, { what: "get_bcopy" });
        assert.ok(same(back, original), "get_bcopy reads the owner's pattern");
      }
      if (has("get_zcopy")) {
        const local = UctMemory.forRemoteAccess(ctx.iface, 5000);
        const comp = new UctCompletion();
        comp.count = 1;
        const s = retry(ctx, () => ctx.ep.getZcopy([{ buffer: local.bytes, memory: local }], base + 40_000, rkey, comp));
        if (s === UCS_INPROGRESS) await ctx.worker.progressUntil(() => comp.completions === 1, { what: "get_zcopy" });
        assert.ok(same(local.bytes, original), "get_zcopy reads the owner's pattern");
        local.release();
      }
      rkey.release();
    });

    if (probe.atomic64.fetch.includes("add")) {
      test("atomics on the other process's words (32 and 64 bit), checked by the owner", async (ctx) => {
        const rkey = UctRemoteKey.unpack(ctx.component, unhex(ctx.hello.rkey));
        const at = ctx.hello.memAddress + 60_000; // 8-byte aligned: the peer's memory is
        const word = async (bits: 32 | 64) => {
          const b = unhex((await ctx.peer.ask<{ hex: string }>(ctx.worker, { cmd: "read", key: ctx.key, offset: 60_000 + (bits === 64 ? 8 : 0), length: bits / 8 })).hex);
          const v = new DataView(b.buffer);
          return bits === 32 ? BigInt(v.getUint32(0, true)) : v.getBigUint64(0, true);
        };
        for (const bits of [32, 64] as const) {
          const addr = at + (bits === 64 ? 8 : 0);
          const start = await word(bits);
          retry(ctx, () => ctx.ep.atomicPost(bits, "add", 1000, addr, rkey));
          retry(ctx, () => ctx.ep.atomicFetch(bits, "add", 5, addr, rkey));
          assert.is(ctx.ep.fetched(bits), BigInt.asUintN(bits, start + 1000n), `${bits}-bit fetch-add saw the add`);
          retry(ctx, () => ctx.ep.atomicFetch(bits, "swap", 42, addr, rkey));
          assert.is(ctx.ep.fetched(bits), BigInt.asUintN(bits, start + 1005n));
          retry(ctx, () => ctx.ep.atomicCompareSwap(bits, 42, 7, addr, rkey));
          assert.is(ctx.ep.fetched(bits), 42n);
          assert.is(await word(bits), 7n, `${bits}-bit word in the owner's memory`);
        }
        rkey.release();
      });
    }

    test.run();
  }
}

{
  const test = suite("core/uct two processes (the peer's end)");
  test("the peer process releases its memory, closes its worker and exits 0", async () => {
    if (!shared) return; // no transport reached another process here
    const worker = UctWorker.create();
    try {
      const { peer } = await shared;
      assert.is(await peer.quit(worker), "exit 0");
    } finally {
      worker.close();
    }
  });
  test.run();
}
