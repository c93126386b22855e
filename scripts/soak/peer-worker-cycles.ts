/**
 * Cycles of connections from one worker to peers that are each a NEW UCX worker (a new remote
 * worker UUID every time, as when the soak's killed peers are replaced), in one process: what a
 * listening worker keeps per remote worker it has seen. Each cycle: a fresh worker connects, one
 * 1 KiB tag message, then the peer side ends by `how`: "close" (both endpoints closed, then the
 * peer worker), "vanish" (the peer worker closed with its endpoint open: the listener's endpoint
 * fails, as with a killed peer). Readings as connection-cycles.ts: linear growth is a leak.
 *
 *   node --expose-gc --import tsx scripts/soak/peer-worker-cycles.ts [close|vanish] [100,200,400]
 */
import process from "node:process";
import { Worker } from "../../src/index.ts";
import { round, sample } from "./samples.ts";

const [how = "vanish", countsArg = "100,200,400"] = process.argv.slice(2);
if (how !== "close" && how !== "vanish") throw new Error(`how must be close or vanish, got ${how}`);
const counts = countsArg.split(",").map(Number);
const WARMUP = 20;

const a = await Worker.create({ errorHandling: "peer", progressMode: "polling" });
const listener = await a.listen({ host: "127.0.0.1", port: 0, onError: () => {} });
const started = Date.now();

async function settled() {
  for (let i = 0; i < 3; i++) await new Promise((r) => setTimeout(r, 50));
  const s = sample(started, 0);
  return { rssMiB: round(s.trimmedRssMiB), mallocInUseMiB: round(s.mallocInUseMiB), jsHeapMiB: round(s.heapMiB), fds: s.fds };
}

let done = 0;
for (const target of [WARMUP, ...counts]) {
  for (; done < target; done++) {
    const b = await Worker.create({ errorHandling: "peer", progressMode: "polling" });
    const run = <T>(p: Promise<T>) => b.settled(p);
    const [server, client] = await run(Promise.all([listener.accept(), b.connect({ host: "127.0.0.1", port: listener.port })]));
    const buf = new Uint8Array(1024);
    const received = server.recv(buf, 5n);
    await run(client.send(new Uint8Array(1024), 5n));
    await run(received);
    if (how === "close") {
      await run(Promise.all([client.close(), server.close()]));
      await b.close();
    } else {
      const failed = new Promise<void>((r) => (server.onError = () => r()));
      await b.close();
      await failed;
      await server.close({ force: true });
    }
  }
  console.log(JSON.stringify({ how, cycles: done, ...(await settled()) }));
}
await listener.close();
await a.close();
process.exit(0);
