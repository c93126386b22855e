/**
 * Connection time by host and port, both listener protocols in one run: from `connect()` until
 * the listener's side has the endpoint and an 8-byte tag message sent on the new endpoint has
 * arrived there. Two workers in one process (thread mode, the default error handling "peer").
 *   <runtime> bench/connect-time.ts [rounds=50]
 * Prints one JSON line: median and p90 in milliseconds per protocol.
 */
import process from "node:process";
import { Worker, type Endpoint, type Listener } from "../src/index.ts";

const rounds = Number(process.argv[2] ?? 50);
const server = await Worker.create();
const client = await Worker.create();

async function measure(protocol: "hello" | "ucx"): Promise<{ median: number; p90: number }> {
  const listener: Listener = await server.listen({ host: "127.0.0.1", port: 0, protocol });
  const times: number[] = [];
  for (let i = 0; i < rounds + 3; i++) {
    const t0 = performance.now();
    const [accepted, ep] = (await Promise.all([listener.accept(), client.connect({ host: "127.0.0.1", port: listener.port, protocol })])) as [Endpoint, Endpoint];
    const into = new Uint8Array(8);
    // A raw ("ucx") endpoint has no receive of its own: the worker-wide one, as for a C peer.
    const received = protocol === "hello" ? accepted.recv(into, 1) : server.recv(into, 1);
    await Promise.all([received, ep.send(new Uint8Array(8), 1)]);
    if (i >= 3) times.push(performance.now() - t0); // 3 warm-up rounds
    await Promise.all([ep.close(), accepted.close()]);
  }
  await listener.close();
  times.sort((a, b) => a - b);
  const at = (q: number) => Math.round(times[Math.min(times.length - 1, Math.floor(q * times.length))]! * 100) / 100;
  return { median: at(0.5), p90: at(0.9) };
}

// Alternate the two so that a slow moment of the machine does not fall on one protocol only.
const hello = await measure("hello");
const ucx = await measure("ucx");
const hello2 = await measure("hello");
await Promise.all([server.close(), client.close()]);
console.log(JSON.stringify({ rounds, date: new Date().toISOString(), hello, ucx, helloAgain: hello2 }));
process.exit(0);
