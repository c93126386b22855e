/**
 * Per-message cost of a stream of small messages, in CPU time (robust on a loaded machine, where
 * wall time measures the neighbours): two workers in ONE process (each its own UCX context),
 * a window of `window` 8 B tag messages at a time from a to b, three ways:
 *   send/recv   one `ep.send` and one `worker.recv` per message (a Promise and a record each)
 *   sendMany    one `ep.sendMany` and one `worker.recvMany` per window
 *   am          one `ep.amSend` per message, taken with one `ep.amRecv` each (UCXX's format)
 *   am+release  the same, each message given back once read (AmMessage.release: its memory is
 *               reused for later ones, from 8 KiB up)
 * Prints CPU us per message (both workers together: in thread mode that includes the progress
 * threads' spinning) and messages per second of wall time. BENCH_ONLY=sendMany runs one way
 * (for a profile: `node --cpu-prof --import tsx bench/message-cost.ts`).
 *   node --import tsx bench/message-cost.ts [mode=polling] [window=256] [windows=400] [size=8]
 */
import { Worker, type ProgressMode } from "../src/index.ts";

const mode = (process.argv[2] ?? "polling") as ProgressMode;
const window = Number(process.argv[3] ?? 256);
const windows = Number(process.argv[4] ?? 400);
const SIZE = Number(process.argv[5] ?? 8);

const a = await Worker.create({ progressMode: mode, errorHandling: "none" });
const b = await Worker.create({ progressMode: mode, errorHandling: "none" });
const listener = await b.settled(b.listen({ host: "127.0.0.1", port: 0 }));
const [ba, ab] = await a.settled(Promise.all([b.settled(listener.accept()), a.settled(a.connect({ host: "127.0.0.1", port: listener.port }))]));
const both = <T>(p: Promise<T>) => a.settled(b.settled(p));

const frames = Array.from({ length: window }, (_, i) => new Uint8Array(SIZE).fill(i));
const into = Array.from({ length: window }, () => new Uint8Array(SIZE));

async function measure(name: string, oneWindow: () => Promise<unknown>): Promise<void> {
  if (process.env.BENCH_ONLY && process.env.BENCH_ONLY !== name) return;
  for (let w = 0; w < Math.min(20, windows); w++) await oneWindow(); // warm-up
  const c0 = process.cpuUsage();
  const t0 = performance.now();
  for (let w = 0; w < windows; w++) await oneWindow();
  const wall = (performance.now() - t0) / 1000;
  const c = process.cpuUsage(c0);
  const n = window * windows;
  console.log(
    `${name.padEnd(10)} ${(((c.user + c.system) / n)).toFixed(2).padStart(7)} us CPU/message  ${(n / wall / 1000).toFixed(1).padStart(7)} k messages/s  (${((n * SIZE) / wall / 1e6).toFixed(2)} MB/s)`,
  );
}

console.log(`${mode}, window ${window}, ${windows} windows of ${SIZE} B messages, two workers in one process`);
await measure("send/recv", () => both(Promise.all([...into.map((x) => ba.recv(x, 1)), ...frames.map((f) => ab.send(f, 1))])));
await measure("sendMany", () => both(Promise.all([ba.recvMany(into, 2), ab.sendMany(frames, 2)])));
await measure("am", () => both(Promise.all([...frames.map(() => ba.amRecv()), ...frames.map((f) => ab.amSend(f))])));
await measure("am+release", () => both(Promise.all([...frames.map(() => ba.amRecv().then((m) => m.release())), ...frames.map((f) => ab.amSend(f))])));
await a.settled(ab.close()).catch(() => {});
await a.close();
await b.close();
