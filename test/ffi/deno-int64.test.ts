import { suite } from "uvu";
import * as assert from "uvu/assert";
import { bigIntOf, numbersIn, signedNumberOf, unsignedNumberOf } from "../../src/ffi/backends/deno-int64.ts";

// Pure conversions (no Deno API), so they are checked under every runtime.
const test = suite("ffi/deno-int64");

test("bigIntOf gives the exact BigInt, also after slots are shared by colliding values", () => {
  const values = [0, -0, 1, -1, 8, 2 ** 47 + 16, 0x7f12_3456_7890, Number.MAX_SAFE_INTEGER, -(2 ** 40)];
  // 4,096 more values than the memo's 1,024 slots: slots are shared and overwritten.
  for (let i = 0; i < 4096; i++) values.push(0x5555_0000_0000 + i * 8192);
  for (let round = 0; round < 2; round++) {
    for (const v of values) assert.is(bigIntOf(v), BigInt(v));
  }
  assert.throws(() => bigIntOf(1.5));
  // An empty slot holds NaN, never a hit: -1 and 0 must not read a slot's initial value.
  assert.is(bigIntOf(-1), -1n);
});

test("signedNumberOf and unsignedNumberOf are exact, and leave a BigInt beyond 2^53", () => {
  for (const v of [0n, 1n, -1n, -100n, 2n ** 47n + 5n, 2n ** 53n - 1n, -(2n ** 53n) + 1n, 2n ** 32n, 2n ** 32n - 1n]) {
    assert.is(signedNumberOf(v), Number(v));
  }
  assert.is(signedNumberOf(2n ** 53n + 1n), 2n ** 53n + 1n);
  assert.is(signedNumberOf(-(2n ** 63n)), -(2n ** 63n));
  for (const v of [0n, 8n, 2n ** 48n, 2n ** 53n - 1n, 2n ** 32n + 7n]) assert.is(unsignedNumberOf(v), Number(v));
  assert.is(unsignedNumberOf(2n ** 64n - 1n), 2n ** 64n - 1n);
});

test("numbersIn converts only 64-bit parameters and passes the result through", () => {
  const seen: unknown[][] = [];
  const fn = (...a: unknown[]) => (seen.push(a), 7n);
  for (let n = 0; n <= 8; n++) {
    const types = Array.from({ length: n }, (_, i) => (i % 2 === 0 ? "isize" : "i32"));
    const args = Array.from({ length: n }, (_, i) => i + 1);
    seen.length = 0;
    assert.is(numbersIn(fn, types, signedNumberOf)(...args), 7);
    assert.equal(seen[0], args.map((v, i) => (i % 2 === 0 ? BigInt(v) : v)));
  }
  // A BigInt given to a 64-bit parameter goes through as it is.
  seen.length = 0;
  numbersIn(fn, ["u64"])(5n);
  assert.is(seen[0]![0], 5n);
});

test.run();
