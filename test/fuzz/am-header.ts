/**
 * UCXX active-message headers (src/core/am/header.ts), every variant: empty (plain UCX), 4 bytes
 * (memoryType), 5 (plus hasReceiverCallback 0), with a receiver callback without and with the
 * tail, the full form with and without a user header. Each is mutated (cut, extended, bit
 * flips, flags and sizes out of range, owners without NUL or not UTF-8) and sent as UCX's raw
 * header on AM id 0 from a real endpoint (2 B of data, or 8-100 KiB under any send protocol:
 * eager or rendezvous); the receiver's `amRecv` must give a UcxError
 * (UCX_TS_PROTOCOL_ERROR, or UCX_TS_UNSUPPORTED for a device message whose sender asked for an
 * error) or the message, whose fields re-encode to the bytes sent (decoding loses nothing and
 * invents nothing). Callbacks are registered for some owners, so routed messages are checked too.
 */
import { decodeAmHeader, encodeAmHeader, OWNER_BYTES, type AmHeader } from "../../src/core/am/header.ts";
import { AM_SEND_PROTOCOLS } from "../../src/core/am/send-protocol.ts";
import { pattern } from "../helpers/workers.ts";
import { count, type FuzzContext, type FuzzReport, hex, outcome, sameBytes } from "./context.ts";

/** The short forms UCXX's reader accepts, completed to the full form the encoder writes. */
function canonical(sent: Uint8Array): Uint8Array {
  const b = sent.slice();
  // The owner field's bytes after its NUL are padding: the decoder drops them.
  if (b.length >= 5 + OWNER_BYTES && b[4] === 1) {
    const end = b.subarray(5, 5 + OWNER_BYTES).indexOf(0);
    if (end >= 0) b.fill(0, 5 + end, 5 + OWNER_BYTES);
  }
  if (b.length === 0) return canonical(new Uint8Array(4));
  if (b.length === 4) return Uint8Array.from([...b, 0, 0, ...new Uint8Array(8)]);
  if (b.length === 5 || (b[4] === 1 && b.length === 5 + OWNER_BYTES + 8)) return Uint8Array.from([...b, 0, ...new Uint8Array(8)]);
  return b;
}

function variant(ctx: FuzzContext, owners: readonly string[]): Uint8Array {
  const full = (h: Partial<AmHeader>) => encodeAmHeader({ memoryType: 0, memoryTypePolicy: 0, userHeader: new Uint8Array(0), ...h });
  const callback = { owner: ctx.pick(owners), id: BigInt(ctx.int(4)) };
  switch (ctx.int(8)) {
    case 0:
      return new Uint8Array(0);
    case 1:
      return full({ memoryType: ctx.int(3) }).slice(0, 4);
    case 2:
      return full({}).slice(0, 5);
    case 3:
      return full({ callback }).slice(0, 5 + OWNER_BYTES + 8);
    case 4:
      return full({ callback, userHeader: ctx.bytes(ctx.int(40)) });
    case 5:
      return full({ memoryType: ctx.int(3), memoryTypePolicy: ctx.int(2) });
    default:
      return full({ userHeader: ctx.bytes(ctx.int(100)) });
  }
}

function mutate(ctx: FuzzContext, b: Uint8Array): Uint8Array {
  switch (ctx.int(7)) {
    case 0:
      return b; // intact
    case 1:
      return b.slice(0, ctx.int(b.length + 1));
    case 2:
      return Uint8Array.from([...b, ...ctx.bytes(1 + ctx.int(9))]);
    case 3: {
      const c = b.slice();
      for (let f = 1 + ctx.int(3); f > 0 && c.length; f--) c[ctx.int(c.length)]! ^= 1 << ctx.int(8);
      return c;
    }
    case 4: {
      // Flags and policy out of range, a user-header size that lies.
      const c = b.slice();
      if (c.length > 4) c[4] = ctx.pick([2, 255, 1, 0]);
      if (c.length >= 14) new DataView(c.buffer).setBigUint64(c.length - 8 - ctx.int(2), ctx.pick([1n, 2n ** 32n, 2n ** 64n - 1n]), true);
      return c;
    }
    case 5: {
      // A receiver-callback owner without NUL, empty, or not UTF-8.
      const c = encodeAmHeader({ memoryType: 0, memoryTypePolicy: 0, userHeader: new Uint8Array(0), callback: { owner: "o", id: 1n } });
      c.fill(ctx.pick([0x41, 0xff, 0]), 5, 5 + ctx.pick([1, OWNER_BYTES]));
      return c;
    }
    default:
      return ctx.bytes(ctx.int(200)); // random
  }
}

export async function fuzzAmHeaders(ctx: FuzzContext): Promise<FuzzReport> {
  const outcomes: Record<string, number> = {};
  const owners = ["fuzz-owner", "ü-owner", "x".repeat(OWNER_BYTES - 1)];
  const routed: { header: Uint8Array; data: Uint8Array }[] = [];
  const off = owners.map((owner) => ctx.b.onAmCallback(owner, 1, (m) => routed.push({ header: m.header, data: m.data })));
  let inputs = 0;
  try {
    while (ctx.going(inputs)) {
      const sent = mutate(ctx, variant(ctx, owners));
      // Mostly 2 bytes; one in eight 8-100 KiB under a random send protocol, so that a header
      // also arrives with a rendezvous RTS (copied then, decoded after the fetch) and with large
      // eager data (send-protocol.ts).
      const large = ctx.int(8) === 0;
      const data = large ? pattern(8192 + ctx.int(92 * 1024), inputs) : Uint8Array.of(inputs & 255, (inputs >> 8) & 255);
      const protocol = large ? ctx.pick(AM_SEND_PROTOCOLS) : undefined;
      inputs++;
      if (protocol) count(outcomes, `8-100 KiB, protocol ${protocol}`);
      const what = () => `seed ${ctx.seed}, input ${inputs - 1}: header ${hex(sent)}, ${data.length} B${protocol ? ` (${protocol})` : ""}`;
      let decoded: AmHeader | Error;
      try {
        decoded = decodeAmHeader(sent);
      } catch (e) {
        decoded = e as Error;
      }
      if (decoded instanceof Error && decoded.name !== "AmHeaderError") throw new Error(`decodeAmHeader threw ${decoded.name}: ${decoded.message}; ${what()}`);
      if (!(decoded instanceof Error) && !sameBytes(encodeAmHeader(decoded), canonical(sent))) throw new Error(`decoded header does not re-encode to what was sent; ${what()}`);
      const toCallback = !(decoded instanceof Error) && decoded.callback?.id === 1n && owners.includes(decoded.callback.owner);
      const before = routed.length;
      await ctx.run(ctx.ab.amSend(data, { amId: 0, header: sent, protocol }));
      if (toCallback) {
        await ctx.run(
          (async () => {
            while (routed.length === before) await new Promise((r) => setTimeout(r, 1));
          })(),
          5000,
        );
        const r = routed[before]!;
        if (!sameBytes(r.data, data) || !sameBytes(r.header, (decoded as AmHeader).userHeader)) throw new Error(`routed message differs; ${what()}`);
        count(outcomes, "routed to its callback");
        continue;
      }
      const got = await ctx.run(outcome(ctx.b.amRecv()), 5000);
      if (decoded instanceof Error) {
        if (got.code !== "UCX_TS_PROTOCOL_ERROR") throw new Error(`expected UCX_TS_PROTOCOL_ERROR, got ${got.code}; ${what()}`);
      } else if (decoded.memoryType !== 0 && decoded.memoryTypePolicy === 1) {
        if (got.code !== "UCX_TS_UNSUPPORTED") throw new Error(`expected UCX_TS_UNSUPPORTED, got ${got.code}; ${what()}`);
      } else {
        if (got.code !== "ok") throw new Error(`a valid header was refused: ${got.code} ${got.error?.message}; ${what()}`);
        const m = got.value!;
        if (!sameBytes(m.data, data) || !sameBytes(m.header, decoded.userHeader) || m.memoryType !== decoded.memoryType) throw new Error(`delivered message differs; ${what()}`);
      }
      count(outcomes, got.code === "ok" ? "delivered" : got.code);
    }
    // Honest UCXX-format messages both ways afterwards.
    const [m] = await ctx.run(Promise.all([ctx.b.amRecv(), ctx.ab.amSend(Uint8Array.of(1, 2, 3), { header: Uint8Array.of(9) })]));
    const [n] = await ctx.run(Promise.all([ctx.a.amRecv(), ctx.ba.amSend(Uint8Array.of(4), {})]));
    if (m.data.join() !== "1,2,3" || m.header.join() !== "9" || n.data.join() !== "4") throw new Error("honest active messages after the fuzz arrived wrong");
  } finally {
    for (const f of off) f();
  }
  return { inputs, outcomes };
}
