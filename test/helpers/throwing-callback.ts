/**
 * Child process: application callbacks that throw while the engine delivers completions
 * (an endpoint's onError, a listener's onConnection, an active-message handler), in polling
 * mode, where delivery runs inside `worker.progress()`. Each exception must reach the process
 * as an uncaught exception of its own, never out of `progress()`, and the worker must go on
 * serving. Prints one JSON line: { progressThrew, uncaught: [messages], served }.
 */
import process from "node:process";
import { Worker } from "../../src/index.ts";

const mode = (process.argv[2] ?? "polling") as "polling";
const uncaught = new Set<string>();
const note = (e: unknown) => uncaught.add(e instanceof Error ? e.message : String(e));
process.on("uncaughtException", note);
// Deno reports an exception thrown on a microtask as an `error` event too.
(globalThis as { addEventListener?: (t: string, f: (ev: { error: unknown; preventDefault(): void }) => void) => void }).addEventListener?.(
  "error",
  (ev) => {
    ev.preventDefault();
    note(ev.error);
  },
);

let progressThrew = "";
const a = await Worker.create({ progressMode: mode });
const b = await Worker.create({ progressMode: mode });
const workers = [a, b];
/** Await `p` while progressing both workers by hand, catching what progress() throws. */
async function drive<T>(p: Promise<T>): Promise<T> {
  let done = false;
  const settled = p.finally(() => (done = true));
  const deadline = Date.now() + 20_000;
  for (let i = 0; !done; i++) {
    if (Date.now() > deadline) throw new Error("not settled in 20 s");
    try {
      for (const w of workers) if (!w.closed) w.progress();
    } catch (e) {
      progressThrew ||= String(e);
    }
    await new Promise((r) => (i % 64 === 63 ? setTimeout(r, 0) : r(undefined)));
  }
  return settled;
}

const listener = await drive(a.listen({ host: "127.0.0.1", port: 0 }));
const [server, client] = await drive(Promise.all([listener.accept(), b.connect({ host: "127.0.0.1", port: listener.port })]));
const offAm = await drive(a.onAm(7, () => {
  throw new Error("boom from an AM handler");
}));
await drive(client.amSend(new Uint8Array(4), { amId: 7 }));
// The AM handler threw; the worker still receives.
const into = new Uint8Array(3);
await drive(Promise.all([server.recv(into, 5), client.send(new Uint8Array([1, 2, 3]), 5)]));
// A peer worker goes away: onError throws. An endpoint made by worker address, whose failure UCX
// reports from inside ucp_worker_progress (a hello endpoint also hears it from its TCP link).
const c = await Worker.create({ progressMode: mode });
workers.push(c);
const ac = await drive(a.connect(await drive(c.address())));
const ca = await drive(c.connect(await drive(a.address())));
await drive(Promise.all([c.recv(new Uint8Array(1), 8), ac.send(new Uint8Array(1), 8)]));
void ca;
ac.onError = () => {
  throw new Error("boom from onError");
};
await c.close();
// A receive keeps the worker delivering while the failure is detected.
const idle = new AbortController();
const keepAwake = a.recv(new Uint8Array(1), 0xdead, undefined, { signal: idle.signal }).catch(() => {});
for (let i = 0; i < 1000 && !ac.error; i++) await drive(new Promise((r) => setTimeout(r, 10)));
idle.abort();
await drive(keepAwake);
offAm();
// Still serving: a new connection and a message on it.
const [s2, c2] = await drive(Promise.all([listener.accept(), b.connect({ host: "127.0.0.1", port: listener.port })]));
const into2 = new Uint8Array(2);
await drive(Promise.all([s2.recv(into2, 6), c2.send(new Uint8Array([4, 5]), 6)]));
await new Promise((r) => setTimeout(r, 50));
const served = into.join() === "1,2,3" && into2.join() === "4,5" && ac.error !== undefined;
process.stdout.write(JSON.stringify({ progressThrew, uncaught: [...uncaught].sort(), served }) + "\n");
await drive(Promise.all([a.close(), b.close()]));
process.exit(0);
