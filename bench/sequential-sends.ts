/**
 * Sequential awaited sends (`for (...) await ep.send(msg)`), the pattern the ping-pong and
 * windowed-bandwidth sweeps miss: two workers in one process, each send protocol forced in
 * turn, 1,000 sends of one size, microseconds per send and when the last one arrived.
 *   node --import tsx bench/sequential-sends.ts [mode] [size]     (deno run -A / bun work too)
 * Measured 2026-11-23 on the 2-core VM, thread mode, 8 B: inline 16-19 us a send, bounce 69-92,
 * zcopy 81-108 (an inline send resolves on submission; a zcopy send waits for the thread's
 * completion, a wake-up each).
 */
import { protocolPair } from "../src/cli/proto/measure.ts";
import type { ProgressMode } from "../src/index.ts";

const mode = (process.argv[2] ?? "thread") as ProgressMode;
const size = Number(process.argv[3] ?? 8);
const n = 1000;
for (const protocol of ["inline", "bounce", "zcopy", "zcopy-reg"] as const) {
  const p = await protocolPair(mode, protocol);
  const into = Array.from({ length: n }, () => new Uint8Array(size));
  const recvs = into.map((b) => p.b.recv(b, 3));
  const msg = new Uint8Array(size).fill(1);
  const t0 = performance.now();
  for (let i = 0; i < n; i++) await p.a.settled(p.ep.send(msg, 3));
  const t1 = performance.now();
  await Promise.all(recvs.map((r) => p.b.settled(r)));
  const t2 = performance.now();
  console.log(`${mode} ${protocol.padEnd(9)} ${size} B: ${(((t1 - t0) * 1000) / n).toFixed(1)} us per awaited send, all received after ${(t2 - t0).toFixed(1)} ms`);
  await p.close();
}
