/**
 * What every benchmark peer starts with, run by the runtime being measured:
 *   <runtime> bench/<x>-peer.ts server <mode> <errorHandling>
 *   <runtime> bench/<x>-peer.ts client <mode> <errorHandling> <port> <plan-json>
 * A worker with that progress mode and error handling; the server listens on 127.0.0.1, prints
 * {"port"} and accepts one endpoint, the client connects. Imports the built package when
 * UCX_TS_BENCH_DIST=1 (`--dist`: measure the build), else the sources. A watchdog ends it after 5 min.
 * BENCH_SPIN_US sets the workers' spinMicroseconds (e.g. `BENCH_SPIN_US=1000 npm run bench`),
 * BENCH_ADAPTIVE_THREAD_SPIN=1 or 0 their adaptiveThreadSpin. Mode "requests" is polling mode
 * for a peer that then takes its latency rows through UcxRequests (recvRequest, sendRequest and
 * its own progress() loop: no Promise per message).
 */
import process from "node:process";

const lib = process.env.UCX_TS_BENCH_DIST === "1" ? "../dist/index.js" : "../src/index.ts";
export const ucxTs = (await import(lib)) as typeof import("../src/index.ts");

export async function startBenchPeer<Plan>() {
  const [role, mode = "thread", errorHandling = "none", portText = "0", planText = "{}"] = process.argv.slice(2);
  setTimeout(() => process.exit(3), 300_000).unref?.();
  const spin = {
    ...(process.env.BENCH_SPIN_US ? { spinMicroseconds: Number(process.env.BENCH_SPIN_US) } : {}),
    ...(process.env.BENCH_ADAPTIVE_THREAD_SPIN ? { adaptiveThreadSpin: process.env.BENCH_ADAPTIVE_THREAD_SPIN === "1" } : {}),
  };
  // "requests": polling mode, with the latency rows through UcxRequests (no Promise) where the peer has them.
  const requests = mode === "requests";
  const worker = await ucxTs.Worker.create({ progressMode: (requests ? "polling" : mode) as "thread", errorHandling: errorHandling as "none", ...spin });
  const wait = <T>(p: Promise<T>) => worker.settled(p);
  let ep;
  if (role === "server") {
    const listener = await wait(worker.listen({ port: 0, host: "127.0.0.1" }));
    process.stdout.write(JSON.stringify({ port: listener.port }) + "\n");
    ep = await wait(listener.accept());
  } else ep = await wait(worker.connect({ host: "127.0.0.1", port: Number(portText) }));
  return { role: role as "server" | "client", worker, wait, ep, plan: JSON.parse(planText) as Plan, requests };
}
