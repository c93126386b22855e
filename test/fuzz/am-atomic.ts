/**
 * Atomics over active messages (src/core/engine/am-atomic-wire.ts, am-atomics.ts): requests and
 * replies, valid ones aimed inside, around and outside an exported region, then mutated (cut,
 * extended, bit flips, random bytes), sent as raw AMs on the reserved id from a real endpoint.
 * `decodeAtomicMessage` must throw AtomicWireError or give a message that re-encodes to the bytes
 * sent; the target's memory must then hold exactly what a model applying the valid requests that
 * fall inside the exported region gives (nothing else is touched: a second region, registered but
 * never exported, stays zero), and the worker must keep serving honest atomics.
 */
import {
  ATOMIC_AM_ID,
  ATOMIC_REPLY_BYTES,
  ATOMIC_REQUEST_BYTES,
  AtomicWireError,
  decodeAtomicMessage,
  encodeAtomicReply,
  encodeAtomicRequest,
  type AtomicRequest,
} from "../../src/core/engine/am-atomic-wire.ts";
import { count, type FuzzContext, type FuzzReport, hex, sameBytes } from "./context.ts";

const REGION = 64;

/** The model's result of request `r` on its word of `model` (little-endian bytes). */
function applyToModel(model: DataView, offset: number, r: AtomicRequest): void {
  const bits = BigInt(r.size * 8);
  const old = r.size === 8 ? model.getBigUint64(offset, true) : BigInt(model.getUint32(offset, true));
  const next = [
    old + r.value, // add
    r.value, // swap
    old === r.compare ? r.value : old, // cswap
    old & r.value,
    old | r.value,
    old ^ r.value,
  ][r.op]!;
  const word = BigInt.asUintN(Number(bits), next);
  if (r.size === 8) model.setBigUint64(offset, word, true);
  else model.setUint32(offset, Number(word), true);
}

function variant(ctx: FuzzContext, exported: number, hidden: number): Uint8Array {
  if (ctx.int(6) === 0) {
    const b = new Uint8Array(ATOMIC_REPLY_BYTES);
    encodeAtomicReply(b, ctx.int(4), BigInt(ctx.int(1000)), ctx.pick([0, -5, -19, 3, -300]));
    return b;
  }
  const size = ctx.pick([4, 8] as const);
  const op = ctx.int(6);
  const base = ctx.pick([exported, exported, exported, hidden]);
  // Inside the region mostly; just before, at and past its end sometimes.
  const offset = ctx.pick([ctx.int(REGION / size) * size, -size, REGION, REGION - size, ctx.int(REGION)]);
  const word = (n: number) => BigInt.asUintN(size * 8, BigInt(n) * 0x1234567n);
  const b = new Uint8Array(ATOMIC_REQUEST_BYTES);
  encodeAtomicRequest(b, { op, size, fetch: ctx.int(2) === 1, token: ctx.int(2 ** 32), address: base + offset, value: word(ctx.int(1e6)), compare: op === 2 ? word(ctx.int(3)) : 0n });
  return b;
}

function mutate(ctx: FuzzContext, b: Uint8Array): Uint8Array {
  switch (ctx.int(6)) {
    case 0:
    case 1:
      return b; // intact
    case 2:
      return b.slice(0, ctx.int(b.length + 1));
    case 3:
      return Uint8Array.from([...b, ...ctx.bytes(1 + ctx.int(9))]);
    case 4: {
      const c = b.slice();
      for (let f = 1 + ctx.int(3); f > 0 && c.length; f--) c[ctx.int(c.length)]! ^= 1 << ctx.int(8);
      return c;
    }
    default:
      return ctx.bytes(ctx.int(40));
  }
}

export async function fuzzAmAtomics(ctx: FuzzContext): Promise<FuzzReport> {
  const outcomes: Record<string, number> = {};
  const open = await ctx.run(ctx.b.memMap(REGION));
  const hidden = await ctx.run(ctx.b.memMap(REGION)); // registered, never exported
  await ctx.run(open.packRkey());
  const model = new Uint8Array(REGION);
  const modelView = new DataView(model.buffer);
  const target = ctx.b.amAtomics(); // polling mode: the target's counts
  const before = target ? { served: target.served, dropped: target.dropped } : undefined;
  let served = 0;
  let dropped = 0;
  let inputs = 0;
  // An ordinary message after the fuzzed ones: once it is received, every AM before it on the
  // same endpoint has been handled (one AM lane, UCX's order).
  const barrier = async () => {
    const [m] = await ctx.run(Promise.all([ctx.b.amRecv(), ctx.ab.amSend(Uint8Array.of(inputs & 255))]));
    if (m.data[0] !== (inputs & 255)) throw new Error("the barrier message arrived wrong");
  };
  while (ctx.going(inputs)) {
    const sent = mutate(ctx, variant(ctx, open.address, hidden.address));
    const withData = ctx.int(20) === 0;
    inputs++;
    const what = () => `seed ${ctx.seed}, input ${inputs - 1}: ${hex(sent)}${withData ? " with data" : ""}`;
    let decoded;
    try {
      decoded = decodeAtomicMessage(sent);
    } catch (e) {
      if (!(e instanceof AtomicWireError)) throw new Error(`decodeAtomicMessage threw ${(e as Error).name}: ${(e as Error).message}; ${what()}`);
    }
    if (decoded) {
      const again = new Uint8Array(sent.length);
      if (decoded.kind === "request") encodeAtomicRequest(again, decoded);
      else encodeAtomicReply(again, decoded.token, decoded.old, decoded.status);
      if (!sameBytes(again, sent)) throw new Error(`decoded message does not re-encode to what was sent; ${what()}`);
    }
    const offset = decoded?.kind === "request" ? decoded.address - open.address : -1;
    if (withData || !decoded || decoded.kind === "reply" || sent.length === 0) {
      dropped++; // malformed, data attached, or a reply to nothing of the target's
      count(outcomes, decoded?.kind === "reply" && !withData ? "reply to nothing: dropped" : "malformed: dropped");
    } else {
      served++;
      if (offset >= 0 && offset + decoded.size <= REGION) {
        applyToModel(modelView, offset, decoded);
        count(outcomes, "applied");
      } else count(outcomes, "outside exported memory: refused");
    }
    await ctx.run(ctx.ab.amSend(withData ? Uint8Array.of(1, 2) : new Uint8Array(0), { amId: ATOMIC_AM_ID, header: sent }));
    if (inputs % 16 === 0) {
      await barrier();
      if (!sameBytes(open.bytes, model)) throw new Error(`exported memory differs from the model after input ${inputs - 1} (seed ${ctx.seed}): ${hex(open.bytes)} vs ${hex(model)}`);
    }
  }
  await barrier();
  if (!sameBytes(open.bytes, model)) throw new Error(`exported memory differs from the model at the end (seed ${ctx.seed})`);
  if (!hidden.bytes.every((b) => b === 0)) throw new Error(`memory never exported was written (seed ${ctx.seed})`);
  if (target && before && (target.served - before.served !== served || target.dropped - before.dropped !== dropped)) {
    throw new Error(`target counts: served ${target.served - before.served} (model ${served}), dropped ${target.dropped - before.dropped} (model ${dropped}); seed ${ctx.seed}`);
  }
  // Honest atomics afterwards, from both sides (over AM where this UCX or the test asks for it).
  const rkey = await ctx.run(ctx.ab.unpackRkey(await ctx.run(open.packRkey())));
  const old = await ctx.run(ctx.ab.atomic("add", open.address, rkey, 1, { fetch: true }));
  if (old !== modelView.getBigUint64(0, true)) throw new Error(`an honest fetch-add after the fuzz read ${old}, the model says ${modelView.getBigUint64(0, true)}`);
  await ctx.run(rkey.destroy());
  await ctx.run(Promise.all([open.unmap(), hidden.unmap()]));
  return { inputs, outcomes };
}
