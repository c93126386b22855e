/**
 * The UCT section of `ucx-ts info`: components, memory domains and transports with their
 * attributes, in the shape `ucx_info -d` prints them.
 */
import type { UctTransportInfo } from "../core/uct/index.ts";

const size = (n: number) => (n === Infinity ? "unlimited" : n >= 1024 && n % 1024 === 0 ? `${n / 1024}K` : String(n));

export function formatUctTransports(list: readonly UctTransportInfo[]): string {
  const lines: string[] = ["UCT components, memory domains and transports (like ucx_info -d):"];
  let lastMd = "";
  for (const t of list) {
    const mdKey = `${t.component}/${t.memoryDomain}`;
    if (mdKey !== lastMd) {
      lastMd = mdKey;
      const m = t.memoryDomainAttributes;
      lines.push(`  Memory domain: ${t.memoryDomain} (component ${t.component})`);
      lines.push(`    ${[m.canRegister ? `register: ${size(m.maxRegister)}` : "", m.canAllocate ? `allocate: ${size(m.maxAlloc)}` : "", `remote key: ${m.remoteKeySize} bytes`].filter(Boolean).join(", ")}`);
    }
    lines.push(`    Transport: ${t.transport}  Device: ${t.device}  Type: ${t.deviceType}`);
    const a = t.attributes;
    if (!a) {
      lines.push(`      (could not open: ${t.error})`);
      continue;
    }
    lines.push(`      bandwidth: ${(a.bandwidth.shared / 1e6).toFixed(2)}/ppn + ${(a.bandwidth.dedicated / 1e6).toFixed(2)} MB/s, latency: ${(a.latency.fixed * 1e9).toFixed(0)} ns, overhead: ${(a.overhead * 1e9).toFixed(0)} ns`);
    const ops: string[] = [];
    for (const [op, lim] of [["am", a.am], ["put", a.put], ["get", a.get]] as const) {
      if (a.capabilities.includes(`${op}_short`)) ops.push(`${op}_short <= ${size(lim.maxShort)}`);
      if (a.capabilities.includes(`${op}_bcopy`)) ops.push(`${op}_bcopy <= ${size(lim.maxBcopy)}`);
      if (a.capabilities.includes(`${op}_zcopy`)) ops.push(`${op}_zcopy <= ${size(lim.maxZcopy)} (${lim.maxIov} iov)`);
    }
    lines.push(`      ${ops.join(", ") || "no data operations"}`);
    const atomics = (["atomic32", "atomic64"] as const).flatMap((w) => {
      const x = a[w];
      // as ucx_info names them: add (post), fadd (fetch), swap and cswap (always fetching)
      const names = [...x.post, ...x.fetch.map((f) => (f === "swap" || f === "cswap" ? f : `f${f}`))];
      return names.length > 0 ? [`${w}: ${[...new Set(names)].join(" ")}`] : [];
    });
    if (atomics.length > 0) lines.push(`      ${atomics.join("; ")}`);
    lines.push(`      connection: ${[a.connectToInterface ? "to iface" : "", a.connectToEndpoint ? "to ep" : ""].filter(Boolean).join(", ")}`);
  }
  return lines.join("\n");
}

/** JSON for the report: the capability mask as hex, unlimited sizes as "unlimited". */
export function uctJsonReplacer(_key: string, value: unknown): unknown {
  if (typeof value === "bigint") return `0x${value.toString(16)}`;
  if (value === Infinity) return "unlimited";
  return value;
}
