import { defineConfig } from "tsup";

// ESM + CJS + .d.ts for the library, and the CLI as its own entry. The progress thread's entry
// (next issue) will be another entry here, since a worker loads it by file.
export default defineConfig({
  entry: { index: "src/index.ts", cli: "src/cli/index.ts" },
  format: ["esm", "cjs"],
  dts: { entry: { index: "src/index.ts" } },
  platform: "node",
  target: "node20",
  sourcemap: true,
  clean: true,
  shims: true,
  // Runtime-specific modules must stay runtime imports, never bundled or resolved at build time.
  external: ["koffi", "bun:ffi"],
});
