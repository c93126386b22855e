/**
 * The pool of released active-message memory (engine/am-buffer-pool.ts), on its own clock: it
 * reuses what traffic gives back, and drops what nobody took for its idle time, so that messages
 * of random sizes do not creep it toward its cap (the creep the GPU soak showed, issue 26).
 */
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { AM_POOL_MIN_BYTES, AmBufferPool } from "../../src/core/engine/am-buffer-pool.ts";

const test = suite("core/am-buffer-pool");
const KiB = 1024;
const MiB = 1024 * KiB;

test("a released buffer comes back for a message of its size class that fits; small ones are never kept", () => {
  let t = 0;
  const pool = new AmBufferPool(() => t, 2000);
  const a = new ArrayBuffer(64 * KiB);
  pool.give(a);
  assert.is(pool.size, 64 * KiB);
  assert.is(pool.take(64 * KiB + 1), undefined, "too small for a longer message of its class");
  assert.is(pool.take(40 * KiB), a, "from the class above, under 4x its size");
  assert.is(pool.size, 0);
  pool.give(new ArrayBuffer(AM_POOL_MIN_BYTES - 1));
  assert.is(pool.size, 0);
  t = 10;
  assert.is(pool.take(AM_POOL_MIN_BYTES - 1), undefined);
});

test("a buffer nobody took for the idle time is dropped at the next use; one given again is young again", () => {
  let t = 0;
  const pool = new AmBufferPool(() => t, 2000);
  const old = new ArrayBuffer(64 * KiB);
  const young = new ArrayBuffer(256 * KiB);
  pool.give(old);
  t = 1500;
  pool.give(young);
  assert.is(pool.size, 320 * KiB);
  t = 2600; // `old` has waited 2,600 ms, `young` 1,100 (a look at most every 1,000 ms)
  assert.is(pool.take(1 * MiB), undefined, "nothing fits");
  assert.is(pool.size, 256 * KiB, "the old one dropped, the young one kept");
  t = 2700;
  assert.is(pool.take(200 * KiB), young);
  t = 3400;
  pool.give(young); // in use until now: its idle time starts again
  t = 5000;
  assert.is(pool.take(200 * KiB), young, "given 1,600 ms ago: kept");
  pool.give(young);
  t = 7500;
  assert.is(pool.take(300 * KiB), undefined);
  assert.is(pool.size, 0, "idle since 5,000");
});

test("random sizes (8 KiB to 4 MiB), four in flight, a message every 10 ms: the pool does not creep toward its cap", () => {
  let t = 0;
  const pool = new AmBufferPool(() => t, 2000);
  let seed = 7;
  const rnd = () => (seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) / 2 ** 32;
  const inFlight: ArrayBuffer[] = [];
  let fresh = 0;
  let early = 0;
  let late = 0;
  for (let i = 0; i < 10_000; i++) {
    t += 10;
    const n = Math.floor(Math.exp(Math.log(8 * KiB) + rnd() * Math.log(512)));
    const b = pool.take(n) ?? (fresh++, new ArrayBuffer(n));
    assert.ok(b.byteLength >= n);
    inFlight.push(b);
    if (inFlight.length > 4) pool.give(inFlight.shift()!);
    if (i < 2_000) early = Math.max(early, pool.size);
    else if (i >= 5_000) late = Math.max(late, pool.size);
  }
  // Kept without a limit in time, the same traffic crept from 35 MiB (first 2,000 messages) to
  // 50 MiB (after 5,000), filling each size class with buffers too small for its next message.
  assert.ok(late <= early, `the most kept after 5,000 messages (${late} B) exceeds the most in the first 2,000 (${early} B)`);
  // Reuse still works: most messages found a buffer.
  assert.ok(fresh < 500, `${fresh} of 10,000 messages needed fresh memory`);
});

test.run();
