/**
 * A listener under plain TCP clients, in a process of its own so that a listener that dies (UCX's
 * sockaddr listener aborts on such bytes, UCX 1.13) fails one test instead of the run:
 *   <runtime> test/helpers/hostile-listener.ts <progressMode> [hello|ucx]
 * It listens on 127.0.0.1, then connects to its own port with raw TCP clients that write 0, 1,
 * 64, 4096 and 1 MiB of random bytes and of 0xff; then opens and closes 1,000 connections; then
 * a ucx-ts client of its own connects and a message goes each way. Prints one JSON line:
 * { hostile, cycles, errors, echo } and exits 0. A watchdog ends it after 100 s.
 */
import { randomBytes } from "node:crypto";
import { connect } from "node:net";
import process from "node:process";
import { Worker, type UcxError } from "../../src/index.ts";

const [mode = "thread", protocol = "hello"] = process.argv.slice(2);
setTimeout(() => process.exit(3), 100_000).unref?.();

const server = await Worker.create({ progressMode: mode as "thread" });
const client = await Worker.create({ progressMode: mode as "thread" });
const errors: Record<string, number> = {};
const listener = await server.settled(
  server.listen({ host: "127.0.0.1", port: 0, protocol: protocol as "hello", onError: (e: UcxError) => void (errors[e.code] = (errors[e.code] ?? 0) + 1) }),
);

/** One raw TCP client: write `bytes` (if any), then wait until the listener closes the connection or 300 ms pass. */
function rawClient(bytes: Uint8Array | undefined): Promise<void> {
  return new Promise((resolve) => {
    const s = connect({ host: "127.0.0.1", port: listener.port }, () => {
      if (bytes) s.write(bytes, () => {});
      else s.end();
    });
    const timer = setTimeout(() => s.destroy(), 300);
    s.on("error", () => {}); // the listener may reset it mid-write
    s.on("close", () => {
      clearTimeout(timer);
      resolve();
    });
  });
}

let hostile = 0;
for (const size of [0, 1, 64, 4096, 1 << 20]) {
  for (const bytes of [randomBytes(size), new Uint8Array(size).fill(0xff)]) {
    await rawClient(size === 0 ? undefined : bytes);
    hostile++;
  }
}
// 1,000 connections opened and closed at once, ten at a time.
let cycles = 0;
for (let i = 0; i < 100; i++) {
  await Promise.all(
    Array.from(
      { length: 10 },
      () =>
        new Promise<void>((resolve) => {
          const s = connect({ host: "127.0.0.1", port: listener.port }, () => s.destroy());
          s.on("error", () => {});
          s.on("close", () => {
            cycles++;
            resolve();
          });
        }),
    ),
  );
}

// A legitimate client after all that: a message each way.
const both = <T>(p: Promise<T>) => server.settled(client.settled(p));
const [accepted, ep] = await both(Promise.all([listener.accept(), client.connect({ host: "127.0.0.1", port: listener.port, protocol: protocol as "hello" })]));
const into = new Uint8Array(5);
const back = new Uint8Array(5);
const recvOn = (e: typeof ep, b: Uint8Array) => (protocol === "ucx" ? e.worker.recv(b, 7) : e.recv(b, 7));
await both(Promise.all([recvOn(accepted, into), ep.send(new TextEncoder().encode("hello"), 7)]));
await both(Promise.all([recvOn(ep, back), accepted.send(new TextEncoder().encode("olleh"), 7)]));
const echo = new TextDecoder().decode(into) + "/" + new TextDecoder().decode(back);
await both(Promise.all([server.close(), client.close()]));
process.stdout.write(JSON.stringify({ hostile, cycles, errors, echo }) + "\n");
process.exit(0);
