/**
 * Fresh worker pairs in one process, each connected and then doing a few 8 B round trips: counts
 * the connects and round trips slower than a bound (default 100 ms). A park whose wake-up was
 * lost ends only on its 1 s timeout, so this is the check for issue 21's lost wake-up early in a
 * worker's life (before the fix: 9 of 10 fresh hybrid pairs paid 1 s).
 *   node --import tsx bench/fresh-pairs.ts [--mode hybrid] [--pairs 20] [--rounds 50] [--via listener|address] [--bound-ms 100]
 * (also `bun bench/fresh-pairs.ts ...`, `deno run -A bench/fresh-pairs.ts ...`)
 */
import process from "node:process";
import { Worker, type Endpoint, type ProgressMode } from "../src/index.ts";

const arg = (name: string, fallback: string) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 && i + 1 < process.argv.length ? process.argv[i + 1]! : fallback;
};
const mode = arg("mode", "hybrid") as ProgressMode;
const pairs = Number(arg("pairs", "20"));
const rounds = Number(arg("rounds", "50"));
const via = arg("via", "listener");
const boundMs = Number(arg("bound-ms", "100"));

let slow = 0;
let worst = 0;
const note = (what: string, ms: number) => {
  worst = Math.max(worst, ms);
  if (ms <= boundMs) return;
  slow++;
  console.log(`${what}: ${ms.toFixed(1)} ms`);
};
for (let p = 0; p < pairs; p++) {
  const [a, b] = await Promise.all([Worker.create({ progressMode: mode }), Worker.create({ progressMode: mode })]);
  let t = performance.now();
  let ab: Endpoint;
  let ba: Endpoint | undefined;
  if (via === "listener") {
    const listener = await b.listen({ host: "127.0.0.1", port: 0 });
    [ba, ab] = await Promise.all([listener.accept(), a.connect({ host: "127.0.0.1", port: listener.port })]);
    await listener.close();
  } else {
    ab = await a.connect(await b.address());
  }
  note(`pair ${p} connect`, performance.now() - t);
  const out = new Uint8Array(8);
  const into = new Uint8Array(8);
  for (let i = 0; i < rounds; i++) {
    t = performance.now();
    // By listener: there and back on the endpoint pair; by address: one way, b's worker receiving.
    if (ba) {
      await Promise.all([ba.recv(into, 1), ab.send(out, 1)]);
      await Promise.all([ab.recv(into, 2), ba.send(out, 2)]);
    } else {
      await Promise.all([b.recv(into, 1), ab.send(out, 1)]);
    }
    note(`pair ${p} round trip ${i}`, performance.now() - t);
  }
  await Promise.all([a.close(), b.close()]);
}
console.log(`${mode} via ${via}: ${slow} of ${pairs * (rounds + 1)} connects and round trips over ${boundMs} ms (${pairs} fresh pairs); slowest ${worst.toFixed(1)} ms`);
