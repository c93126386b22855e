import { suite } from "uvu";
import * as assert from "uvu/assert";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { findCircles, importGraph } from "../../scripts/import-graph.ts";
import { repoRoot } from "../helpers/spawn.ts";

// The import-circle check of `npm test` (scripts/check-imports.ts): it must find a circle that
// is there, of every kind of import, and find none in src/.
const test = suite("import-graph");

function tree(files: Record<string, string>): string {
  const root = mkdtempSync(join(tmpdir(), "ucx-ts-imports-"));
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(join(root, path, ".."), { recursive: true });
    writeFileSync(join(root, path), text);
  }
  return root;
}

test("src/ has no import cycle but those listed as owed a fix (scripts/known-import-cycles.txt)", () => {
  const known = readFileSync(join(repoRoot, "scripts/known-import-cycles.txt"), "utf8").split("\n").map((l) => l.trim()).filter((l) => l !== "" && !l.startsWith("#"));
  const cycles = findCircles(importGraph(join(repoRoot, "src"))).flatMap((c) => c.cycles.map((cycle) => cycle.join(" -> ")));
  assert.equal(cycles.filter((c) => !known.includes(c)), []);
});

test("a planted circle is found, through type-only, export-from and inline import() edges", () => {
  const root = tree({
    "a.ts": 'import type { B } from "./b/b.ts";\nexport type A = B;\n',
    "b/b.ts": 'export { c } from "../c.ts";\nexport type B = number;\n',
    "c.ts": 'export const c = 1;\nexport type D = import("./a.ts").A;\n',
    "leaf.ts": "// import { a } from './a.ts' (a comment: not an edge)\nexport const leaf = 1;\n",
  });
  try {
    const circles = findCircles(importGraph(root));
    assert.equal(circles.length, 1);
    assert.equal(circles[0]!.files, ["a.ts", "b/b.ts", "c.ts"]);
    assert.equal(circles[0]!.cycles, [["a.ts", "b/b.ts", "c.ts", "a.ts"]]);
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});

test("a chain without a circle passes; a file importing itself is a circle", () => {
  const root = tree({ "a.ts": 'import { b } from "./b.ts";\n', "b.ts": 'import "./c.ts";\nexport const b = 1;\n', "c.ts": "export {};\n" });
  const self = tree({ "s.ts": 'export const s = 1;\nexport type S = import("./s.ts").S;\n' });
  try {
    assert.equal(findCircles(importGraph(root)), []);
    assert.equal(findCircles(importGraph(self)).map((c) => c.cycles), [[["s.ts", "s.ts"]]]);
  } finally {
    rmSync(root, { recursive: true, force: true });
    rmSync(self, { recursive: true, force: true });
  }
});

test.run();
