/**
 * One side of bench/idle-garbage.mjs: `echo <delayMs>` answers each 8 B message (tag 1) after
 * delayMs (a timer), as a server that takes its time would; `client <port> <requests> [mode]`
 * sends one at a time and awaits each answer (tag 2), so its worker spends nearly all of the run
 * waiting for the peer. The client warms up for 2.5 s first (wire-up, compiled code, and hybrid
 * mode's fd watcher thread, which takes up to ~1.6 s to start under Node from TypeScript sources),
 * then prints MARK, runs `requests` requests and prints `{"usPerRequest", "requests"}`.
 */
import process from "node:process";
import { Worker, type ProgressMode } from "../src/index.ts";

const [role, a1, a2, a3] = process.argv.slice(2);
const b = new Uint8Array(8);
if (role === "echo") {
  const w = await Worker.create({ progressMode: "hybrid", errorHandling: "none" });
  const l = await w.listen({ host: "127.0.0.1", port: 0 });
  process.stdout.write(JSON.stringify({ port: l.port }) + "\n");
  const ep = await l.accept();
  const delay = Number(a1);
  for (;;) {
    await ep.recv(b, 1);
    await new Promise((r) => setTimeout(r, delay));
    await ep.send(b, 2);
  }
} else {
  const requests = Number(a2);
  const w = await Worker.create({ progressMode: (a3 ?? "hybrid") as ProgressMode, errorHandling: "none" });
  const ep = await w.connect({ host: "127.0.0.1", port: Number(a1) });
  const request = async () => {
    const answer = ep.recv(b, 2);
    await ep.send(b, 1);
    await answer;
  };
  for (const t0 = performance.now(); performance.now() - t0 < 2500; ) await request();
  process.stdout.write("MARK\n");
  const t0 = performance.now();
  for (let i = 0; i < requests; i++) await request();
  process.stdout.write(JSON.stringify({ usPerRequest: ((performance.now() - t0) * 1000) / requests, requests }) + "\n");
  process.exit(0);
}
