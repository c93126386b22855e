/**
 * Datatypes of the collectives: contiguous arrays of one of the predefined element types,
 * named after the typed array that holds them. The seed's "datatype & op" section asks for one
 * interface over predefined and user-defined types; the plans only see an element size (the
 * seed's smallest unit of splitting is the datatype's element), never the type itself.
 */
import { UcxError } from "../core/errors.ts";

export type DatatypeName =
  | "int8" | "int16" | "int32" | "int64"
  | "uint8" | "uint16" | "uint32" | "uint64"
  | "float32" | "float64";

export type NumberArray = Int8Array | Int16Array | Int32Array | Uint8Array | Uint16Array | Uint32Array | Float32Array | Float64Array;
export type BigIntArray = BigInt64Array | BigUint64Array;
export type CollectiveArray = NumberArray | BigIntArray;

export interface Datatype {
  readonly name: DatatypeName;
  /** Bytes of one element: the smallest unit a plan splits data in. */
  readonly size: number;
  readonly integer: boolean;
  readonly bigint: boolean;
  /** A new zeroed array of `count` elements of this type. */
  create(count: number): CollectiveArray;
  /** A view of this type over `bytes` (aligned). */
  view(buffer: ArrayBufferLike, byteOffset: number, count: number): CollectiveArray;
}

function make(name: DatatypeName, ctor: { new (n: number): CollectiveArray; new (b: ArrayBufferLike, o: number, n: number): CollectiveArray; BYTES_PER_ELEMENT: number }, integer: boolean, bigint: boolean): Datatype {
  return {
    name,
    size: ctor.BYTES_PER_ELEMENT,
    integer,
    bigint,
    create: (count) => new ctor(count),
    view: (buffer, byteOffset, count) => new ctor(buffer, byteOffset, count),
  };
}

export const DATATYPES: Readonly<Record<DatatypeName, Datatype>> = {
  int8: make("int8", Int8Array as never, true, false),
  int16: make("int16", Int16Array as never, true, false),
  int32: make("int32", Int32Array as never, true, false),
  int64: make("int64", BigInt64Array as never, true, true),
  uint8: make("uint8", Uint8Array as never, true, false),
  uint16: make("uint16", Uint16Array as never, true, false),
  uint32: make("uint32", Uint32Array as never, true, false),
  uint64: make("uint64", BigUint64Array as never, true, true),
  float32: make("float32", Float32Array as never, false, false),
  float64: make("float64", Float64Array as never, false, false),
};

/** The datatype of a typed array; anything else (DataView, Uint8ClampedArray, plain arrays) is refused. */
export function datatypeOf(array: unknown, what = "buffer"): Datatype {
  const name =
    array instanceof Int8Array ? "int8"
    : array instanceof Int16Array ? "int16"
    : array instanceof Int32Array ? "int32"
    : array instanceof BigInt64Array ? "int64"
    : array instanceof Uint8Array && !(array instanceof Uint8ClampedArray) ? "uint8"
    : array instanceof Uint16Array ? "uint16"
    : array instanceof Uint32Array ? "uint32"
    : array instanceof BigUint64Array ? "uint64"
    : array instanceof Float32Array ? "float32"
    : array instanceof Float64Array ? "float64"
    : undefined;
  if (name === undefined) {
    const got = array === null ? "null" : typeof array === "object" ? (array as object).constructor?.name : typeof array;
    throw new UcxError("UCX_TS_INVALID_ARGUMENT", `${what} must be a typed array of int8..int64, uint8..uint64, float32 or float64 elements, got ${got}`);
  }
  return DATATYPES[name];
}

/** The bytes of `array[offset, offset + count)` (elements). */
export function byteView(array: CollectiveArray, offset: number, count: number): Uint8Array {
  return new Uint8Array(array.buffer, array.byteOffset + offset * array.BYTES_PER_ELEMENT, count * array.BYTES_PER_ELEMENT);
}
