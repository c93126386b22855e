/**
 * Import-circle check of src/ (part of `npm test`, right after the layout check): every module
 * must depend only on modules below it, so the import graph must have no cycle, type-only
 * imports included (scripts/import-graph.ts says why).
 *
 * Exit 0 with "no cycles"; exit 1 listing each circle and its cycles otherwise.
 * Run: `npx tsx scripts/check-imports.ts [--graph] [--root DIR]` (`--graph` also prints every
 * file with what it imports; `--root` checks another tree).
 */
import { dirname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { findCircles, importGraph } from "./import-graph.ts";

const args = process.argv.slice(2);
const rootAt = args.indexOf("--root");
const root = rootAt >= 0 ? resolve(args[rootAt + 1] ?? ".") : join(dirname(fileURLToPath(import.meta.url)), "..", "src");
const graph = importGraph(root);

if (args.includes("--graph")) {
  for (const [file, deps] of graph.edges) console.log(`${relative(root, file)} -> ${deps.map((d) => relative(root, d)).join(", ") || "(nothing)"}`);
  console.log("");
}

const edges = [...graph.edges.values()].reduce((n, deps) => n + deps.length, 0);
const circles = findCircles(graph);
if (circles.length === 0) {
  console.log(`import check: ${graph.edges.size} files, ${edges} imports, no cycles`);
  process.exit(0);
}
let cycles = 0;
for (const circle of circles) {
  cycles += circle.cycles.length;
  console.log(`circle of ${circle.files.length} files: ${circle.files.join(", ")}`);
  for (const cycle of circle.cycles) console.log(`  ${cycle.join(" -> ")}`);
}
console.log(`import check: FAILED: ${graph.edges.size} files, ${edges} imports, ${circles.length} circles, ${cycles} cycles`);
process.exit(1);
