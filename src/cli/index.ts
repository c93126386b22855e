/** Entry point of the `ucx-ts` binary under any runtime. */
import { argv, exit, stderr, stdout } from "node:process";
import { runCli } from "./main.ts";

void runCli(argv.slice(2), {
  out: (t) => stdout.write(t + "\n"),
  err: (t) => stderr.write(t + "\n"),
}).then((code) => {
  // Let stdout drain before exiting (a pipe to `jq` must see the whole report).
  stdout.write("", () => exit(code));
});
