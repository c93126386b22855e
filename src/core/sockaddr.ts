/**
 * `struct sockaddr_in` / `sockaddr_in6` for UCX's listeners and client endpoints, built from a
 * host and port. Host names are resolved with the runtime's DNS (node:dns works on all three).
 */
import { lookup } from "node:dns/promises";
import { isIP } from "node:net";
import { invalidArgument } from "./errors.ts";

const AF_INET = 2;
const AF_INET6 = 10;

/**
 * A host given by the user, checked before anything resolves or binds it: a non-empty string
 * (the hello's node:net and UCX's sockaddr paths both call this).
 */
export function checkHost(host: unknown): void {
  if (host !== undefined && (typeof host !== "string" || host.trim() === "")) {
    // dns.lookup("") "resolves" to a null address (DEP0118) that nothing below can use.
    throw invalidArgument(`host must be a non-empty string (a name or an IP address), got ${JSON.stringify(host)}`);
  }
}

export async function sockaddr(host: string | undefined, port: number): Promise<Uint8Array> {
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw invalidArgument(`port must be 0..65535, got ${port}`);
  checkHost(host);
  let address = host ?? "0.0.0.0";
  if (isIP(address) === 0) {
    let resolved: string | null | undefined;
    try {
      resolved = (await lookup(address)).address;
    } catch (e) {
      throw invalidArgument(`cannot resolve host '${host}': ${(e as Error).message}`);
    }
    if (typeof resolved !== "string" || isIP(resolved) === 0) throw invalidArgument(`cannot resolve host '${host}'`);
    address = resolved;
  }
  if (isIP(address) === 4) {
    const sa = new Uint8Array(16);
    new DataView(sa.buffer).setUint16(0, AF_INET, true);
    new DataView(sa.buffer).setUint16(2, port, false);
    sa.set(address.split(".").map(Number), 4);
    return sa;
  }
  const sa = new Uint8Array(28);
  const view = new DataView(sa.buffer);
  view.setUint16(0, AF_INET6, true);
  view.setUint16(2, port, false);
  sa.set(ipv6Bytes(address), 8);
  return sa;
}

function ipv6Bytes(address: string): number[] {
  const [head = "", tail = ""] = address.split("::");
  const parse = (s: string) => (s ? s.split(":").map((h) => parseInt(h, 16)) : []);
  const a = parse(head);
  const b = address.includes("::") ? parse(tail) : [];
  const groups = [...a, ...new Array(8 - a.length - b.length).fill(0), ...b];
  return groups.flatMap((g) => [g >> 8, g & 0xff]);
}

/** "a.b.c.d" from the u32 the executor reports for an IPv4 client. */
export function ipv4String(ip: number): string {
  return [ip >>> 24, (ip >>> 16) & 255, (ip >>> 8) & 255, ip & 255].join(".");
}
