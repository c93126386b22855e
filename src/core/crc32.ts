/**
 * CRC-32 (IEEE 802.3, reflected polynomial 0xEDB88320), the checksum zlib and PNG use: ucx-ts
 * puts it on the byte strings that travel between processes (worker addresses, remote keys)
 * so that a corrupted or truncated copy is refused before UCX, which trusts them, unpacks it.
 * A checksum finds accidents, not forgery: a crafted string can carry a valid one.
 */

let table: Uint32Array | undefined;

function crcTable(): Uint32Array {
  if (table) return table;
  table = new Uint32Array(256);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    table[n] = c >>> 0;
  }
  return table;
}

/** CRC-32 of `bytes` (of `parts` one after the other), as an unsigned 32-bit number. */
export function crc32(...parts: Uint8Array[]): number {
  const t = crcTable();
  let c = 0xffffffff;
  for (const bytes of parts) {
    for (let i = 0; i < bytes.length; i++) c = t[(c ^ bytes[i]!) & 0xff]! ^ (c >>> 8);
  }
  return (c ^ 0xffffffff) >>> 0;
}
