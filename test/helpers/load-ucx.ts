/**
 * Child process for loader tests: try to load UCX and print what happened as JSON. With the
 * argument `context`, also create (and close) a UCP context, so UCX's start-up log lines
 * (memory hooks, registration caches) are printed before the JSON.
 */
import { Context, ucx, ucxSettings, UcxError } from "../../src/index.ts";

try {
  const u = ucx();
  if (process.argv.includes("context")) new Context({ features: ["tag"] }).close();
  // What libucs reads: the C environment, not the runtime's copy of it.
  const memEvents = u.cString(u.getenv("UCX_MEM_EVENTS"));
  console.log(JSON.stringify({ loaded: true, libraries: u.libraryPaths, memEvents, settings: ucxSettings() }));
} catch (e) {
  const err = e as UcxError;
  console.log(JSON.stringify({ loaded: false, name: err.name, code: err.code, message: err.message }));
}
