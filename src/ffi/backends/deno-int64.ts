/**
 * 64-bit integers between ucx-ts's Numbers and Deno's FFI, at the cost of Deno's fast calls.
 *
 * Deno calls a C function through V8's fast API only when every 64-bit parameter (`isize`,
 * `usize`, `i64`, `u64`) is given a BigInt: one Number among them sends the whole call down the
 * slow path. Measured 2026-11-25 (Deno 2.9.6, this 2-core VM at load ~7, one process per case,
 * `free(NULL)` and `memcpy(a, a, 0)` from libc): `free(isize)` 0.005 us with `0n`, 0.090 us with
 * `0`; the same for usize/i64/u64 (0.004 against 0.076-0.095); `memcpy(isize, isize, usize)`
 * 0.004 us with three BigInts, 0.140 with three Numbers, 0.121 with one Number among BigInts.
 * A `pointer` parameter is fast too (0.005 with null) but refuses a Number (a throw, ~3 us), and
 * making a pointer object from a Number costs more than a BigInt.
 *
 * Everything above `src/ffi` passes Numbers, so the backend turns them into BigInts. `BigInt(n)`
 * per argument cost 0.011 us (0.037 for memcpy's three); the handles of the data path repeat
 * (worker, endpoint, request parameter, receive-info scratch, pooled requests, the same buffers,
 * the same lengths and tags), so a small direct-mapped memo of Number -> BigInt makes a hit cost
 * almost nothing (memcpy's three arguments 0.005 us). The memo maps a value to the same value:
 * a stale entry cannot be wrong, it is only replaced, and it holds no memory of C's or anyone's.
 *
 * Results come back as BigInts; `Number(big)` cost 0.026 us a result, reading the bits back
 * through a typed array 0.007.
 *
 * Through the backend's table (Numbers in, Numbers out, one process per call, 2026-11-25):
 * `free(NULL)` 0.101 -> 0.009 us, `strlen(p)` 0.382 -> 0.007, `memcpy(p, p, 0)` 0.343 -> 0.008,
 * `ucs_status_string(0)` (no 64-bit argument, a pointer result) 0.020 -> 0.009.
 */

const SLOTS = 1024; // a power of two
const memoKeys = new Float64Array(SLOTS).fill(NaN); // NaN equals nothing: an empty slot never hits
const memoValues: bigint[] = new Array<bigint>(SLOTS).fill(0n);

/**
 * The BigInt of an integral Number, memoised. Addresses are 8- or 16-byte aligned, so the slot
 * takes the bits above the lowest three, mixed with bits 13+ so that addresses a multiple of
 * 8 KiB apart do not all share one slot.
 */
export function bigIntOf(n: number): bigint {
  const slot = ((n >>> 3) ^ (n >>> 13)) & (SLOTS - 1);
  if (memoKeys[slot] === n) return memoValues[slot]!;
  const big = BigInt(n); // a RangeError for a fractional Number: no C integer holds one
  memoKeys[slot] = n;
  memoValues[slot] = big;
  return big;
}

/** 64-bit CTypes, as Deno's FFI names them. */
const WIDE = new Set(["isize", "usize", "i64", "u64"]);

// deno-lint-ignore no-explicit-any
type Fn = (...a: any[]) => any;
// deno-lint-ignore no-explicit-any
type Convert = (v: any) => any;

const same: Convert = (v) => v;
const big: Convert = (v) => (typeof v === "number" ? bigIntOf(v) : v);

/**
 * `fn` taking Numbers where it takes 64-bit integers (BigInts still accepted as they are), its
 * result passed through `result`. One fixed-arity wrapper per parameter count up to seven, the
 * longest UCX call of the table: rest arrays spread twice (arguments, then result) took
 * `memcpy(ptr, ptr, usize)` from 0.004 to 0.124 us a call (measured 2026-11-25).
 */
export function numbersIn(fn: Fn, denoTypes: readonly string[], result: Convert = same): Fn {
  const c = denoTypes.map((t) => (WIDE.has(t) ? big : same));
  const [c0, c1, c2, c3, c4, c5, c6] = c;
  switch (c.length) {
    case 0:
      return () => result(fn());
    case 1:
      return (a0) => result(fn(c0!(a0)));
    case 2:
      return (a0, a1) => result(fn(c0!(a0), c1!(a1)));
    case 3:
      return (a0, a1, a2) => result(fn(c0!(a0), c1!(a1), c2!(a2)));
    case 4:
      return (a0, a1, a2, a3) => result(fn(c0!(a0), c1!(a1), c2!(a2), c3!(a3)));
    case 5:
      return (a0, a1, a2, a3, a4) => result(fn(c0!(a0), c1!(a1), c2!(a2), c3!(a3), c4!(a4)));
    case 6:
      return (a0, a1, a2, a3, a4, a5) => result(fn(c0!(a0), c1!(a1), c2!(a2), c3!(a3), c4!(a4), c5!(a5)));
    case 7:
      return (a0, a1, a2, a3, a4, a5, a6) =>
        result(fn(c0!(a0), c1!(a1), c2!(a2), c3!(a3), c4!(a4), c5!(a5), c6!(a6)));
    default:
      return (...a: unknown[]) => result(fn(...a.map((v, i) => c[i]!(v))));
  }
}

const scratch = new BigInt64Array(1);
const scratchU = new BigUint64Array(scratch.buffer);
const lo = new Uint32Array(scratch.buffer);
const hiSigned = new Int32Array(scratch.buffer);
const TWO_32 = 4294967296;
const HI_SAFE = 1 << 21; // |high word| below 2^21: the value is within +-2^53, exactly a Number

/** A signed 64-bit result (pointers, `ucs_status_ptr_t`, i64) as a Number, exactly. */
export function signedNumberOf(v: bigint): number | bigint {
  scratch[0] = v; // v is within int64: Deno made it from one
  const hi = hiSigned[1]!;
  if (hi > -HI_SAFE && hi < HI_SAFE) return hi * TWO_32 + lo[0]!;
  return v <= BigInt(Number.MAX_SAFE_INTEGER) && v >= BigInt(Number.MIN_SAFE_INTEGER) ? Number(v) : v;
}

/** An unsigned 64-bit result (usize, u64) as a Number when it fits exactly, else the BigInt. */
export function unsignedNumberOf(v: bigint): number | bigint {
  scratchU[0] = v;
  const hi = lo[1]!;
  if (hi < HI_SAFE) return hi * TWO_32 + lo[0]!;
  return v <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(v) : v;
}
