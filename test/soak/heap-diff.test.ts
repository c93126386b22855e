/**
 * scripts/soak/heap-diff.ts, on two small heaps written in V8's snapshot format: the kinds that
 * changed, and the objects the second has that the first had not, grouped by who holds them, with
 * V8's own metadata and weak holders left out.
 */
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { kindChanges, newObjects, type HeapSnapshot } from "../../scripts/soak/heap-diff.ts";

const test = suite("soak heap-diff");

type Node = { type: string; name: string; id: number; size: number; edges: { type: string; name: string; to: number }[] };

/** A heap in V8's .heapsnapshot layout (node and edge records flattened, names in `strings`). */
function snapshot(nodes: Node[]): HeapSnapshot {
  const nodeTypes = ["hidden", "array", "string", "object", "code", "closure", "regexp", "number", "native", "synthetic"];
  const edgeTypes = ["context", "element", "property", "internal", "hidden", "shortcut", "weak"];
  const strings: string[] = [];
  const str = (s: string) => (strings.includes(s) ? strings.indexOf(s) : strings.push(s) - 1);
  const flatNodes: number[] = [];
  const flatEdges: number[] = [];
  for (const n of nodes) {
    flatNodes.push(nodeTypes.indexOf(n.type), str(n.name), n.id, n.size, n.edges.length);
    for (const e of n.edges) flatEdges.push(edgeTypes.indexOf(e.type), e.type === "element" ? 0 : str(e.name), e.to * 5);
  }
  return {
    snapshot: { meta: { node_fields: ["type", "name", "id", "self_size", "edge_count"], node_types: [nodeTypes], edge_fields: ["type", "name_or_index", "to_node"], edge_types: [edgeTypes] } },
    nodes: flatNodes,
    edges: flatEdges,
    strings,
  };
}

const root = (edges: Node["edges"]): Node => ({ type: "synthetic", name: "(GC roots)", id: 1, size: 0, edges });
const holder = (edges: Node["edges"]): Node => ({ type: "object", name: "Table", id: 3, size: 32, edges });

test("what the second heap has more of, and who holds it", () => {
  const before = snapshot([root([{ type: "property", name: "table", to: 1 }]), holder([])]);
  const after = snapshot([
    root([{ type: "property", name: "table", to: 1 }]),
    holder([
      { type: "property", name: "byId", to: 2 },
      { type: "element", name: "", to: 3 },
      { type: "element", name: "", to: 4 },
    ]),
    { type: "object", name: "Map", id: 5, size: 40, edges: [] },
    { type: "object", name: "Entry", id: 7, size: 24, edges: [] },
    { type: "object", name: "Entry", id: 9, size: 24, edges: [{ type: "weak", name: "w", to: 5 }] },
    // Compiled code and an object only a weak edge reaches: not the application's growth by holder.
    { type: "code", name: "", id: 11, size: 500, edges: [] },
    { type: "object", name: "Cached", id: 13, size: 16, edges: [] },
  ]);
  const changes = kindChanges(before, after);
  const entry = changes.find((c) => c.kind === "object Entry");
  assert.equal(entry, { kind: "object Entry", countBefore: 0, countAfter: 2, bytesBefore: 0, bytesAfter: 48 });
  assert.equal(changes[0]!.kind, "code", "most bytes first");
  const fresh = newObjects(before, after);
  const entries = fresh.find((g) => g.path.startsWith("object Entry"));
  assert.equal(entries, { path: "object Entry <- object Table.[] <- synthetic (GC roots).table", count: 2, bytes: 48 });
  assert.ok(!fresh.some((g) => g.path.startsWith("code")), "V8 metadata is not listed by holder");
  const cached = fresh.find((g) => g.path.startsWith("object Cached"));
  assert.equal(cached?.path, "object Cached", "held only weakly: no holder");
  assert.ok(!fresh.some((g) => g.path.startsWith("object Table")), "the holder was in the first heap too (same id)");
});

test("the same heap twice: nothing changed, nothing new", () => {
  const s = snapshot([root([{ type: "property", name: "table", to: 1 }]), holder([])]);
  assert.equal(kindChanges(s, s), []);
  assert.equal(newObjects(s, s), []);
});

test.run();
