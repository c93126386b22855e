/**
 * The small C type vocabulary that the symbol table and the struct layouts are written in.
 *
 * Every backend maps these names onto its own FFI types; nothing above `src/ffi/` sees a
 * runtime-specific type. Pointers are plain Numbers everywhere above this folder: user-space
 * addresses on x86-64 and AArch64 Linux are below 2^48, so a Number holds one exactly, and
 * Numbers avoid the BigInt cost that ../shared/design/ffi-facts.md measured on koffi.
 */

/** A C address as seen by JavaScript. `0` is NULL. */
export type Pointer = number;

export const NULL: Pointer = 0;

/**
 * C scalar types used in the tables.
 * - `status` is `ucs_status_t`, a packed enum that is ONE signed byte on UCX's ABI.
 * - `ptr` is any data or function pointer, passed and returned as a Number.
 * - `cstr` is a `const char *` argument given as a JavaScript string (encoded as UTF-8 + NUL).
 */
export type CType =
  | "void"
  | "i8"
  | "u8"
  | "i16"
  | "u16"
  | "i32"
  | "u32"
  | "i64"
  | "u64"
  | "usize"
  | "f64"
  | "ptr"
  | "cstr"
  | "status";

/** JavaScript type accepted for an argument of a given C type. */
export type ArgValue<T extends CType> = T extends "void"
  ? never
  : T extends "cstr"
    ? string | null
    : T extends "i64" | "u64" | "usize"
      ? number | bigint
      : number;

/**
 * JavaScript type returned for a given C type. 64-bit integers come back as a Number when
 * they fit exactly and as a BigInt otherwise (backends differ in what they hand out; the
 * backend normalises).
 */
export type ResultValue<T extends CType> = T extends "void"
  ? void
  : T extends "i64" | "u64" | "usize"
    ? number | bigint
    : number;

/** Size in bytes of each scalar type on the LP64 ABIs UCX supports (x86-64, AArch64, ppc64le). */
export const C_SIZE: Record<Exclude<CType, "void" | "cstr">, number> = {
  i8: 1,
  u8: 1,
  i16: 2,
  u16: 2,
  i32: 4,
  u32: 4,
  i64: 8,
  u64: 8,
  usize: 8,
  f64: 8,
  ptr: 8,
  status: 1,
};
