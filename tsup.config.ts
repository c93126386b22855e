import { defineConfig } from "tsup";

// ESM + CJS + .d.ts for the library, and the CLI as its own entry. The engine's pooled thread
// (thread mode's progress loop, hybrid mode's fd watcher) is an entry of its own: a worker
// thread loads it by file, next to the chunk that starts it (engine/thread-pool.ts).
export default defineConfig({
  entry: {
    index: "src/index.ts",
    cli: "src/cli/index.ts",
    "engine-thread": "src/core/engine/engine-thread.ts",
  },
  format: ["esm", "cjs"],
  // stripInternal: members marked @internal (what endpoints, listeners and the hello ask of their
  // worker; the engine's hooks) stay out of the shipped .d.ts, so an application's editor never
  // offers them. That is why no public class `implements` an internal interface: the .d.ts would
  // then declare a class that no longer satisfies it. Structural typing still checks the classes
  // where they are handed over as those interfaces.
  dts: { entry: { index: "src/index.ts" }, compilerOptions: { stripInternal: true } },
  platform: "node",
  target: "node20",
  sourcemap: true,
  clean: true,
  shims: true,
  // esbuild renames a class whose name it must keep apart from another binding (`_UcxError`):
  // errors would print and `constructor.name` under that name. keepNames pins the source names.
  keepNames: true,
  // Runtime-specific modules must stay runtime imports, never bundled or resolved at build time.
  external: ["koffi", "bun:ffi"],
});
