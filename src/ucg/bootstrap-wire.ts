/**
 * The bootstrap's two messages (bootstrap.ts), as bytes:
 * - hello, a rank to rank 0: rank u32 | host length u16 | host (UTF-8) | worker address
 * - table, rank 0 to every rank: per rank, host length u16 | address length u32 | host | address,
 *   announced first by its length (u32 in an 8-byte message), so the receiver sizes its buffer.
 * Little-endian. Both come from another process: a decoder accepts exactly what the encoder
 * makes and turns anything else (cut, extended, lengths that lie, an empty address, a table
 * longer than `size` hellos could fill) into UCX_TS_PROTOCOL_ERROR, never a RangeError, a
 * silently shortened address or an allocation a peer chose.
 */
import { UcxError } from "../core/errors.ts";

/** Largest hello (rank, host, worker address): UCX addresses are a few hundred bytes. */
export const HELLO_CAPACITY = 64 * 1024;
const HELLO_HEAD = 6;
const ENTRY_HEAD = 6;

export interface BootstrapHello {
  readonly rank: number;
  readonly host: string;
  readonly address: Uint8Array;
}

export interface BootstrapTable {
  readonly addresses: readonly Uint8Array[];
  readonly hosts: readonly string[];
}

const refuse = (what: string) => new UcxError("UCX_TS_PROTOCOL_ERROR", `bootstrap: ${what}`);
/** Host names are text: a byte sequence that is not UTF-8 is refused, not replaced by U+FFFD. */
const utf8 = new TextDecoder("utf-8", { fatal: true });
function decodeHost(bytes: Uint8Array, whose: string): string {
  try {
    return utf8.decode(bytes);
  } catch {
    throw refuse(`${whose} host name is not UTF-8`);
  }
}

export function encodeHello(rank: number, host: string, address: Uint8Array): Uint8Array {
  const h = new TextEncoder().encode(host);
  if (h.length > 0xffff || HELLO_HEAD + h.length + address.length > HELLO_CAPACITY) throw refuse(`this process's host name (${h.length} B) and address (${address.length} B) exceed the hello's ${HELLO_CAPACITY} B`);
  const out = new Uint8Array(HELLO_HEAD + h.length + address.length);
  const dv = new DataView(out.buffer);
  dv.setUint32(0, rank, true);
  dv.setUint16(4, h.length, true);
  out.set(h, HELLO_HEAD);
  out.set(address, HELLO_HEAD + h.length);
  return out;
}

export function decodeHello(bytes: Uint8Array): BootstrapHello {
  if (bytes.length < HELLO_HEAD) throw refuse(`a hello of ${bytes.length} B is shorter than its ${HELLO_HEAD}-byte head`);
  const dv = new DataView(bytes.buffer, bytes.byteOffset, bytes.length);
  const hostLength = dv.getUint16(4, true);
  const addressLength = bytes.length - HELLO_HEAD - hostLength;
  if (addressLength <= 0) throw refuse(`a hello's host name (${hostLength} B) leaves no worker address in its ${bytes.length} B`);
  return {
    rank: dv.getUint32(0, true),
    host: decodeHost(bytes.subarray(HELLO_HEAD, HELLO_HEAD + hostLength), "a hello's"),
    address: bytes.slice(HELLO_HEAD + hostLength),
  };
}

/** The most bytes a table for `size` ranks can take: each entry came from a hello of at most HELLO_CAPACITY. */
export const maxTableBytes = (size: number) => size * (ENTRY_HEAD + HELLO_CAPACITY);

export function encodeTable(hosts: readonly string[], addresses: readonly Uint8Array[]): Uint8Array {
  const names = hosts.map((h) => new TextEncoder().encode(h));
  const out = new Uint8Array(names.reduce((n, h, r) => n + ENTRY_HEAD + h.length + addresses[r]!.length, 0));
  const dv = new DataView(out.buffer);
  let at = 0;
  names.forEach((h, r) => {
    dv.setUint16(at, h.length, true);
    dv.setUint32(at + 2, addresses[r]!.length, true);
    out.set(h, at + ENTRY_HEAD);
    out.set(addresses[r]!, at + ENTRY_HEAD + h.length);
    at += ENTRY_HEAD + h.length + addresses[r]!.length;
  });
  return out;
}

/** The table's announced length, checked before a buffer of that size is made. */
export function decodeTableLength(bytes: Uint8Array, size: number): number {
  if (bytes.length < 4) throw refuse(`the table's length message has ${bytes.length} B`);
  const length = new DataView(bytes.buffer, bytes.byteOffset, bytes.length).getUint32(0, true);
  if (length < size * (ENTRY_HEAD + 1) || length > maxTableBytes(size)) throw refuse(`rank 0 announces a table of ${length} B for ${size} ranks (${size * (ENTRY_HEAD + 1)}-${maxTableBytes(size)} B possible)`);
  return length;
}

export function decodeTable(bytes: Uint8Array, size: number): BootstrapTable {
  const dv = new DataView(bytes.buffer, bytes.byteOffset, bytes.length);
  const hosts: string[] = [];
  const addresses: Uint8Array[] = [];
  let at = 0;
  for (let r = 0; r < size; r++) {
    if (at + ENTRY_HEAD > bytes.length) throw refuse(`the address table from rank 0 ends before rank ${r}'s entry`);
    const hl = dv.getUint16(at, true);
    const al = dv.getUint32(at + 2, true);
    if (al === 0) throw refuse(`rank ${r}'s entry in the address table has no worker address`);
    const end = at + ENTRY_HEAD + hl + al;
    if (end > bytes.length) throw refuse(`rank ${r}'s entry in the address table (${hl} + ${al} B) runs past its end`);
    hosts.push(decodeHost(bytes.subarray(at + ENTRY_HEAD, at + ENTRY_HEAD + hl), `rank ${r}'s`));
    addresses.push(bytes.slice(at + ENTRY_HEAD + hl, end));
    at = end;
  }
  if (at !== bytes.length) throw refuse(`the address table from rank 0 has ${bytes.length - at} B after its ${size} entries`);
  return { hosts, addresses };
}
