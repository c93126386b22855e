/**
 * Where the soak's spawned scripts are: beside their sources (scripts/soak/NAME.ts, run through
 * tsx under Node), or, when the soak runs as a bundle (esbuild: scripts/soak/main.mjs, as a
 * device pack would carry it), the bundles of the same name beside it (NAME.mjs, plain
 * JavaScript). Relative to the root the soak runs in (its cwd for children).
 */
const bundled = import.meta.url.endsWith(".mjs");

export const soakScript = (name: "peer" | "ucg-rank"): string => `scripts/soak/${name}.${bundled ? "mjs" : "ts"}`;
