// The garbage a worker makes while it waits for its peer (engine/idle-spin.ts): a requester
// awaits each answer of an echo peer (another process) that answers after --delays ms; V8's
// young generation is pinned to 1 MB and its scavenges traced (--trace-gc), so the bytes
// allocated between them, summed over the timed requests, are the requester's garbage.
//   node bench/idle-garbage.mjs [--runtimes node,deno] [--modes hybrid,polling] [--delays 0,1,5] [--requests 300]
// Node and Deno only: Bun (JavaScriptCore) has no such trace.
import { spawn } from "node:child_process";
import { options, runtimeArgv } from "./processes.mjs";

const { opt } = options(process.argv.slice(2), import.meta.url, ["runtimes", "modes", "delays", "requests"]);
const runtimes = opt("runtimes", ["node", "deno"]);
const modes = opt("modes", ["hybrid", "polling"]);
const delays = opt("delays", ["0", "1", "5"]).map(Number);
const requests = Number(opt("requests", ["300"])[0]);

const V8_FLAGS = ["--trace-gc", "--max-semi-space-size=1", "--min-semi-space-size=1"];
const gcArgv = (runtime) =>
  runtime === "deno" ? [...runtimeArgv("deno"), `--v8-flags=${V8_FLAGS.join(",")}`] : ["node", ...V8_FLAGS, "--import", "tsx"];

function start(argv) {
  const child = spawn(argv[0], argv.slice(1), { stdio: ["ignore", "pipe", "inherit"] });
  let out = "";
  child.stdout.on("data", (d) => (out += d));
  return { child, output: () => out, ended: new Promise((resolve) => child.on("close", resolve)) };
}

/** MB allocated between the scavenges after MARK (each line: "Scavenge <before> (..) -> <after> (..) MB"). */
function allocatedMb(text) {
  const lines = text.slice(text.indexOf("MARK")).split("\n");
  const gcs = lines.map((l) => /Scavenge ([\d.]+) \([\d.]+\) -> ([\d.]+)/.exec(l)).filter(Boolean).map((m) => [Number(m[1]), Number(m[2])]);
  let mb = 0;
  for (let i = 1; i < gcs.length; i++) mb += gcs[i][0] - gcs[i - 1][1];
  return { mb, scavenges: gcs.length };
}

console.log(`runtime  mode      delay ms  us/request  scavenges  KiB garbage/request`);
for (const runtime of runtimes)
  for (const mode of modes)
    for (const delay of delays) {
      const echo = start([...runtimeArgv(runtime), "bench/idle-garbage-peer.ts", "echo", String(delay)]);
      let port;
      for (let i = 0; i < 200 && !port; i++) {
        port = /"port":(\d+)/.exec(echo.output())?.[1];
        if (!port) await new Promise((r) => setTimeout(r, 50));
      }
      const client = start([...gcArgv(runtime), "bench/idle-garbage-peer.ts", "client", port, String(requests), mode]);
      await client.ended;
      echo.child.kill("SIGKILL");
      const text = client.output();
      // V8's trace lines and ours share stdout: find ours anywhere in it.
      const result = JSON.parse(/\{"usPerRequest"[^}]*\}/.exec(text)?.[0] ?? "{}");
      const { mb, scavenges } = allocatedMb(text);
      console.log(
        `${runtime.padEnd(8)} ${mode.padEnd(9)} ${String(delay).padStart(8)}  ${(result.usPerRequest ?? NaN).toFixed(0).padStart(10)}  ${String(scavenges).padStart(9)}  ${((mb * 1024) / requests).toFixed(1).padStart(18)}`,
      );
    }
