/**
 * The collectives' bootstrap (src/ucg/bootstrap-wire.ts, bootstrap.ts): what rank 0 reads from
 * every rank (the hello: rank, host, worker address) and what every rank reads from rank 0 (the
 * table's length, then the table). Two parts:
 * - the decoders alone: valid hellos and tables of 1-8 ranks, mutated (cut, extended, bits flipped,
 *   length fields that lie, host names that are not UTF-8): UCX_TS_PROTOCOL_ERROR, or a value that
 *   encodes back to exactly the bytes read; an announced table length is accepted only within
 *   what `size` hellos can fill (no buffer of a peer's choosing);
 * - the real bootstrap of a rank 1 against a fake rank 0 (a listener on worker b) that answers
 *   its hello with a mutated table: the bootstrap rejects with UCX_TS_PROTOCOL_ERROR within its
 *   timeout, never hangs or crashes; afterwards a and b still exchange tag messages.
 */
import { UcxError, type Endpoint } from "../../src/index.ts";
import { bootstrap } from "../../src/ucg/bootstrap.ts";
import { Channel } from "../../src/ucg/channel.ts";
import {
  decodeHello,
  decodeTable,
  decodeTableLength,
  encodeHello,
  encodeTable,
  maxTableBytes,
} from "../../src/ucg/bootstrap-wire.ts";
import { count, type FuzzContext, type FuzzReport, hex, sameBytes } from "./context.ts";

const HOSTS = ["node0", "", "host-with-a-long-name.example.org", "ünïcødé-主机", "a"];

function randomTable(ctx: FuzzContext): { hosts: string[]; addresses: Uint8Array[] } {
  const size = 1 + ctx.int(8);
  return {
    hosts: Array.from({ length: size }, () => ctx.pick(HOSTS)),
    addresses: Array.from({ length: size }, () => ctx.bytes(1 + ctx.int(400))),
  };
}

/** Cut, extend, flip bits, or overwrite a length field (at one of `lengthFields`) with a lie. */
function mutate(ctx: FuzzContext, bytes: Uint8Array, how: number, lengthFields: readonly { at: number; width: 2 | 4 }[]): Uint8Array {
  const b = bytes.slice();
  if (how === 0) return b.slice(0, ctx.int(b.length));
  if (how === 1) return Uint8Array.from([...b, ...ctx.bytes(1 + ctx.int(16))]);
  if (how === 2) {
    for (let f = 1 + ctx.int(3); f > 0; f--) b[ctx.int(b.length)]! ^= 1 << ctx.int(8);
    return b;
  }
  if (how === 3) {
    const field = ctx.pick(lengthFields);
    const v = new DataView(b.buffer);
    const max = field.width === 2 ? 0xffff : 0xffffffff;
    const lie = ctx.pick([0, 1, max, ctx.int(max), b.length, b.length + 1]);
    if (field.at + field.width <= b.length) field.width === 2 ? v.setUint16(field.at, lie & 0xffff, true) : v.setUint32(field.at, lie >>> 0, true);
    return b;
  }
  // Bytes that are not UTF-8 in a host name (a lone continuation byte).
  if (b.length > 6) b[6] = 0x80;
  return b;
}

function decoderPart(ctx: FuzzContext, outcomes: Record<string, number>): number {
  let n = 0;
  const started = Date.now();
  while (n < 300 || Date.now() - started < 100) {
    const how = n++ % 5;
    const kind = n % 3;
    try {
      if (kind === 0) {
        const rank = ctx.int(2 ** 32);
        const bytes = mutate(ctx, encodeHello(rank, ctx.pick(HOSTS), ctx.bytes(1 + ctx.int(400))), how, [{ at: 4, width: 2 }]);
        const h = decodeHello(bytes);
        if (!sameBytes(encodeHello(h.rank, h.host, h.address), bytes)) throw new Error(`a decoded hello does not encode back to its bytes; seed ${ctx.seed}: ${hex(bytes)}`);
        count(outcomes, "hello decoded");
      } else if (kind === 1) {
        const t = randomTable(ctx);
        const fields = [{ at: 0, width: 2 as const }, { at: 2, width: 4 as const }];
        const bytes = mutate(ctx, encodeTable(t.hosts, t.addresses), how, fields);
        const size = ctx.int(4) === 0 ? 1 + ctx.int(8) : t.hosts.length; // sometimes the wrong rank count
        const d = decodeTable(bytes, size);
        if (d.hosts.length !== size || !sameBytes(encodeTable(d.hosts, d.addresses), bytes)) throw new Error(`a decoded table does not encode back to its bytes; seed ${ctx.seed}: ${hex(bytes)}`);
        count(outcomes, "table decoded");
      } else {
        const size = 1 + ctx.int(8);
        const length = new Uint8Array(8);
        new DataView(length.buffer).setUint32(0, ctx.pick([0, size * 7 - 1, size * 7, maxTableBytes(size), maxTableBytes(size) + 1, 0xffffffff, ctx.int(2 ** 32)]) >>> 0, true);
        const announced = decodeTableLength(how === 0 ? length.subarray(0, ctx.int(4)) : length, size);
        if (announced > maxTableBytes(size)) throw new Error(`a table of ${announced} B accepted for ${size} ranks`);
        count(outcomes, "table length accepted");
      }
    } catch (e) {
      if (!(e instanceof UcxError) || e.code !== "UCX_TS_PROTOCOL_ERROR") throw e;
      count(outcomes, "UCX_TS_PROTOCOL_ERROR");
    }
  }
  return n;
}

/** A fake rank 0 on `ctx.b` that answers each hello with the next of `tables` (length, then table). */
async function liveRank0(ctx: FuzzContext, tables: Uint8Array[][]): Promise<{ port: number; close(): Promise<void> }> {
  const endpoints: Endpoint[] = [];
  const listener = await ctx.run(
    ctx.b.listen({
      host: "127.0.0.1",
      port: 0,
      onConnection: (ep: Endpoint) => {
        endpoints.push(ep);
        const [length, table] = tables.shift()!;
        void ep
          .recv(new Uint8Array(64 * 1024), 1)
          .then(() => Promise.all([ep.send(length!, 2), ep.send(table!, 3)]))
          .catch(() => {});
      },
    } as Parameters<FuzzContext["b"]["listen"]>[0]),
  );
  return {
    port: listener.port,
    close: () => ctx.run(Promise.all(endpoints.map((ep) => ep.close().catch(() => {}))).then(() => listener.close())),
  };
}

async function livePart(ctx: FuzzContext, outcomes: Record<string, number>): Promise<number> {
  const own = await ctx.run(ctx.b.address());
  const cases: Uint8Array[][] = [];
  for (let i = 0; i < 6; i++) {
    const table = encodeTable(["root", "me"], [own, ctx.bytes(100)]);
    const length = new Uint8Array(8);
    const lie = i % 3;
    let bytes = table;
    if (lie === 0) new DataView(length.buffer).setUint32(0, 0xffffffff - ctx.int(1000), true); // a length beyond any table
    else if (lie === 1) {
      bytes = table.slice();
      new DataView(bytes.buffer).setUint32(2, table.length + ctx.int(1000), true); // rank 0's address length lies
      new DataView(length.buffer).setUint32(0, bytes.length, true);
    } else {
      bytes = Uint8Array.from([...table, ...ctx.bytes(1 + ctx.int(8))]); // bytes after the last entry
      new DataView(length.buffer).setUint32(0, bytes.length, true);
    }
    cases.push([length, bytes]);
  }
  const root = await liveRank0(ctx, cases.map((c) => c.slice()));
  let n = 0;
  for (const _ of cases) {
    n++;
    const channel = new Channel(ctx.a, 1);
    const rte = { rank: 1, size: 2, root: { host: "127.0.0.1", port: root.port }, launcher: "ucx-ts" as const };
    try {
      await ctx.run(bootstrap(ctx.a, channel, rte, { timeoutMs: 5000, host: "me" }), 15_000);
      throw new Error(`the bootstrap accepted a table that lies; seed ${ctx.seed}, case ${n}`);
    } catch (e) {
      if (!(e instanceof UcxError) || e.code !== "UCX_TS_PROTOCOL_ERROR") throw e;
      count(outcomes, "bootstrap: UCX_TS_PROTOCOL_ERROR");
    }
  }
  await root.close();
  const into = new Uint8Array(3);
  const got = ctx.b.recv(into, 77);
  await ctx.run(ctx.ab.send(Uint8Array.of(1, 2, 3), 77));
  await ctx.run(got);
  if (into.join() !== "1,2,3") throw new Error("a and b could not exchange a message after the bootstrap fuzz");
  return n;
}

export async function fuzzUcgBootstrap(ctx: FuzzContext): Promise<FuzzReport> {
  const outcomes: Record<string, number> = {};
  let inputs = 0;
  while (ctx.going(inputs)) inputs += decoderPart(ctx, outcomes);
  inputs += await livePart(ctx, outcomes);
  return { inputs, outcomes };
}
