/**
 * Child process: receives nobody awaits (worker-wide, on an endpoint, multi-buffer, active
 * message) and sends nobody awaits that no receive takes (64 KiB, 1 MiB and a sendMany window:
 * UCX holds them, in polling and blocking modes straight from the call, SendPath.sendDirect and
 * proto/send-many-direct.ts), then `worker.close()`. Their rejections must not end the process as unhandled:
 * it prints "alive" 200 ms later and exits 0.
 */
import process from "node:process";
import { Worker } from "../../src/index.ts";

const mode = (process.argv[2] ?? "thread") as "thread";
const w = await Worker.create({ progressMode: mode });
// ep.recv needs an endpoint made through the hello (a receive of its own): connect to ourselves.
const listener = await w.settled(w.listen({ host: "127.0.0.1", port: 0 }));
const [, ep] = await w.settled(Promise.all([listener.accept(), w.connect({ host: "127.0.0.1", port: listener.port })]));
// First, while hybrid's driver still runs from the connect (the direct path's condition there).
void ep.send(new Uint8Array(64 * 1024), 9);
void ep.send(new Uint8Array(1024 * 1024), 9);
void ep.sendMany([new Uint8Array(8), new Uint8Array(64 * 1024), new Uint8Array(40_000)], 9);
void w.recv(new Uint8Array(8), 1);
void ep.recv(new Uint8Array(8), 2);
void ep.recvMulti(3);
void ep.amRecv();
await w.close();
await new Promise((r) => setTimeout(r, 200));
console.log("alive");
