/**
 * malloc in use while thread-mode workers run batches (issue 26): two workers in one process,
 * each with its progress thread, exchanging windows (`sendMany` / `recvMany`) and multi-buffer
 * batches (`sendMulti` / `recvMulti`) for `--seconds`, with malloc in use (glibc's malloc_info,
 * after a collection of this thread's heap and malloc_trim) printed every `--every` seconds.
 *
 *   GLIBC_TUNABLES=glibc.malloc.tcache_count=0 node --expose-gc --import tsx scripts/soak/batch-malloc.ts [--seconds 60] [--every 10]
 *
 * Why: the executor's batches once read their descriptors through a view of C memory, whose
 * ~200 B of malloc only a full collection of the progress thread's isolate frees, and that
 * isolate collects rarely (test/core/c-memory-views.test.ts). The application thread's heap is
 * collected before each reading, the progress threads' are not: what they hold shows as a line.
 */
import process from "node:process";
import { Worker } from "../../src/index.ts";
import { sample } from "./samples.ts";

const arg = (name: string, fallback: number) => {
  const i = process.argv.indexOf(`--${name}`);
  return i < 0 ? fallback : Number(process.argv[i + 1]);
};
const seconds = arg("seconds", 60);
const every = arg("every", 10);

const a = await Worker.create({ progressMode: "thread", errorHandling: "none" });
const b = await Worker.create({ progressMode: "thread", errorHandling: "none" });
const listener = await b.listen({ host: "127.0.0.1", port: 0 });
const [ba, ab] = await Promise.all([listener.accept(), a.connect({ host: "127.0.0.1", port: listener.port })]);

const frames = Array.from({ length: 16 }, (_, i) => new Uint8Array(64).fill(i));
const into = frames.map(() => new Uint8Array(64));
const started = Date.now();
// The soak's own reading (samples.ts): this thread's heap collected, malloc_trim, malloc in use.
const reading = (batches: number) => ({ batches, mallocMiB: Math.round(sample(started, batches).mallocInUseMiB * 1000) / 1000 });

let batches = 0;
const readings = [reading(0)];
let next = started + every * 1000;
while (Date.now() < started + seconds * 1000) {
  await Promise.all([ba.recvMany(into, 1), ab.sendMany(frames, 1), ba.recvMulti(2), ab.sendMulti(frames.slice(0, 4), 2)]);
  batches += 4;
  if (Date.now() >= next) {
    readings.push(reading(batches));
    console.error(`batch-malloc: ${batches} batches, malloc in use ${readings.at(-1)!.mallocMiB} MiB`);
    next += every * 1000;
  }
}
const first = readings[1] ?? readings[0]!;
const last = readings.at(-1)!;
const perBatch = last.batches > first.batches ? ((last.mallocMiB - first.mallocMiB) * 2 ** 20) / (last.batches - first.batches) : 0;
console.log(JSON.stringify({ seconds, batches, readings, bytesPerBatchAfterFirstReading: Math.round(perBatch) }));
await Promise.all([a.close(), b.close()]);
