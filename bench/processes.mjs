// Running benchmark peers: a runtime's argv, a child to completion, and a server/client pair
// (start the server, read the port it prints, run the client, return the client's JSON line).
import { spawn, spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";

const bin = "node_modules/.bin";

/**
 * argv prefix that runs a TypeScript file (the peers) under `runtime`. Node 20 needs tsx for
 * that even with `--dist`, which only makes the peers import the built package (the peers are
 * TypeScript: plain `node` refused them, so `--dist` runs failed with "server exited 1").
 */
export function runtimeArgv(runtime) {
  if (runtime === "deno") return [`${bin}/deno`, "run", "-A"];
  if (runtime === "bun") return [`${bin}/bun`];
  return ["node", "--import", "tsx"];
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
    // UCX writes its log lines ("[time] [host:pid] ...") to stdout too: take the JSON array
    // (an empty one too: node:net has nothing to measure in an AM-only --plan).
    const last = lines.filter((l) => l.startsWith("[{") || l.trim() === "[]").pop();
    if (!last) throw new Error(`client printed no results: ${lines.join("\n").slice(-300)}`);
    return JSON.parse(last);
  } finally {
    clearTimeout(killer);
    server.kill("SIGKILL");
  }
}

/** `--name a,b` from argv as ["a", "b"], or `def`; `--flag` presence with flag(). */
/**
 * A runner's options: `opt(name, default)` reads `--name a,b` as a list, `flag(name)` a bare
 * `--name`. `--help` prints the runner's leading comment (its usage) and exits; an option that is
 * not in `known` is refused (exit 2) before anything runs: a misspelt option used to be ignored
 * and a whole default benchmark (minutes) ran instead.
 */
export function options(argv, scriptUrl, known) {
  const usage = () =>
    readFileSync(new URL(scriptUrl), "utf8")
      .split("\n")
      .filter((line, i, lines) => lines.slice(0, i + 1).every((l) => l.startsWith("//")))
      .map((line) => line.replace(/^\/\/ ?/, ""))
      .join("\n");
  if (argv.includes("--help")) {
    console.log(usage());
    process.exit(0);
  }
  const unknown = argv.filter((a) => a.startsWith("--") && !known.includes(a.slice(2)));
  if (unknown.length > 0) {
    console.error(`unknown option ${unknown.join(", ")}; the options are:\n${usage()}`);
    process.exit(2);
  }
  const opt = (name, def) => {
    const i = argv.indexOf(`--${name}`);
    return i >= 0 ? argv[i + 1].split(",") : def;
  };
  return { opt, flag: (name) => argv.includes(`--${name}`) };
}

/**
 * One ucx_perftest run (server and client on 127.0.0.1; -e for peer error handling): the
 * typical one-way latency in us and the average bandwidth in 10^6 B/s, or null.
 */
export function perftest(test, size, iterations, peer) {
  // A few tries, the server given longer each time on a new port: a loaded machine can take
  // over 0.3 s to start it, and the client then finds no server (seen in a CI run's CLI test).
  for (let attempt = 1; attempt <= 4; attempt++) {
    const port = 20000 + Math.floor(Math.random() * 20000);
    const server = spawn("ucx_perftest", ["-p", String(port)], { stdio: "ignore" });
    spawnSync("sleep", [String(0.3 * attempt)]);
    const r = spawnSync("ucx_perftest", ["127.0.0.1", "-p", String(port), "-t", test, "-s", String(size), "-n", String(iterations), ...(peer ? ["-e"] : [])], {
      encoding: "utf8",
      timeout: 120_000,
    });
    server.kill("SIGKILL");
    // Final: iterations, typical lat, avg lat, overall lat, avg bw (MB/s = 2^20 B/s), overall bw, ...
    const m = /Final:\s+\d+\s+([\d.]+)\s+[\d.]+\s+[\d.]+\s+([\d.]+)/.exec(r.stdout ?? "");
    if (m) return { latencyUs: Number(m[1]), MBps: (Number(m[2]) * 1048576) / 1e6 };
  }
  return null;
}

export const hasPerftest = () => !spawnSync("ucx_perftest", ["-h"]).error;
