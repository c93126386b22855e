/**
 * Where the time of one active message goes (issue 21): two workers in ONE process (each its own
 * UCX context, connected over 127.0.0.1 with error handling "none", so UCX picks shared memory as
 * between two processes), windows of `window` amSends of `size` bytes from a to b, each taken with
 * amRecv and given back (release). Every microsecond is this process's: sender and receiver.
 *
 *   <runtime> bench/am-profile.ts [mode=polling] [size=65536] [window=16] [windows=2000] [receive=each|many] [send=each|many]
 *   (receive=many: one ba.amRecvMany(window) a window instead of `window` amRecvs;
 *    send=many: one ab.amSendMany(window buffers) a window instead of `window` amSends)
 *   UCX_TS_PROFILE=1 <runtime> bench/am-profile.ts ...   plus phases and C calls per message
 *
 * Prints one JSON line: wall and CPU us per message, and (profiling) the application thread's
 * exclusive phases per message (src/core/profile.ts; "callback" is JavaScript run by UCX from
 * inside a C call) and each C function's calls and inclusive us per message.
 */
import { Worker, type ProgressMode } from "../src/index.ts";
import { PHASE_NAMES, PROFILING, profileSnapshot, resetProfile } from "../src/core/profile.ts";

const mode = (process.argv[2] ?? "polling") as ProgressMode;
const size = Number(process.argv[3] ?? 65536);
const window = Number(process.argv[4] ?? 16);
const windows = Number(process.argv[5] ?? 2000);
const receive = process.argv[6] ?? "each";
const send = process.argv[7] ?? "each";

const a = await Worker.create({ progressMode: mode, errorHandling: "none" });
const b = await Worker.create({ progressMode: mode, errorHandling: "none" });
const listener = await b.settled(b.listen({ host: "127.0.0.1", port: 0 }));
const [ba, ab] = await a.settled(Promise.all([b.settled(listener.accept()), a.settled(a.connect({ host: "127.0.0.1", port: listener.port }))]));
const both = <T>(p: Promise<T>) => a.settled(b.settled(p));
const out = new Uint8Array(size).fill(7);

const oneWindow = () => {
  const work: Promise<unknown>[] = [];
  if (receive === "many") work.push(ba.amRecvMany(window).then((ms) => ms.forEach((m) => m.release())));
  else for (let i = 0; i < window; i++) work.push(ba.amRecv().then((m) => m.release()));
  if (send === "many") work.push(ab.amSendMany(Array.from({ length: window }, () => out)));
  else for (let i = 0; i < window; i++) work.push(ab.amSend(out));
  return both(Promise.all(work));
};

// Warm-up: compilation, wire-up and the receiver's buffer pool.
for (let w = 0, until = performance.now() + 1500; w < windows && performance.now() < until; w++) await oneWindow();
resetProfile();
const c0 = process.cpuUsage();
const t0 = performance.now();
for (let w = 0; w < windows; w++) await oneWindow();
const wallMs = performance.now() - t0;
const cpu = process.cpuUsage(c0);
const n = window * windows;
const result: Record<string, unknown> = {
  mode,
  receive,
  send,
  size,
  window,
  messages: n,
  wallUsPerMessage: (wallMs * 1000) / n,
  cpuUsPerMessage: (cpu.user + cpu.system) / n,
  GBps: (n * size) / (wallMs / 1000) / 1e9,
};
if (PROFILING) {
  const s = profileSnapshot();
  result.phasesUs = Object.fromEntries(PHASE_NAMES.map((p) => [p, +((s.phases[p] * 1000) / n).toFixed(3)]));
  result.calls = Object.fromEntries(
    Object.entries(s.calls)
      .filter(([, c]) => c.count > 0)
      .sort((x, y) => y[1].ms - x[1].ms)
      .map(([name, c]) => [name, { perMessage: +(c.count / n).toFixed(3), usPerMessage: +((c.ms * 1000) / n).toFixed(3) }]),
  );
}
process.stdout.write(JSON.stringify(result) + "\n");
await a.settled(ab.close()).catch(() => {});
await a.close();
await b.close();
process.exit(0);
