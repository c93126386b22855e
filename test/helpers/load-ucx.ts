/** Child process for loader tests: try to load UCX and print what happened as JSON. */
import { ucx, UcxError } from "../../src/index.ts";

try {
  const u = ucx();
  console.log(JSON.stringify({ loaded: true, libraries: u.libraryPaths }));
} catch (e) {
  const err = e as UcxError;
  console.log(JSON.stringify({ loaded: false, name: err.name, code: err.code, message: err.message }));
}
