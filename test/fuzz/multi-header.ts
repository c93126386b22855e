/**
 * Multi-buffer headers (src/core/multi/header.ts, received by src/core/engine/multi-transfer.ts):
 * valid batches mutated (headers truncated or extended, frame counts and sizes made huge, `next`
 * out of range or chains that never end, isCUDA garbage and staged-chunk values, bit flips) are sent as raw tag messages
 * from a real endpoint to a real `recvMulti` with small limits (1 MiB, 8 headers). An oracle
 * written here from the format's rules says, message by message, what the receiver must do: fail
 * with which code, wait for another header, or take the frames (then sent, and compared byte for
 * byte). A hang, a wrong code, a wrong frame or a non-UcxError fails the run.
 */
import { encodeHeaders } from "../../src/core/multi/header.ts";
import { count, type FuzzContext, type FuzzReport, hex, outcome } from "./context.ts";

const HEADER = 1209;
const PER_HEADER = 100;
const SIZE_AT = 9 + 4 * PER_HEADER;
const MAX_BYTES = 1 << 20; // context.ts: b's multi limits
const MAX_HEADERS = 8;

/** A frame the receiver must take: its size, and the chunk it travels in (staged device frames). */
type Frame = { size: number; chunk?: number };
type Verdict = { error: string } | { more: true } | { frames: Frame[] };

/** What the receiver must do once it has had `messages` (the oracle). */
function verdict(messages: readonly Uint8Array[]): Verdict {
  let total = 0;
  const frames: Frame[] = [];
  for (const [i, m] of messages.entries()) {
    if (m.length !== HEADER) return { error: "UCX_TS_PROTOCOL_ERROR" };
    const v = new DataView(m.buffer, m.byteOffset, m.byteLength);
    const next = m[0]!;
    if (next > 1) return { error: "UCX_TS_PROTOCOL_ERROR" };
    const n = v.getBigUint64(1, true);
    if (n > BigInt(PER_HEADER)) return { error: "UCX_TS_PROTOCOL_ERROR" };
    const described: Frame[] = [];
    for (let f = 0; f < Number(n); f++) {
      // isCUDA: 0 host, 1 device (UCXX), 16..30 a device frame staged in 2^isCUDA-byte chunks
      // (ucx-ts); a device frame arrives in host memory unless the receiver asks for the GPU.
      const cuda = v.getInt32(9 + 4 * f, true);
      const size = v.getBigUint64(SIZE_AT + 8 * f, true);
      const staged = cuda >= 16 && cuda <= 30;
      if ((cuda !== 0 && cuda !== 1 && !staged) || size > BigInt(Number.MAX_SAFE_INTEGER)) return { error: "UCX_TS_PROTOCOL_ERROR" };
      described.push(staged ? { size: Number(size), chunk: 2 ** cuda } : { size: Number(size) });
    }
    total += described.reduce((x, y) => x + y.size, 0);
    if (total > MAX_BYTES) return { error: "UCX_TS_LIMIT_EXCEEDED" };
    frames.push(...described);
    if (next === 1 && i + 1 >= MAX_HEADERS) return { error: "UCX_TS_LIMIT_EXCEEDED" };
    if (next === 0) return i === messages.length - 1 ? { frames } : { error: "oracle: headers after the last" };
  }
  return { more: true };
}

function validBatch(ctx: FuzzContext): Uint8Array[] {
  const n = ctx.int(4) === 0 ? ctx.int(3 * PER_HEADER) : ctx.int(12);
  const frames = Array.from({ length: n }, () => ({ size: ctx.int(8) === 0 ? ctx.int(64 * 1024) : ctx.int(600), device: false }));
  const all = encodeHeaders(frames);
  return Array.from({ length: all.length / HEADER }, (_, h) => all.slice(h * HEADER, (h + 1) * HEADER));
}

const MUTATIONS = ["none", "truncate", "extend", "nframes", "size", "next", "cuda", "endless", "flips"] as const;

function mutate(ctx: FuzzContext, headers: Uint8Array[], how: (typeof MUTATIONS)[number]): Uint8Array[] {
  const h = ctx.int(headers.length);
  const m = headers[h]!;
  const v = new DataView(m.buffer);
  switch (how) {
    case "truncate":
      headers[h] = m.slice(0, ctx.int(HEADER));
      break;
    case "extend":
      headers[h] = Uint8Array.from([...m, ...ctx.bytes(1 + ctx.int(16))]);
      break;
    case "nframes":
      v.setBigUint64(1, ctx.pick([101n, 1000n, 2n ** 32n, 2n ** 63n, 2n ** 64n - 1n, BigInt(ctx.int(2 ** 31))]), true);
      break;
    case "size":
      if (v.getBigUint64(1, true) === 0n) v.setBigUint64(1, 1n, true);
      v.setBigUint64(SIZE_AT + 8 * ctx.int(Number(v.getBigUint64(1, true))), ctx.pick([BigInt(MAX_BYTES + 1), 2n ** 40n, 2n ** 53n - 1n, 2n ** 53n, 2n ** 64n - 1n]), true);
      break;
    case "next":
      m[0] = 2 + ctx.int(254);
      break;
    case "cuda":
      v.setInt32(9 + 4 * ctx.int(PER_HEADER), ctx.pick([1, -1, 2, 15, 16, 17, 30, 31, 0x7fffffff, ctx.int(2 ** 31)]), true);
      break;
    case "endless": {
      // Every header says another follows: the receiver must stop at maxHeaders.
      const chain = Array.from({ length: MAX_HEADERS + 2 }, () => encodeHeaders([{ size: ctx.int(100), device: false }]));
      for (const c of chain) c[0] = 1;
      return chain;
    }
    case "flips":
      for (let f = 1 + ctx.int(4); f > 0; f--) {
        const t = headers[ctx.int(headers.length)]!;
        t[ctx.int(t.length)]! ^= 1 << ctx.int(8);
      }
      break;
  }
  return headers;
}

const pattern = (n: number, seed: number) => Uint8Array.from({ length: n }, (_, i) => (i * 31 + seed) & 255);

export async function fuzzMultiHeaders(ctx: FuzzContext): Promise<FuzzReport> {
  const outcomes: Record<string, number> = {};
  const rssBefore = process.memoryUsage().rss;
  let rssPeak = rssBefore;
  let inputs = 0;
  while (ctx.going(inputs)) {
    const how = MUTATIONS[inputs % MUTATIONS.length]!;
    const tag = 0x10000 + inputs++;
    const candidates = mutate(ctx, validBatch(ctx), how);
    const receiving = ctx.b.recvMulti(tag);
    const sent: Uint8Array[] = [];
    let v: Verdict = { more: true };
    // Send header messages one by one until the oracle says the receiver has decided; a chain
    // whose mutation left it wanting more is finished with a valid closing header.
    while ("more" in v) {
      const next = candidates[sent.length] ?? encodeHeaders([]);
      sent.push(next);
      await ctx.run(ctx.ab.send(next, tag));
      v = verdict(sent);
    }
    const what = () => `seed ${ctx.seed}, input ${inputs - 1} (${how}): ${sent.map(hex).join(" | ").slice(0, 400)}`;
    if ("frames" in v) {
      const frames = v.frames.map((f, i) => pattern(f.size, i));
      // A staged frame goes as its chunks, one message each (at least one), as ucx-ts sends it.
      for (const [i, f] of frames.entries()) {
        const chunk = v.frames[i]!.chunk ?? Math.max(f.length, 1);
        for (let at = 0; at < f.length || at === 0; at += chunk) await ctx.run(ctx.ab.send(f.subarray(at, at + chunk), tag));
      }
      const got = await ctx.run(outcome(receiving), 10_000);
      if (got.code !== "ok") throw new Error(`a valid batch was refused (${got.code}: ${got.error?.message}); ${what()}`);
      const value = got.value!;
      if (value.length !== frames.length || value.some((b, i) => b.length !== frames[i]!.length || b.some((x, j) => x !== frames[i]![j]))) {
        throw new Error(`a valid batch arrived different; ${what()}`);
      }
      count(outcomes, how === "none" ? "valid, delivered" : "mutated but valid, delivered");
    } else {
      const got = await ctx.run(outcome(receiving), 10_000);
      if (got.code !== v.error) throw new Error(`expected ${v.error}, got ${got.code} ${got.error?.message ?? ""}; ${what()}`);
      count(outcomes, v.error);
    }
    rssPeak = Math.max(rssPeak, process.memoryUsage().rss);
  }
  // An honest batch afterwards, through the library's own sender.
  const honest = [pattern(5, 1), pattern(0, 2), pattern(70_000, 3)];
  const [got] = await ctx.run(Promise.all([ctx.b.recvMulti(7), ctx.ab.sendMulti(honest, 7)]));
  if (got.length !== 3 || got[2]!.length !== 70_000 || got[2]![69_999] !== honest[2]![69_999]) throw new Error("the honest batch after the fuzz arrived wrong");
  return { inputs, outcomes, rssGrowthMiB: Math.round((rssPeak - rssBefore) / 2 ** 20) };
}
