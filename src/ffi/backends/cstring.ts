/** Encoding of `cstr` arguments for backends whose FFI takes bytes, not strings. */
const encoder = new TextEncoder();

/** UTF-8 bytes of `s` followed by a NUL, or null for a NULL `const char *`. */
export function toCString(s: string | null | undefined): Uint8Array | null {
  if (s === null || s === undefined) return null;
  const bytes = new Uint8Array(s.length * 3 + 1);
  const { written } = encoder.encodeInto(s, bytes);
  return bytes.subarray(0, written + 1); // the rest is zero, so bytes[written] is the NUL
}

/** Indices of the `cstr` arguments of a signature (empty for most symbols). */
export function cstringArgs(args: readonly string[]): number[] {
  const out: number[] = [];
  args.forEach((t, i) => t === "cstr" && out.push(i));
  return out;
}

/** Wrap a native function so the listed arguments are converted from JS strings first. */
// deno-lint-ignore no-explicit-any
export function withCStrings(fn: (...a: any[]) => any, indices: number[]): (...a: any[]) => any {
  if (indices.length === 0) return fn;
  // deno-lint-ignore no-explicit-any
  return (...a: any[]) => {
    for (const i of indices) a[i] = toCString(a[i]);
    return fn(...a);
  };
}
