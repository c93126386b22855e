/**
 * Import-circle check of src/ (part of `npm test`, right after the layout check): every module
 * must depend only on modules below it, so the import graph must have no cycle, type-only
 * imports included (scripts/import-graph.ts says why).
 *
 * Exit 0 with "no cycles"; exit 1 listing each circle and its cycles otherwise. Cycles listed in
 * scripts/known-import-cycles.txt (owed a fix, each with the reason) are reported but do not
 * fail the check; any other cycle does (`--strict`: known ones too).
 * Run: `npx tsx scripts/check-imports.ts [--graph] [--root DIR]` (`--graph` also prints every
 * file with what it imports; `--root` checks another tree).
 */
import { existsSync, readFileSync } from "node:fs";
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
const knownFile = join(dirname(fileURLToPath(import.meta.url)), "known-import-cycles.txt");
const known = new Set(
  rootAt >= 0 || args.includes("--strict") || !existsSync(knownFile)
    ? []
    : readFileSync(knownFile, "utf8").split("\n").map((l) => l.trim()).filter((l) => l !== "" && !l.startsWith("#")),
);
const circles = findCircles(graph);
const all = circles.flatMap((c) => c.cycles.map((cycle) => cycle.join(" -> ")));
const fresh = all.filter((c) => !known.has(c));
for (const k of known) if (!all.includes(k)) console.log(`import check: known cycle gone (remove it from known-import-cycles.txt): ${k}`);
for (const c of all.filter((c) => known.has(c))) console.log(`import check: known cycle, owed a fix: ${c}`);
if (fresh.length === 0) {
  console.log(`import check: ${graph.edges.size} files, ${edges} imports, no ${known.size > 0 ? "new " : ""}cycles`);
  process.exit(0);
}
for (const circle of circles) {
  const cycles = circle.cycles.map((c) => c.join(" -> ")).filter((c) => !known.has(c));
  if (cycles.length === 0) continue;
  console.log(`circle of ${circle.files.length} files: ${circle.files.join(", ")}`);
  for (const cycle of cycles) console.log(`  ${cycle}`);
}
console.log(`import check: FAILED: ${graph.edges.size} files, ${edges} imports, ${fresh.length} new cycles`);
process.exit(1);
