/**
 * The import graph of a tree of `.ts` files and the circles in it (scripts/check-imports.ts runs
 * it on src/; test/scripts/import-graph.test.ts on planted circles). Dependency-free on purpose.
 *
 * An edge is every relative module a file names: `import ... from`, `import type ... from`,
 * `export ... from`, a bare `import "x"`, and `import("x")`, whether a dynamic import or an
 * inline type. Type-only imports count: a type circle still makes files that cannot be read,
 * changed or moved one without the other, which is what the layering is meant to prevent.
 */
import { readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";

export interface ImportGraph {
  readonly root: string;
  /** Every file (absolute path) with the files it imports, sorted. */
  readonly edges: ReadonlyMap<string, readonly string[]>;
}

export interface Circle {
  /** The files of one strongly connected component (relative to the root), sorted. */
  readonly files: readonly string[];
  /** Its elementary cycles, each from its smallest file back to it (capped). */
  readonly cycles: readonly (readonly string[])[];
}

function listTs(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true })
    .flatMap((e) => (e.isDirectory() ? listTs(join(dir, e.name)) : e.name.endsWith(".ts") ? [join(dir, e.name)] : []))
    .sort();
}

/** Removes comments, so that an import written in a comment or a doc example is not counted. */
function stripComments(source: string): string {
  let out = "";
  let i = 0;
  while (i < source.length) {
    const c = source[i]!;
    const next = source[i + 1];
    if (c === "/" && next === "/") {
      while (i < source.length && source[i] !== "\n") i++;
    } else if (c === "/" && next === "*") {
      const end = source.indexOf("*/", i + 2);
      i = end < 0 ? source.length : end + 2;
    } else if (c === '"' || c === "'" || c === "`") {
      // A string literal is copied whole, so that "//" inside it is not taken for a comment.
      let j = i + 1;
      while (j < source.length && source[j] !== c) j += source[j] === "\\" ? 2 : 1;
      out += source.slice(i, j + 1);
      i = j + 1;
    } else {
      out += c;
      i++;
    }
  }
  return out;
}

// `from "x"` covers import and export-from (type or not, over several lines); the other two
// cover side-effect imports and `import("x")`.
const SPECIFIERS = [/\bfrom\s*["']([^"']+)["']/g, /\bimport\s*["']([^"']+)["']/g, /\bimport\s*\(\s*["']([^"']+)["']\s*\)/g];

function isFile(path: string): boolean {
  try {
    return statSync(path).isFile();
  } catch {
    return false;
  }
}

function importsOf(file: string, root: string, known: ReadonlySet<string>): string[] {
  const source = stripComments(readFileSync(file, "utf8"));
  const found = new Set<string>();
  for (const pattern of SPECIFIERS) {
    for (const m of source.matchAll(pattern)) {
      const spec = m[1]!;
      if (!spec.startsWith(".")) continue; // packages and node: builtins are outside the graph
      const target = resolve(dirname(file), spec);
      const hit = [target, `${target}.ts`, join(target, "index.ts"), target.replace(/\.js$/, ".ts")].find((c) => known.has(c));
      if (hit) found.add(hit);
      // Leaving the tree (a script, a JSON file) is fine; a missing file inside it is a mistake.
      else if (target.startsWith(root + "/") && !isFile(target)) throw new Error(`${relative(root, file)}: cannot resolve '${spec}'`);
    }
  }
  return [...found].sort();
}

export function importGraph(root: string): ImportGraph {
  const files = listTs(root);
  const known = new Set(files);
  return { root, edges: new Map(files.map((f) => [f, importsOf(f, root, known)])) };
}

/** Tarjan's strongly connected components of more than one file (or a file importing itself). */
function components(edges: ReadonlyMap<string, readonly string[]>): string[][] {
  let index = 0;
  const indexOf = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const result: string[][] = [];
  const visit = (v: string): void => {
    indexOf.set(v, index);
    low.set(v, index);
    index++;
    stack.push(v);
    onStack.add(v);
    for (const w of edges.get(v) ?? []) {
      if (!indexOf.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, indexOf.get(w)!));
    }
    if (low.get(v) !== indexOf.get(v)) return;
    const component: string[] = [];
    let w: string;
    do {
      w = stack.pop()!;
      onStack.delete(w);
      component.push(w);
    } while (w !== v);
    if (component.length > 1 || (edges.get(v) ?? []).includes(v)) result.push(component.sort());
  };
  for (const f of edges.keys()) if (!indexOf.has(f)) visit(f);
  return result;
}

/**
 * Every elementary cycle of one component, each found once from its smallest file (a search from
 * each start that visits only files ordered after it). Capped: a tangle that big needs
 * untangling, not a longer listing.
 */
function cyclesIn(edges: ReadonlyMap<string, readonly string[]>, component: readonly string[], cap: number): string[][] {
  const order = new Map(component.map((f, i) => [f, i]));
  const cycles: string[][] = [];
  for (const start of component) {
    const path = [start];
    const onPath = new Set(path);
    const walk = (v: string): void => {
      for (const w of edges.get(v) ?? []) {
        if (cycles.length >= cap || !order.has(w)) continue;
        if (w === start) cycles.push([...path, start]);
        else if (!onPath.has(w) && order.get(w)! > order.get(start)!) {
          path.push(w);
          onPath.add(w);
          walk(w);
          onPath.delete(w);
          path.pop();
        }
      }
    };
    walk(start);
  }
  return cycles;
}

/** The circles of `graph`, files named relative to its root; empty when it has none. */
export function findCircles(graph: ImportGraph, cap = 500): Circle[] {
  const name = (f: string) => relative(graph.root, f);
  return components(graph.edges).map((component) => ({
    files: component.map(name),
    cycles: cyclesIn(graph.edges, component, cap).map((c) => c.map(name)),
  }));
}
