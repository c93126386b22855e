/**
 * The values ucp.h defines for each atomic ("Atomic Operations Semantic"), checked through one
 * endpoint on a 64-byte region of the other side's memory: add (with and without fetch, two's
 * complement), swap, cswap matching and not, and, or, xor on a 64-bit word, then add, cswap and
 * xor on a 32-bit one, the word after it untouched. Shared by core/rma (UCX's own atomics) and
 * core/am-atomics (ucx-ts's atomics over active messages), which must give the same values.
 */
import * as assert from "uvu/assert";
import type { Endpoint, MemoryHandle, RemoteKey } from "../../src/index.ts";

/** Runs the sequence; returns how many atomics it issued. */
export async function checkAtomicSemantics(run: <T>(p: Promise<T>) => Promise<T>, ep: Endpoint, rkey: RemoteKey, mem: MemoryHandle): Promise<number> {
  const word = new DataView(mem.bytes.buffer, mem.bytes.byteOffset);
  const at = mem.address;
  word.setBigUint64(0, 10n, true);
  assert.is(await run(ep.atomic("add", at, rkey, 5)), undefined);
  assert.is(await run(ep.atomic("add", at, rkey, 5, { fetch: true })), 15n);
  assert.is(await run(ep.atomic("add", at, rkey, -1n, { fetch: true })), 20n); // two's complement
  assert.is(await run(ep.atomic("swap", at, rkey, 2n ** 63n)), 19n);
  assert.is(await run(ep.atomic("cswap", at, rkey, 7n, { compare: 1n })), 2n ** 63n); // no match: unchanged
  assert.is(word.getBigUint64(0, true), 2n ** 63n);
  assert.is(await run(ep.atomic("cswap", at, rkey, 7n, { compare: 2n ** 63n })), 2n ** 63n);
  assert.is(await run(ep.atomic("and", at, rkey, 6n, { fetch: true })), 7n);
  assert.is(await run(ep.atomic("or", at, rkey, 8n, { fetch: true })), 6n);
  assert.is(await run(ep.atomic("xor", at, rkey, 0xffn, { fetch: true })), 14n);
  await run(ep.flush());
  assert.is(word.getBigUint64(0, true), 0xf1n);
  word.setUint32(8, 0xfffffffe, true);
  assert.is(await run(ep.atomic("add", at + 8, rkey, 3, { bits: 32, fetch: true })), 0xfffffffe); // wraps to 1
  assert.is(await run(ep.atomic("cswap", at + 8, rkey, 9, { bits: 32, compare: 1 })), 1);
  assert.is(await run(ep.atomic("xor", at + 8, rkey, 1, { bits: 32, fetch: true })), 9);
  await run(ep.flush());
  assert.is(word.getUint32(8, true), 8);
  assert.is(word.getUint32(12, true), 0, "the next word is untouched by 32-bit atomics");
  return 12;
}
