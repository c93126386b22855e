/**
 * A peer process for the two-process suites, run by the same runtime as the test:
 *   <runtime> test/helpers/peer.ts <progressMode> <errorHandling>
 * It listens on 127.0.0.1 (port 0), prints {"port": N} on stdout, accepts ONE endpoint and then
 * serves it: every tag message it receives (any tag, up to 64 MiB) is sent back with tag + 1;
 * a message with tag 0 ends it. It stays put (never exits by itself) when told "hang" as third
 * argument: it accepts, then only receives, so the test can kill it mid-transfer. Told "multi",
 * it echoes multi-buffer batches instead: each batch received with tag 1 goes back with tag 2,
 * and a batch of zero frames (echoed too) ends it. Told "rma", it serves remote memory
 * (below); told "am", it echoes active messages ("am-many": windows of them, with
 * amRecvMany/amSendMany); told "many", it echoes windows of messages
 * with recvMany/sendMany (below); told "farewell", it sends a fixed set of
 * messages, closes and exits (below); told "silent" (in polling mode), it accepts, progresses one
 * second more and then never again, so that every rendezvous sent to it stays in flight until the test
 * kills it.
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

if (behaviour === "silent") {
  // A second more of progress lets the connecting side finish its hello (a slow thread-mode
  // worker's too); then nothing awaits the worker any more, and the interval keeps us up.
  await worker.settled(new Promise((r) => setTimeout(r, 1000)));
  setInterval(() => {}, 60_000);
  await new Promise(() => {});
}

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

if (behaviour === "farewell") {
  // Send everything the endpoint-failure suite checks, close, and exit at once: 40 tag messages
  // (tag 7, message i of FAREWELL_SIZES[i % 4] bytes, pattern i), multi-buffer batches of 1, 100
  // and 101 frames (tags 8, 9, 10; frame i of 1 + (i * 37) % 300 bytes, pattern i), three active
  // messages (user header [i], 50 + i bytes of pattern i).
  const pattern = (length: number, seed: number) => Uint8Array.from({ length }, (_, i) => (i * 31 + seed) & 255);
  const sizes = [1, 100, 4096, 7000];
  const sends: Promise<unknown>[] = [];
  for (let i = 0; i < 40; i++) sends.push(ep.send(pattern(sizes[i % 4]!, i), 7));
  for (const [k, frames] of [1, 100, 101].entries()) {
    sends.push(ep.sendMulti(Array.from({ length: frames }, (_, i) => pattern(1 + ((i * 37) % 300), i)), 8 + k));
  }
  for (let i = 0; i < 3; i++) sends.push(ep.amSend(pattern(50 + i, i), { header: new Uint8Array([i]) }));
  await worker.settled(Promise.all(sends));
  await worker.settled(ep.close());
  process.exit(0);
}

if (behaviour === "many") {
  // Windows: a tag-5 message of one f64 announces how many messages follow on tag 6 (0 ends);
  // they are received with one recvMany into 64 KiB buffers and sent back with one sendMany on
  // tag 7, each at its received length, in order.
  const count = new Float64Array(1);
  for (;;) {
    await worker.settled(ep.recv(count, 5));
    if (count[0] === 0) break;
    const buffers = Array.from({ length: count[0]! }, () => new Uint8Array(64 << 10));
    const got = await worker.settled(ep.recvMany(buffers, 6));
    await worker.settled(ep.sendMany(buffers.map((b, i) => b.subarray(0, got[i]!.length)), 7));
  }
  await worker.settled(ep.close());
  await worker.close();
  process.exit(0);
}

if (behaviour === "am-many") {
  // Windows of active messages: a tag-5 message of one f64 announces how many follow (0 ends);
  // they are taken with one amRecvMany and sent back with one amSendMany, with the first one's
  // user header.
  const count = new Float64Array(1);
  for (;;) {
    await worker.settled(ep.recv(count, 5));
    if (count[0] === 0) break;
    const got = await worker.settled(ep.amRecvMany(count[0]!));
    await worker.settled(ep.amSendMany(got.map((m) => m.data), { header: got[0]!.header }));
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
