/**
 * Packed remote keys (src/core/memory.ts parsePackedKey, src/core/ucx-rkey-format.ts): a real
 * key, then mutations of its UCX body resealed with a correct checksum so that only the
 * structural walk stands between them and UCX (cut, extended, bytes flipped, md maps and key sizes
 * rewritten), and of its header (sizes that lie, reserved bytes). Each must be a UcxError or a
 * key whose structure the walk accepts; accepted mutations are not handed to UCX (its posix
 * transport aborts on garbage inside a well-formed md key, ucx-rkey-format.ts). The end-to-end
 * fuzz of unpackRkey on a live endpoint is hostile-case.ts "rkey-fuzz"; afterwards the intact key
 * still serves a put.
 */
import { UcxError } from "../../src/index.ts";
import { crc32 } from "../../src/core/crc32.ts";
import { parsePackedKey } from "../../src/core/memory.ts";
import { count, type FuzzContext, type FuzzReport, hex } from "./context.ts";

const PREFIX = 32;

function reseal(prefix: Uint8Array, ucx: Uint8Array): Uint8Array {
  const k = new Uint8Array(PREFIX + ucx.length);
  k.set(prefix.subarray(0, PREFIX));
  k.set(ucx, PREFIX);
  const view = new DataView(k.buffer);
  view.setUint32(4, ucx.length, true);
  view.setUint32(24, crc32(k.subarray(0, 24), ucx), true);
  return k;
}

export async function fuzzRkeys(ctx: FuzzContext): Promise<FuzzReport> {
  const mem = await ctx.run(ctx.b.memMap(4096));
  const key = await ctx.run(mem.packRkey());
  const body = key.subarray(PREFIX);
  const outcomes: Record<string, number> = {};
  let inputs = 0;
  while (ctx.going(inputs)) {
    let ucx = body.slice();
    const how = inputs++ % 6;
    if (how === 0) ucx = ucx.slice(0, ctx.int(ucx.length));
    else if (how === 1) ucx = Uint8Array.from([...ucx, ...ctx.bytes(1 + ctx.int(32))]);
    else if (how === 2) for (let f = 1 + ctx.int(4); f > 0; f--) ucx[ctx.int(ucx.length)]! ^= 1 << ctx.int(8);
    else if (how === 3) ucx.set(ctx.bytes(8), 0); // md map
    else if (how === 4) ucx[8 + ctx.int(Math.max(1, ucx.length - 8))] = ctx.pick([0, 1, 255, 128, ctx.int(256)]); // a key size or memory type
    let packed = reseal(key, ucx);
    if (how === 5) {
      // The header: a size that lies, reserved bytes, address/length beyond 2^53, a stale checksum.
      packed = key.slice();
      const v = new DataView(packed.buffer);
      const field = ctx.int(4);
      if (field === 0) v.setUint32(4, ctx.pick([0, body.length + 1, 0xffffffff]), true);
      else if (field === 1) v.setUint32(28, 1 + ctx.int(1000), true);
      else if (field === 2) v.setBigUint64(8 + 8 * ctx.int(2), 2n ** 53n + BigInt(ctx.int(1000)), true);
      else packed[PREFIX + ctx.int(body.length)]! ^= 1;
      if (field === 2) v.setUint32(24, crc32(packed.subarray(0, 24), packed.subarray(PREFIX)), true);
    }
    try {
      const parsed = parsePackedKey(packed);
      if (parsed.rkey.length < ucx.length) throw new Error(`an accepted key lost bytes; seed ${ctx.seed}: ${hex(packed)}`);
      count(outcomes, "structure accepted");
    } catch (e) {
      if (!(e instanceof UcxError)) throw new Error(`parsePackedKey threw ${String(e)}; seed ${ctx.seed}, input ${inputs - 1}: ${hex(packed)}`);
      count(outcomes, e.code);
    }
  }
  const rkey = await ctx.run(ctx.ab.unpackRkey(key));
  await ctx.run(ctx.ab.put(Uint8Array.of(42), mem.address + 7, rkey));
  await ctx.run(ctx.ab.flush());
  if (mem.bytes[7] !== 42) throw new Error("a put with the intact key did not land after the fuzz");
  await ctx.run(rkey.destroy());
  await ctx.run(mem.unmap());
  return { inputs, outcomes };
}
