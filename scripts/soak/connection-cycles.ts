/**
 * Connection cycles in one process, for telling a per-connection leak from allocator retention:
 * two workers, N times a connect (hello or `protocol: "ucx"`), one 1 KiB tag message, both ends
 * force-closed; after warm-up and at each count given, RSS after a GC and malloc_trim(0), malloc's
 * bytes in use and the JS heap. Linear growth with N is a leak; a step that levels off is not.
 *
 *   node --expose-gc --import tsx scripts/soak/connection-cycles.ts [hello|ucx] [100,200,400,800]
 *
 * Measured 2026-11-26 (docs/testing.md, Soak): flat for both protocols from 100 to 800 cycles.
 */
import process from "node:process";
import { Worker, type ConnectProtocol } from "../../src/index.ts";
import { round, sample } from "./samples.ts";

const [protocolArg = "hello", countsArg = "100,200,400,800"] = process.argv.slice(2);
if (protocolArg !== "hello" && protocolArg !== "ucx") throw new Error(`protocol must be hello or ucx, got ${protocolArg}`);
const protocol: ConnectProtocol = protocolArg;
const counts = countsArg.split(",").map(Number);
const WARMUP = 20;

const a = await Worker.create({ errorHandling: "peer" });
const b = await Worker.create({ errorHandling: "peer" });
const listener = await a.listen({ host: "127.0.0.1", port: 0, protocol, onError: () => {} });
const started = Date.now();

async function settled() {
  for (let i = 0; i < 3; i++) await new Promise((r) => setTimeout(r, 20)); // finalizers, closed sockets
  const s = sample(started, 0); // GC, malloc_trim, then the readings
  return { rssMiB: round(s.trimmedRssMiB), mallocInUseMiB: round(s.mallocInUseMiB), jsHeapMiB: round(s.heapMiB), fds: s.fds };
}

let done = 0;
for (const target of [WARMUP, ...counts]) {
  for (; done < target; done++) {
    const [server, client] = await Promise.all([listener.accept(), b.connect({ host: "127.0.0.1", port: listener.port, protocol })]);
    const buf = new Uint8Array(1024);
    // Endpoints made with protocol "ucx" have no receive of their own (worker-wide tag matching).
    const received = protocol === "ucx" ? a.recv(buf, 5n) : server.recv(buf, 5n);
    await client.send(new Uint8Array(1024), 5n);
    await received;
    await Promise.all([client.close({ force: true }), server.close({ force: true })]);
  }
  console.log(JSON.stringify({ protocol, cycles: done, ...(await settled()) }));
}
await listener.close();
await a.close();
await b.close();
process.exit(0);
