/**
 * Typed access to one C struct instance, driven by the layout table. A `Struct` either owns
 * JavaScript memory (parameters we fill in and pass by address) or views C memory (results UCX
 * hands back, such as a resource list).
 */
import { layouts, type FieldDef, type LayoutDef, type LayoutName } from "./layouts.ts";

const decoder = new TextDecoder();

export class Struct<N extends LayoutName = LayoutName> {
  readonly layout: LayoutDef;
  readonly view: DataView;

  constructor(
    readonly name: N,
    buffer?: ArrayBufferLike,
    byteOffset = 0,
    /** The loaded UCX's layout of `name` (`Ucx.layouts`); default the table's. */
    layout: LayoutDef = layouts[name],
  ) {
    this.layout = layout;
    buffer ??= new ArrayBuffer(layout.size);
    this.view = new DataView(buffer, byteOffset, layout.size);
  }

  /** The struct's bytes (for taking its address or copying it). */
  get bytes(): Uint8Array {
    return new Uint8Array(this.view.buffer, this.view.byteOffset, this.view.byteLength);
  }

  private field(name: string): FieldDef {
    const f = this.layout.fields[name];
    if (!f) throw new TypeError(`${this.name} has no field '${name}' in ucx-ts's layout table`);
    return f;
  }

  /** Zero every byte, as UCX expects of a fresh params struct. */
  clear(): this {
    this.bytes.fill(0);
    return this;
  }

  set(name: string, value: number | bigint): this {
    const f = this.field(name);
    const v = this.view;
    const o = f.offset;
    switch (f.type) {
      case "i8":
      case "status":
        v.setInt8(o, Number(value));
        break;
      case "u8":
        v.setUint8(o, Number(value));
        break;
      case "i16":
        v.setInt16(o, Number(value), true);
        break;
      case "u16":
        v.setUint16(o, Number(value), true);
        break;
      case "i32":
        v.setInt32(o, Number(value), true);
        break;
      case "u32":
        v.setUint32(o, Number(value), true);
        break;
      case "f64":
        v.setFloat64(o, Number(value), true);
        break;
      case "i64":
      case "ptr":
        v.setBigInt64(o, BigInt(value), true);
        break;
      case "u64":
      case "usize":
        v.setBigUint64(o, BigInt.asUintN(64, BigInt(value)), true);
        break;
    }
    return this;
  }

  /** A scalar field; 64-bit values come back as Numbers when they fit exactly. */
  get(name: string): number | bigint {
    const f = this.field(name);
    const v = this.view;
    const o = f.offset;
    switch (f.type) {
      case "i8":
      case "status":
        return v.getInt8(o);
      case "u8":
        return v.getUint8(o);
      case "i16":
        return v.getInt16(o, true);
      case "u16":
        return v.getUint16(o, true);
      case "i32":
        return v.getInt32(o, true);
      case "u32":
        return v.getUint32(o, true);
      case "f64":
        return v.getFloat64(o, true);
      case "i64":
      case "ptr":
        return narrow(v.getBigInt64(o, true));
      case "u64":
      case "usize":
        return narrow(v.getBigUint64(o, true));
    }
  }

  /** A scalar field that is known to fit a Number (sizes, counts, pointers). */
  getNumber(name: string): number {
    return Number(this.get(name));
  }

  /** A `char name[N]` field, read up to its first NUL. */
  getString(name: string): string {
    const f = this.field(name);
    const raw = new Uint8Array(this.view.buffer, this.view.byteOffset + f.offset, f.count ?? 1);
    const end = raw.indexOf(0);
    return decoder.decode(raw.subarray(0, end < 0 ? raw.length : end));
  }

  /** The raw bytes of an array field (a `sockaddr_storage`, say). */
  getBytes(name: string): Uint8Array {
    const f = this.field(name);
    return new Uint8Array(this.view.buffer, this.view.byteOffset + f.offset, f.count ?? 1);
  }
}

function narrow(v: bigint): number | bigint {
  return v <= BigInt(Number.MAX_SAFE_INTEGER) && v >= BigInt(Number.MIN_SAFE_INTEGER) ? Number(v) : v;
}
