/**
 * C programs and libraries the tests build (the stand-in libcudart, UCX's C examples), compiled
 * once per source and kept in one folder under the temporary directory, named by a hash of the
 * source and the compiler arguments: every test process and every run reuses the same file
 * instead of leaving a new temporary folder behind (three runtimes, many test processes, each
 * made one per run before). A changed source gets a new name; the build lands under a temporary
 * name first and is renamed into place, so concurrent test processes never see half a file.
 */
import { createHash } from "node:crypto";
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import process from "node:process";

/** The folder shared by all test runs of this user. */
const CACHE = join(tmpdir(), `ucx-ts-test-builds-${process.getuid?.() ?? "user"}`);

/**
 * Compile `source` with `cc` (flags before the source, libraries after it) into a file called
 * `name` (plus a hash); its path, or why it could not be built.
 */
export function compileOnce(name: string, source: string, flags: readonly string[], libraries: readonly string[] = []): { path: string } | { reason: string } {
  let text: Buffer;
  try {
    text = readFileSync(source);
  } catch (e) {
    return { reason: `${source} not found (${(e as Error).message.split("\n")[0]})` };
  }
  const hash = createHash("sha256").update(text).update(JSON.stringify([flags, libraries])).digest("hex").slice(0, 16);
  const path = join(CACHE, `${name}-${hash}`);
  if (existsSync(path)) return { path };
  const part = `${path}.${process.pid}.part`;
  try {
    mkdirSync(CACHE, { recursive: true });
    execFileSync("cc", [...flags, "-o", part, source, ...libraries], { stdio: "pipe" });
    renameSync(part, path);
    return { path };
  } catch (e) {
    rmSync(part, { force: true });
    return { reason: `cannot compile ${source}: ${(e as Error).message.split("\n")[0]}` };
  }
}
