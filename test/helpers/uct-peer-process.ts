/** Starting `uct-peer.ts` in a child process and talking to it one JSON line at a time. */
import { spawn, type ChildProcess } from "node:child_process";
import process from "node:process";
import { createInterface } from "node:readline";
import type { UctWorker } from "../../src/core/uct/index.ts";
import { repoRoot, runtimeArgv } from "./spawn.ts";

/** What the peer offers for one "transport/device/mode". */
export interface UctPeerHello {
  readonly deviceAddress: string;
  readonly interfaceAddress: string;
  readonly endpointAddress: string;
  readonly rkey: string;
  readonly memAddress: number;
}

export class UctPeerProcess {
  private answers: unknown[] = [];
  private stderr = "";
  private exit: string | undefined;

  private constructor(private readonly child: ChildProcess) {
    createInterface({ input: child.stdout! }).on("line", (l) => this.answers.push(JSON.parse(l)));
    child.stderr!.on("data", (d) => (this.stderr += d));
    child.on("exit", (code, signal) => (this.exit = `exit ${code ?? signal}`));
  }

  /** Start the peer (one for every transport and mode) and wait for its first line, progressing `worker` meanwhile. */
  static async start(worker: UctWorker): Promise<{ peer: UctPeerProcess; hello: Record<string, UctPeerHello> }> {
    const [cmd, ...args] = runtimeArgv("test/helpers/uct-peer.ts");
    const child = spawn(cmd, args, {
      cwd: repoRoot,
      env: process.env,
      stdio: ["pipe", "pipe", "pipe"],
    });
    const peer = new UctPeerProcess(child);
    const hello = (await peer.next(worker, 30_000)) as Record<string, UctPeerHello>;
    return { peer, hello };
  }

  private async next(worker: UctWorker, timeoutMs = 20_000): Promise<unknown> {
    await worker.progressUntil(() => this.answers.length > 0 || this.exit !== undefined, { timeoutMs, what: "the peer's answer" }).catch((e) => {
      throw new Error(`${e.message}; peer stderr: ${this.stderr}`);
    });
    if (this.answers.length === 0) throw new Error(`peer ended (${this.exit}); stderr: ${this.stderr}`);
    return this.answers.shift();
  }

  /** Send one command and wait for its answer, progressing `worker` meanwhile. */
  async ask<T = Record<string, unknown>>(worker: UctWorker, command: Record<string, unknown>): Promise<T> {
    this.child.stdin!.write(JSON.stringify(command) + "\n");
    return (await this.next(worker)) as T;
  }

  /** Ask the peer to quit; resolves with how it ended ("exit 0" when cleanly). */
  async quit(worker: UctWorker): Promise<string> {
    if (this.exit === undefined) this.child.stdin!.write(JSON.stringify({ cmd: "quit" }) + "\n");
    const deadline = Date.now() + 10_000;
    await worker.progressUntil(() => this.exit !== undefined || Date.now() > deadline, { timeoutMs: 15_000 }).catch(() => {});
    if (this.exit === undefined) {
      this.child.kill("SIGKILL");
      return `killed after 10 s; stderr: ${this.stderr}`;
    }
    return this.exit === "exit 0" ? this.exit : `${this.exit}; stderr: ${this.stderr}`;
  }
}

export const hex = (b: Uint8Array) => Array.from(b, (x) => x.toString(16).padStart(2, "0")).join("");
export const unhex = (s: string) => new Uint8Array((s.match(/../g) ?? []).map((x) => parseInt(x, 16)));
