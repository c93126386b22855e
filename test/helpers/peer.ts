/**
 * A peer process for the two-process suites, run by the same runtime as the test:
 *   <runtime> test/helpers/peer.ts <progressMode> <errorHandling>
 * It listens on 127.0.0.1 (port 0), prints {"port": N} on stdout, accepts ONE endpoint and then
 * serves it: every tag message it receives (any tag, up to 64 MiB) is sent back with tag + 1;
 * a message with tag 0 ends it. It stays put (never exits by itself) when told "hang" as third
 * argument: it accepts, then only receives, so the test can kill it mid-transfer. Told "multi",
 * it echoes multi-buffer batches instead: each batch received with tag 1 goes back with tag 2,
 * and a batch of zero frames (echoed too) ends it. Told "rma", it serves remote memory
 * (below); told "am", it echoes active messages.
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

if (behaviour === "am") {
  // Echo active messages: each one goes back with the same data and user header; an empty
  // message with user header "end" is echoed and ends it.
  for (;;) {
    const m = await worker.settled(ep.amRecv());
    await worker.settled(ep.amSend(m.data, { header: m.header }));
    if (m.data.length === 0 && new TextDecoder().decode(m.header) === "end") break;
  }
  await worker.settled(ep.close());
  await worker.close();
  process.exit(0);
}

if (behaviour === "rma") {
  // Remote memory for the RMA suite: 64 MiB + 64 bytes registered, its key sent with tag 7.
  // Commands (tag messages of three f64: offset, length, seed): tag 10 "does [offset, +length)
  // hold pattern(seed)?" (answer tag 11: 1 or 0), tag 12 "fill it with pattern(seed)" (answer
  // 13), tag 20 "add 1 to the u64 at offset `offset`, `length` times, with atomics through an
  // endpoint to this worker itself" (answer 21 when done), tag 0: finish.
  const size = (64 << 20) + 64;
  const mem = await worker.settled(worker.memMap(size));
  await worker.settled(ep.send(await worker.settled(mem.packRkey()), 7));
  const self = await worker.settled(worker.connect(await worker.settled(worker.address())));
  const selfKey = await worker.settled(self.unpackRkey(await worker.settled(mem.packRkey())));
  const command = new Float64Array(3);
  const same = (bytes: Uint8Array, seed: number) => bytes.every((b, i) => b === ((i * 31 + seed) & 255));
  for (;;) {
    const { tag } = await worker.settled(ep.recv(command, 0, 0));
    const [offset, length, seed] = command as unknown as [number, number, number];
    if (tag === 0) break;
    const region = mem.bytes.subarray(offset, offset + length);
    if (tag === 10) await worker.settled(ep.send(new Uint8Array([same(region, seed) ? 1 : 0]), 11));
    else if (tag === 12) {
      region.forEach((_, i) => (region[i] = (i * 31 + seed) & 255));
      await worker.settled(ep.send(new Uint8Array(1), 13));
    } else if (tag === 20) {
      const adds = Array.from({ length }, () => self.atomic("add", mem.address + offset, selfKey, 1));
      await worker.settled(Promise.all(adds));
      await worker.settled(self.flush());
      await worker.settled(ep.send(new Uint8Array(1), 21));
    }
  }
  await worker.settled(selfKey.destroy());
  await worker.settled(self.close());
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
