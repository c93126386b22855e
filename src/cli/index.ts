/** Entry point of the `ucx-ts` binary under any runtime. */
import { argv, exit, stderr, stdout } from "node:process";
import { runCli } from "./main.ts";
import { preferUcxDefault } from "../core/library.ts";

// The CLI says what failed in one line of its own; UCX's warnings (a peer that went away, a
// refused connection) would repeat it in UCX's words. UCX_LOG_LEVEL set by the user still wins.
preferUcxDefault("UCX_LOG_LEVEL", "error", "the CLI reports failures in one line of its own");

void runCli(argv.slice(2), {
  out: (t) => stdout.write(t + "\n"),
  err: (t) => stderr.write(t + "\n"),
}).then((code) => {
  // Let stdout drain before exiting (a pipe to `jq` must see the whole report).
  stdout.write("", () => exit(code));
});
