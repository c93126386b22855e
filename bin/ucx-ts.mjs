#!/usr/bin/env node
// The `ucx-ts` command: runs the built CLI (dist/) under whichever runtime started this file
// (`node`, `deno run -A`, `bun`).
await import("../dist/cli.js");
