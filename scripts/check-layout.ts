/**
 * Dev-time check that the FFI tables match the installed UCX headers: every struct size, field
 * offset and field size of `src/ffi/layouts.ts`, every constant of `src/ffi/constants.ts`, and
 * that every symbol of `src/ffi/symbols.ts` links. It compiles a small C program with the
 * system C compiler; the package itself ships no compiled code.
 *
 * Skips (exit 0, with the reason printed) when no C compiler or no UCX headers are present.
 * Run: `npx tsx scripts/check-layout.ts` (part of `npm test`).
 */
import { execFileSync, spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { C_SIZE } from "../src/ffi/types.ts";
import { layoutsFor, type LayoutDef } from "../src/ffi/layouts.ts";
import { LIBC_CONSTANTS, UCS_STATUS, UCX_CONSTANTS } from "../src/ffi/constants.ts";
import { symbols } from "../src/ffi/symbols.ts";

function skip(reason: string): never {
  console.log(`layout check: skipped: ${reason}`);
  process.exit(0);
}

const cc = process.env.CC ?? "cc";
if (spawnSync(cc, ["--version"]).status !== 0) skip(`no C compiler ('${cc}' not found)`);
const includeDir = process.env.UCX_TS_INCLUDEDIR ?? "/usr/include";
if (!existsSync(join(includeDir, "ucp/api/ucp.h"))) {
  skip(`UCX headers not found under ${includeDir} (install libucx-dev, or set UCX_TS_INCLUDEDIR)`);
}

// The headers' own version picks the layout table (layouts.ts: layoutChanges). The tables are
// written against UCX 1.13: on newer headers an API struct may have grown at its end (behind its
// field_mask: harmless, layouts.ts says why), and UCP_API_MINOR is the API ucx-ts asks for.
const versionHeader = readFileSync(join(includeDir, "ucp/api/ucp_version.h"), "utf8");
const headerVersion = (name: string) => Number(new RegExp(`#define\\s+${name}\\s+(\\d+)`).exec(versionHeader)?.[1] ?? NaN);
const major = headerVersion("UCP_API_MAJOR");
const minor = headerVersion("UCP_API_MINOR");
if (!Number.isInteger(major) || !Number.isInteger(minor)) skip(`no UCP_API_MAJOR/MINOR in ${includeDir}/ucp/api/ucp_version.h`);
const layouts = layoutsFor(major, minor);
const newerThanTables = major > UCX_CONSTANTS.UCP_API_MAJOR || (major === UCX_CONSTANTS.UCP_API_MAJOR && minor > UCX_CONSTANTS.UCP_API_MINOR);
/** A difference that is not an error on newer headers (see above). */
const tolerated = (key: string, table: number, headers: number | undefined) =>
  newerThanTables && headers !== undefined && ((/^sizeof\((ucp|uct)_\w+\)$/.test(key) && headers > table) || key === "UCP_API_MINOR");

// One printf per fact; the program's output is parsed back into "key value" pairs.
const lines: string[] = [];
const expected = new Map<string, number>();
const fact = (key: string, cExpr: string, value: number) => {
  expected.set(key, value);
  lines.push(`  printf("%s %lld\\n", "${key}", (long long)(${cExpr}));`);
};

for (const [name, layout] of Object.entries(layouts as Record<string, LayoutDef>)) {
  fact(`sizeof(${name})`, `sizeof(${name})`, layout.size);
  for (const [field, def] of Object.entries(layout.fields)) {
    fact(`offsetof(${name},${field})`, `offsetof(${name}, ${field})`, def.offset);
    const size = C_SIZE[def.type] * (def.count ?? 1);
    fact(`sizeof(${name}.${field})`, `sizeof(((${name} *)0)->${field})`, size);
  }
}
for (const [name, value] of Object.entries({ ...UCS_STATUS, ...UCX_CONSTANTS, ...LIBC_CONSTANTS })) fact(name, name, value);
fact("sizeof(ucs_status_t)", "sizeof(ucs_status_t)", C_SIZE.status);

// Taking each function's address makes the linker prove the symbol exists in that library.
const refs = Object.keys(symbols).map((s) => `    (void *)&${s},`);

const program = `#define _GNU_SOURCE /* memfd_create */
#include <stddef.h>
#include <unistd.h>
#include <fcntl.h>
#include <malloc.h>
#include <sys/mman.h>
#include <stdio.h>
#include <stdlib.h>
#include <poll.h>
#include <string.h>
#include <ucp/api/ucp.h>
#include <uct/api/uct.h>
#include <uct/api/tl.h> /* uct_iface_t and its ops table, uct_worker_t (uct-ops.ts) */
#include <ucs/type/status.h>

static void *volatile symbol_refs[] = {
${refs.join("\n")}
};

int main(void) {
  (void)symbol_refs;
${lines.join("\n")}
  return 0;
}
`;

const dir = mkdtempSync(join(tmpdir(), "ucx-ts-layout-"));
try {
  const src = join(dir, "layout.c");
  const exe = join(dir, "layout");
  writeFileSync(src, program);
  const compile = spawnSync(cc, ["-std=gnu11", "-I", includeDir, "-o", exe, src, "-lucp", "-luct", "-lucs"], {
    encoding: "utf8",
  });
  if (compile.status !== 0) {
    console.error(`layout check: FAILED to compile against ${includeDir}:\n${compile.stderr}`);
    process.exit(1);
  }
  const actual = new Map<string, number>();
  for (const line of execFileSync(exe, { encoding: "utf8" }).trim().split("\n")) {
    const at = line.lastIndexOf(" ");
    actual.set(line.slice(0, at), Number(line.slice(at + 1)));
  }
  const differ = [...expected].filter(([k, v]) => actual.get(k) !== v);
  for (const [k, v] of differ.filter(([k, v]) => tolerated(k, v, actual.get(k)))) {
    console.log(`layout check: ${k}: table says ${v}, UCX ${major}.${minor}'s headers say ${actual.get(k)} (newer UCX, tolerated)`);
  }
  const wrong = differ.filter(([k, v]) => !tolerated(k, v, actual.get(k)));
  for (const [k, v] of wrong) console.error(`layout check: ${k}: table says ${v}, headers say ${actual.get(k)}`);
  if (wrong.length > 0) {
    console.error(`layout check: FAILED, ${wrong.length} of ${expected.size} facts differ`);
    process.exit(1);
  }
  console.log(
    `layout check: ok, ${Object.keys(layouts).length} structs, ${expected.size} facts and ${refs.length} symbols match ${includeDir} (UCX ${major}.${minor})`,
  );
} finally {
  rmSync(dir, { recursive: true, force: true });
}
