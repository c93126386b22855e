/**
 * A peer process for the two-process suites, run by the same runtime as the test:
 *   <runtime> test/helpers/peer.ts <progressMode> <errorHandling>
 * It listens on 127.0.0.1 (port 0), prints {"port": N} on stdout, accepts ONE endpoint and then
 * serves it: every tag message it receives (any tag, up to 64 MiB) is sent back with tag + 1;
 * a message with tag 0 ends it. It stays put (never exits by itself) when told "hang" as third
 * argument: it accepts, then only receives, so the test can kill it mid-transfer. Told "multi",
 * it echoes multi-buffer batches instead: each batch received with tag 1 goes back with tag 2,
 * and a batch of zero frames (echoed too) ends it.
 * A watchdog ends it after 120 s whatever happens.
 */
import process from "node:process";
import { Worker } from "../../src/index.ts";

const [mode = "thread", errorHandling = "peer", behaviour = "echo"] = process.argv.slice(2);
setTimeout(() => process.exit(3), 120_000).unref?.();

const worker = await Worker.create({ progressMode: mode as "thread", errorHandling: errorHandling as "peer" });
const listener = await worker.settled(worker.listen({ port: 0, host: "127.0.0.1" }));
process.stdout.write(JSON.stringify({ port: listener.port, pid: process.pid }) + "\n");
const ep = await worker.settled(listener.accept());
await worker.settled(listener.close());

if (behaviour === "multi") {
  for (;;) {
    const frames = await worker.settled(ep.recvMulti(1));
    await worker.settled(ep.sendMulti(frames, 2));
    if (frames.length === 0) break;
  }
  await worker.settled(ep.close());
  await worker.close();
  process.exit(0);
}

const buffer = new Uint8Array(64 << 20);
for (;;) {
  const { tag, length } = await worker.settled(ep.recv(buffer, 0, 0));
  if (behaviour === "hang") continue; // swallow everything; the test kills us
  if (tag === 0) break;
  await worker.settled(ep.send(buffer.subarray(0, length), Number(tag) + 1));
}
await worker.settled(ep.close());
await worker.close();
process.exit(0);
