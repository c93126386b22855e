/**
 * Round trips between two workers in ONE process (each with its own UCX context and worker,
 * connected by address), and a send+receive through one worker's endpoint to itself, for each
 * progress mode: the application-thread costs that the two-process sweep (run-p2p.mjs) mixes
 * with the peer's. Medians of 8 B round trips after a warm-up.
 *   node --import tsx bench/in-process.ts [modes, default polling,hybrid,thread] [rounds]
 *   (deno run -A / bun work too)
 * Measured 2026-11-23 on the 2-core VM (median us; two-worker 8 B round trip / self send+recv):
 *   Node, before the shared event-loop turn and the settled() fixes (same loops, by hand):
 *     polling 4,268 / 13.9, hybrid 118 / 16.0
 *   after:  Node polling 13 / 4.4, hybrid 13 / 8.0, thread 280 / 18
 *           Deno polling 25 / 12,  hybrid 59 / 26,  thread 285 / 110
 *           Bun  polling 24 / 12,  hybrid 14 / 5.1, thread 169 / 82
 *   (thread mode with two workers runs three threads on two cores: every hop is a wake-up)
 * The two-worker row also prints its p90, p99 and event-loop turns per round trip (the driver
 * loops' turns: engine/event-loop.ts).
 */
import { Worker, type ProgressMode } from "../src/index.ts";
import { eventLoopTurns } from "../src/core/engine/event-loop.ts";

const modes = (process.argv[2] ?? "polling,hybrid,thread").split(",") as ProgressMode[];
const rounds = Number(process.argv[3] ?? 5000);

/** Quantile `q` of `xs` (sorted in place). */
function quantile(xs: number[], q: number): number {
  xs.sort((a, b) => a - b);
  return xs[Math.min(xs.length - 1, Math.floor(q * xs.length))]!;
}

for (const mode of modes) {
  const a = await Worker.create({ progressMode: mode, errorHandling: "none" });
  const b = await Worker.create({ progressMode: mode, errorHandling: "none" });
  const ab = await a.settled(a.connect(await a.settled(b.address())));
  const ba = await b.settled(b.connect(await b.settled(a.address())));
  const self = await a.settled(a.connect(await a.settled(a.address())));
  const out = new Uint8Array(8);
  const inA = new Uint8Array(8);
  const inB = new Uint8Array(8);
  const echo = (async () => {
    for (;;) {
      const r = await b.settled(b.recv(inB, 0, 0));
      if (r.tag === 9) return;
      await b.settled(ba.send(inB, 2));
    }
  })();
  /** `rounds` timings (us) of: post a receive for `back`, send on `ep`, await both. */
  const timed = async (ep: typeof ab, sendTag: number, backTag: number): Promise<number[]> => {
    const us: number[] = [];
    for (let i = 0; i < rounds + 200; i++) {
      const t0 = performance.now();
      const r = a.recv(inA, backTag);
      await a.settled(ep.send(out, sendTag));
      await a.settled(r);
      if (i >= 200) us.push((performance.now() - t0) * 1000); // 200 warm-up rounds
    }
    return us;
  };
  const turns0 = eventLoopTurns();
  const rtts = await timed(ab, 1, 2); // b echoes tag 1 as tag 2
  const turns = (eventLoopTurns() - turns0) / (rounds + 200);
  const rtt = quantile(rtts, 0.5);
  const loop = quantile(await timed(self, 3, 3), 0.5);
  await a.settled(ab.send(out, 9));
  await echo;
  console.log(
    `${mode.padEnd(8)} two workers, 8 B round trip ${rtt.toFixed(1)} us (p90 ${quantile(rtts, 0.9).toFixed(1)}, p99 ${quantile(rtts, 0.99).toFixed(1)}, ${turns.toFixed(3)} event-loop turns each); one worker to itself, send+recv ${loop.toFixed(1)} us`,
  );
  await a.close();
  await b.close();
}
process.exit(0);
