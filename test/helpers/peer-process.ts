/** Starting `peer.ts` in a child process and learning its port. */
import { spawn, type ChildProcess } from "node:child_process";
import process from "node:process";
import { Worker, type Endpoint } from "../../src/index.ts";
import { repoRoot, runtimeArgv } from "./spawn.ts";
import { drive, pattern, samePattern } from "./workers.ts";

export interface PeerProcess {
  readonly child: ChildProcess;
  readonly port: number;
  /** Resolves with the exit code (or signal name) when the process ends. */
  readonly exited: Promise<number | string>;
  kill(signal?: NodeJS.Signals): void;
  /** What the peer wrote on stderr so far. */
  stderr(): string;
}

export async function startPeer(mode: string, errorHandling: string, behaviour = "echo"): Promise<PeerProcess> {
  const [cmd, ...args] = runtimeArgv("test/helpers/peer.ts");
  const child = spawn(cmd, [...args, mode, errorHandling, behaviour], { cwd: repoRoot, env: process.env, stdio: ["ignore", "pipe", "pipe"] });
  let stderr = "";
  child.stderr!.on("data", (d) => (stderr += d));
  const exited = new Promise<number | string>((resolve) => child.on("exit", (code, signal) => resolve(code ?? signal ?? -1)));
  const port = await new Promise<number>((resolve, reject) => {
    let out = "";
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error(`peer did not start in 30 s; stderr: ${stderr}`));
    }, 30_000);
    child.stdout!.on("data", (d) => {
      out += d;
      const line = out.split("\n")[0];
      if (out.includes("\n")) {
        clearTimeout(timer);
        try {
          resolve(JSON.parse(line!).port);
        } catch {
          reject(new Error(`peer said '${line}'; stderr: ${stderr}`));
        }
      }
    });
    child.on("exit", (code) => {
      clearTimeout(timer);
      reject(new Error(`peer exited (${code}) before listening; stderr: ${stderr}`));
    });
  });
  return { child, port, exited, kill: (signal = "SIGKILL") => void child.kill(signal), stderr: () => stderr };
}

/**
 * Run `body` against a `peer.ts` process doing `behaviour`: a worker of this process connected
 * to it, `run` to await while progressing that worker (with a deadline), and the peer, killed
 * and the worker closed whatever happens.
 */
export async function withPeer(
  mode: string,
  behaviour: string,
  body: (ctx: { worker: Worker; ep: Endpoint; run: <T>(p: Promise<T>) => Promise<T>; peer: PeerProcess }) => Promise<void>,
): Promise<void> {
  const peer = await startPeer(mode, "peer", behaviour);
  const worker = await Worker.create({ progressMode: mode as "thread" });
  const run = <T>(p: Promise<T>) => drive([worker], p, 120_000);
  try {
    const ep = await run(worker.connect({ host: "127.0.0.1", port: peer.port }));
    await body({ worker, ep, run, peer });
  } catch (e) {
    // A peer that went away says why on its stderr (a crash, an exception): show it.
    const exit = await Promise.race([peer.exited, new Promise((r) => setTimeout(() => r("still running"), 1000))]);
    if (e instanceof Error) e.message += `\n--- the peer process (exit: ${exit}) wrote on stderr:\n${peer.stderr().slice(-3000)}`;
    throw e;
  } finally {
    peer.kill();
    await run(worker.close());
  }
}

/**
 * A survivor still works: a new echo peer in `mode`, a new connection from `worker`, `size`
 * bytes echoed intact (throws if not), and the peer's clean exit once told to end.
 */
export async function echoThroughNewPeer(worker: Worker, mode: string, run: <T>(p: Promise<T>) => Promise<T>, size: number): Promise<void> {
  const again = await startPeer(mode, "peer");
  try {
    const ep = await run(worker.connect({ host: "127.0.0.1", port: again.port }));
    const back = new Uint8Array(size);
    await run(Promise.all([ep.recv(back, 8), ep.send(pattern(size, 7), 7)]));
    if (!samePattern(back, 7)) throw new Error(`the echo of ${size} bytes through a new peer came back wrong`);
    await run(ep.send(new Uint8Array(0), 0));
    const exit = await run(again.exited);
    if (exit !== 0) throw new Error(`the new peer exited with ${exit}`);
  } finally {
    again.kill();
  }
}

