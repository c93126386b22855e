/**
 * Child process for test/core/worker.test.ts ("while its fd watcher starts"): a hybrid pair made
 * in a fresh process (no pooled thread to reuse, so each watcher thread has to start), then round
 * trips at once, each reply sent 2 ms after the request arrived (past the driver's spin), until
 * the requester's watcher is ready (at most 3 s). Prints one JSON line: the round trips, whether
 * every payload came back intact, and the requester's hybridStats.
 */
import process from "node:process";
import { Worker } from "../../src/index.ts";
import { pattern, samePattern } from "./workers.ts";

// A fixed spin budget (the default's starting one): the learnt one may grow past the replies'
// 2 ms (LEARNT_SPIN_MAX_MS), and a driver that spun through a whole wait neither parked nor
// polled in it (Bun, a CI run at 1b004e6: 2 round trips, no starting poll, no awaited park).
const create = () => Worker.create({ progressMode: "hybrid", errorHandling: "none", spinMicroseconds: 100 });
const [a, b] = await Promise.all([create(), create()]);
const ab = await a.connect(await b.address());
const ba = await b.connect(await a.address());
const into = new Uint8Array(64);
const back = new Uint8Array(64);
let trips = 0;
let intact = true;
const until = performance.now() + 3000;
// Until the watcher served its first park: hybridStats counts a park ended by UCX's event then.
while (a.hybridStats!.eventWakeups === 0 && performance.now() < until) {
  const reply = a.recv(back, 2);
  const request = b.recv(into, 1);
  await ab.send(pattern(64, trips), 1);
  await request;
  await new Promise((r) => setTimeout(r, 2));
  await ba.send(into, 2);
  await reply;
  intact &&= samePattern(back, trips);
  trips++;
}
const stats = a.hybridStats;
await Promise.all([a.close(), b.close()]);
console.log(JSON.stringify({ trips, intact, stats }));
process.exit(0);
