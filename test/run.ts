/**
 * The one test runner, run unchanged by Node (through tsx), Deno and Bun: it loads every
 * `*.test.ts` under test/ into uvu's queue, runs them, and ends with the closing line
 * `<runtime>: N passed, N failed, N skipped`. Exit status 1 when anything failed.
 *
 * Usage: <runtime> test/run.ts [filter]   (filter: substring of the test file path)
 */
import { readdirSync } from "node:fs";
import { join, relative } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import process from "node:process";
import { runtime } from "../src/ffi/index.ts";

type SuiteResult = [errors: string | true, passed: number, skipped: number, total: number];
type QueuedSuite = () => Promise<SuiteResult>;
const g = globalThis as unknown as { UVU_DEFER: number; UVU_INDEX: number; UVU_QUEUE: unknown[][] };

const root = fileURLToPath(new URL(".", import.meta.url));
const filter = process.argv[2] ?? "";

function findTests(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true })
    .flatMap((e) => (e.isDirectory() ? findTests(join(dir, e.name)) : e.name.endsWith(".test.ts") ? [join(dir, e.name)] : []))
    .sort();
}

g.UVU_DEFER = 1;
g.UVU_QUEUE = [];
const uvu = await import("uvu");
const files = findTests(root).filter((f) => relative(root, f).includes(filter));
for (const [i, file] of files.entries()) {
  g.UVU_INDEX = i;
  g.UVU_QUEUE.push([relative(root, file)]);
  await import(pathToFileURL(file).href);
}

// Wrap each queued suite to count its results (uvu prints totals but does not return them)
// and to turn a crash in a before/after hook into a counted failure instead of an abort.
let passed = 0;
let failed = 0;
let skipped = 0;
for (const group of g.UVU_QUEUE) {
  for (let i = 1; i < group.length; i++) {
    const run = group[i] as QueuedSuite;
    group[i] = async (): Promise<SuiteResult> => {
      try {
        const result = await run();
        const [, ok, skip, total] = result;
        passed += ok;
        skipped += skip;
        failed += total - ok;
        return result;
      } catch (e) {
        failed += 1;
        return [`  suite crashed: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`, 0, 0, 1];
      }
    };
  }
}

await uvu.exec(false);
if (files.length === 0) failed += 1; // a run that finds no test must not pass
console.log(`${runtime}: ${passed} passed, ${failed} failed, ${skipped} skipped`);
process.exitCode = failed > 0 ? 1 : 0;
