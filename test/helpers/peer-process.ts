/** Starting `peer.ts` in a child process and learning its port. */
import { spawn, type ChildProcess } from "node:child_process";
import process from "node:process";
import { repoRoot, runtimeArgv } from "./spawn.ts";

export interface PeerProcess {
  readonly child: ChildProcess;
  readonly port: number;
  /** Resolves with the exit code (or signal name) when the process ends. */
  readonly exited: Promise<number | string>;
  kill(signal?: NodeJS.Signals): void;
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
  return { child, port, exited, kill: (signal = "SIGKILL") => void child.kill(signal) };
}
