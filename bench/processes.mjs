// Running benchmark peers: a runtime's argv, a child to completion, and a server/client pair
// (start the server, read the port it prints, run the client, return the client's JSON line).
import { spawn } from "node:child_process";

const bin = "node_modules/.bin";

/** argv prefix that runs a TypeScript file under `runtime` (`dist`: plain node, built package). */
export function runtimeArgv(runtime, dist = false) {
  if (runtime === "deno") return [`${bin}/deno`, "run", "-A"];
  if (runtime === "bun") return [`${bin}/bun`];
  return dist ? ["node"] : ["node", "--import", "tsx"];
}

export function run(argv, env = {}) {
  return new Promise((resolve, reject) => {
    const child = spawn(argv[0], argv.slice(1), { env: { ...process.env, ...env }, stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    let err = "";
    child.stdout.on("data", (d) => (out += d));
    child.stderr.on("data", (d) => (err += d));
    const timer = setTimeout(() => child.kill("SIGKILL"), 240_000);
    child.on("close", (code) => {
      clearTimeout(timer);
      code === 0 ? resolve(out) : reject(new Error(`${argv.join(" ")} exited ${code}: ${err.slice(-500)}`));
    });
  });
}

/** Start a server, read its port, run the client with it, return the client's JSON array. */
export async function pair(serverArgv, clientArgv, env) {
  const server = spawn(serverArgv[0], serverArgv.slice(1), { env: { ...process.env, ...env }, stdio: ["ignore", "pipe", "pipe"] });
  const killer = setTimeout(() => server.kill("SIGKILL"), 240_000);
  try {
    const port = await new Promise((resolve, reject) => {
      let out = "";
      server.stdout.on("data", (d) => {
        out += d;
        const line = out.split("\n").find((l) => l.startsWith('{"port"') && l.endsWith("}"));
        if (line) resolve(JSON.parse(line).port);
      });
      server.on("close", (c) => reject(new Error(`server exited ${c}`)));
    });
    const lines = (await run([...clientArgv(port)], env)).split("\n");
    // UCX writes its log lines ("[time] [host:pid] ...") to stdout too: take the JSON array.
    const last = lines.filter((l) => l.startsWith("[{")).pop();
    if (!last) throw new Error(`client printed no results: ${lines.join("\n").slice(-300)}`);
    return JSON.parse(last);
  } finally {
    clearTimeout(killer);
    server.kill("SIGKILL");
  }
}
