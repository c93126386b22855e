/**
 * What grew between two V8 heap snapshots of one process (`npm run soak -- --heap-snapshots DIR`
 * writes them at the second at-rest reading and with every connection closed; `v8.writeHeapSnapshot()`
 * anywhere else):
 *
 *   node --import tsx scripts/soak/heap-diff.ts A.heapsnapshot B.heapsnapshot [--top N]
 *
 * prints (1) the objects by kind, count and bytes, that changed most; (2) the objects of B that A
 * did not have (a node's id is kept across snapshots of one process), grouped by who holds them
 * (the first two retainers): what a leak keeps is there, with its holder. V8's own metadata
 * (code, feedback vectors, maps: the optimizing compiler's, which grow while a program warms up)
 * is counted in (1) under "code"/"hidden"/"object shape" and left out of (2), as are native nodes,
 * whose ids Node makes afresh for every snapshot.
 *
 * Why: issue 26's at-rest JS heap line (+1.64 MiB per 100k operations over 38 minutes) could be
 * library bookkeeping, the soak's own records, or the compiler's; only the objects tell.
 */
import { readFileSync } from "node:fs";
import process from "node:process";

/** The parts of the .heapsnapshot format (V8's JSON) read here. */
export interface HeapSnapshot {
  snapshot: { meta: { node_fields: string[]; node_types: [string[], ...unknown[]]; edge_fields: string[]; edge_types: [string[], ...unknown[]] } };
  nodes: number[];
  edges: number[];
  strings: string[];
}

/** Node kinds whose ids are not comparable across snapshots, or that are V8's own metadata. */
const NOT_APPLICATION = new Set(["code", "hidden", "object shape", "synthetic", "native"]);

/** A node's kind as reported: its type, and for objects and closures its constructor or function name. */
function kindOf(type: string, name: string): string {
  switch (type) {
    case "string":
    case "concatenated string":
    case "sliced string":
      return "string";
    case "number":
      return "heap number";
    case "object":
    case "closure":
    case "native":
    case "synthetic":
      return `${type} ${name.slice(0, 60)}`;
    default:
      return type;
  }
}

interface Indexed {
  count: number;
  type(i: number): string;
  name(i: number): string;
  id(i: number): number;
  selfSize(i: number): number;
  /** The first few (strong) retainers of node i: [retainer index, edge name]. */
  retainers(i: number): [number, string][];
}

function index(s: HeapSnapshot): Indexed {
  const nf = s.snapshot.meta.node_fields;
  const ef = s.snapshot.meta.edge_fields;
  const types = s.snapshot.meta.node_types[0];
  const edgeTypes = s.snapshot.meta.edge_types[0];
  const [ti, ni, ii, si, ci] = ["type", "name", "id", "self_size", "edge_count"].map((f) => nf.indexOf(f)) as [number, number, number, number, number];
  const [eti, eni, eto] = ["type", "name_or_index", "to_node"].map((f) => ef.indexOf(f)) as [number, number, number];
  const n = s.nodes.length / nf.length;
  let retainedBy: [number, string][][] | undefined;
  const node = (i: number, f: number) => s.nodes[i * nf.length + f]!;
  return {
    count: n,
    type: (i) => types[node(i, ti)]!,
    name: (i) => s.strings[node(i, ni)]!,
    id: (i) => node(i, ii),
    selfSize: (i) => node(i, si),
    retainers(i) {
      if (!retainedBy) {
        retainedBy = Array.from({ length: n }, () => []);
        let e = 0;
        for (let from = 0; from < n; from++) {
          for (let k = node(from, ci); k > 0; k--, e += ef.length) {
            const et = edgeTypes[s.edges[e + eti]!]!;
            if (et === "weak") continue; // holds nothing alive
            const to = s.edges[e + eto]! / nf.length;
            const list = retainedBy[to]!;
            if (list.length < 4) list.push([from, et === "element" || et === "hidden" ? "[]" : String(s.strings[s.edges[e + eni]!] ?? s.edges[e + eni])]);
          }
        }
      }
      return retainedBy[i]!;
    },
  };
}

export interface KindChange {
  kind: string;
  countBefore: number;
  countAfter: number;
  bytesBefore: number;
  bytesAfter: number;
}

/** Count and self size by kind in each snapshot, the kinds that changed, most bytes first. */
export function kindChanges(a: HeapSnapshot, b: HeapSnapshot): KindChange[] {
  const tally = (s: Indexed) => {
    const m = new Map<string, [number, number]>();
    for (let i = 0; i < s.count; i++) {
      const k = kindOf(s.type(i), s.name(i));
      const t = m.get(k) ?? [0, 0];
      t[0]++;
      t[1] += s.selfSize(i);
      m.set(k, t);
    }
    return m;
  };
  const ta = tally(index(a));
  const tb = tally(index(b));
  const out: KindChange[] = [];
  for (const kind of new Set([...ta.keys(), ...tb.keys()])) {
    const [countBefore, bytesBefore] = ta.get(kind) ?? [0, 0];
    const [countAfter, bytesAfter] = tb.get(kind) ?? [0, 0];
    if (countBefore !== countAfter || bytesBefore !== bytesAfter) out.push({ kind, countBefore, countAfter, bytesBefore, bytesAfter });
  }
  return out.sort((x, y) => Math.abs(y.bytesAfter - y.bytesBefore) - Math.abs(x.bytesAfter - x.bytesBefore));
}

export interface NewObjects {
  /** "kind <- holder.edge <- holder's holder.edge" */
  path: string;
  count: number;
  bytes: number;
}

/** The application's objects in b that a did not have, grouped by their first two retainers. */
export function newObjects(a: HeapSnapshot, b: HeapSnapshot): NewObjects[] {
  const ia = index(a);
  const before = new Set<number>();
  for (let i = 0; i < ia.count; i++) before.add(ia.id(i));
  const ib = index(b);
  const groups = new Map<string, NewObjects>();
  const label = (i: number) => kindOf(ib.type(i), ib.name(i));
  for (let i = 0; i < ib.count; i++) {
    if (before.has(ib.id(i)) || NOT_APPLICATION.has(ib.type(i))) continue;
    const parts = [label(i)];
    let at = i;
    for (let depth = 0; depth < 2; depth++) {
      const r = ib.retainers(at)[0];
      if (!r) break;
      parts.push(`${label(r[0])}.${r[1]}`);
      at = r[0];
    }
    const path = parts.join(" <- ");
    const g = groups.get(path) ?? { path, count: 0, bytes: 0 };
    g.count++;
    g.bytes += ib.selfSize(i);
    groups.set(path, g);
  }
  return [...groups.values()].sort((x, y) => y.bytes - x.bytes);
}

function main(): void {
  const args = process.argv.slice(2);
  const files = args.filter((x, i) => !x.startsWith("--") && args[i - 1] !== "--top");
  const topAt = args.indexOf("--top");
  const top = topAt >= 0 ? Number(args[topAt + 1]) : 30;
  if (files.length !== 2 || !Number.isInteger(top) || top < 1) {
    console.error("usage: heap-diff.ts A.heapsnapshot B.heapsnapshot [--top N]");
    process.exit(2);
  }
  const [a, b] = files.map((f) => JSON.parse(readFileSync(f, "utf8")) as HeapSnapshot) as [HeapSnapshot, HeapSnapshot];
  const changes = kindChanges(a, b);
  const total = (k: "bytesBefore" | "bytesAfter") => changes.reduce((s, c) => s + c[k], 0);
  console.log(`changed kinds: ${total("bytesBefore")} -> ${total("bytesAfter")} B (${total("bytesAfter") - total("bytesBefore")} B)`);
  console.log("bytes change   count change  kind");
  for (const c of changes.slice(0, top)) console.log(`${String(c.bytesAfter - c.bytesBefore).padStart(12)}  ${String(c.countAfter - c.countBefore).padStart(12)}  ${c.kind} (${c.countBefore} -> ${c.countAfter})`);
  const fresh = newObjects(a, b);
  console.log(`\nnew since the first snapshot (not V8 metadata): ${fresh.reduce((s, g) => s + g.count, 0)} objects, ${fresh.reduce((s, g) => s + g.bytes, 0)} B, by holder:`);
  for (const g of fresh.slice(0, top)) console.log(`${String(g.bytes).padStart(10)} B ${String(g.count).padStart(7)}  ${g.path}`);
}

if (process.argv[1] && /heap-diff\.(ts|mjs|js)$/.test(process.argv[1])) main();
