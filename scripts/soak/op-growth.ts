/**
 * What one operation kind at one payload size leaves in this process's native memory, with no
 * faults: one long-lived connection to a soak peer process (peer.ts, as in the soak), `count`
 * operations of `kind` of exactly `size` bytes, one at a time, and after every `every` of them a
 * reading after GC and malloc_trim (least of three: samples.ts) of malloc in use, RSS and the JS
 * heap. Linear growth of malloc in use against operations is memory kept per operation (the
 * soak's at-rest line per 100k operations, split by kind and size).
 *
 * Found with it (2026-11-27, docs/testing.md, Soak): tag echoes of the soak's random sizes in
 * polling mode rose ~70-80 B an operation in malloc's main arena (+594 KiB over 8,500), fixed
 * sizes (64 KiB, 1 MiB, 8 MiB) did not, and with `GLIBC_TUNABLES=glibc.malloc.tcache_count=0`
 * malloc in use stayed within 0.01 MiB over 3,000: chunks parked in glibc's per-thread caches,
 * which malloc_info counts as in use (allocator.ts), not live blocks. `SOAK_MALLOC_XML=FILE`
 * keeps every reading's malloc_info (samples.ts) to see which arena moved;
 * `OP_GROWTH_NO_CLOSE=1` exits with everything open, so that heaptrack's "leaked" is what is live.
 *
 * No fault is injected, so a failed operation is a finding: it prints one JSON line (the
 * operation, seconds, error, load, whether the peer process had exited and by which signal) and
 * exits 1; the peer reports its own endpoint's failure on stderr (peer.ts, SOAK_PEER_REPORT).
 *
 *   node --expose-gc --import tsx scripts/soak/op-growth.ts <kind> <size> [count=3000] [every=250] [mode]
 *
 * kind: tag | stream | am | multi | put | get; mode: a progress mode (default: the runtime's).
 */
import { spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { loadavg } from "node:os";
import process from "node:process";
import { fileURLToPath } from "node:url";
import { Worker, type Endpoint, type ProgressMode, type RemoteKey } from "../../src/index.ts";
import { applyAllocator, tcacheOff } from "./allocator.ts";
import { soakScript } from "./files.ts";
import { type Control, dataTag, decode, encode, fromHex, payload, REGION, TAG, toHex, type Intro } from "./protocol.ts";
import { leastOfThree, round } from "./samples.ts";
import { posted, randomSize } from "./traffic.ts";
import { seededRandom } from "./random.ts";
import { fitLine } from "./regression.ts";

const [kind = "tag", sizeText = "1048576", countText = "3000", everyText = "250", mode] = process.argv.slice(2);
/** "random": the soak's size mix (traffic.ts randomSize, 0 B-16 MiB, most small), seeded. */
const randomSizes = sizeText === "random";
const size = randomSizes ? 16 * 2 ** 20 : Number(sizeText);
const count = Number(countText);
const every = Number(everyText);
const KINDS = ["tag", "stream", "am", "multi", "put", "get"];
if (!KINDS.includes(kind) || !(size >= 0) || !(count > 0) || !(every > 0)) throw new Error(`usage: op-growth.ts <${KINDS.join("|")}> <size> [count] [every] [mode]`);

applyAllocator("fixed"); // as the soak: thresholds fixed, the same for the peer
const root = fileURLToPath(new URL("../../", import.meta.url));
const secret = new Uint8Array(randomBytes(32));
const started = Date.now();
const worker = await Worker.create({ errorHandling: "peer", ...(mode ? { progressMode: mode as ProgressMode } : {}) });
let resolveConn!: (c: { ep: Endpoint; intro: Intro }) => void;
const connected = new Promise<{ ep: Endpoint; intro: Intro }>((r) => (resolveConn = r));
const listener = await worker.listen({
  host: "127.0.0.1",
  port: 0,
  auth: { secret },
  onError: () => {},
  onConnection: (ep) =>
    void (async () => {
      const buf = new Uint8Array(4096);
      const { length } = await ep.recv(buf, TAG.INTRO);
      resolveConn({ ep, intro: decode<Intro>(buf.subarray(0, length)) });
    })(),
});
const script = soakScript("peer");
const child = spawn(process.execPath, [...(script.endsWith(".ts") ? ["--import", "tsx"] : []), script, String(listener.port), "0", toHex(secret)], {
  cwd: root,
  env: { ...process.env, SOAK_PEER_REPORT: "1" }, // the peer says when its endpoint fails (peer.ts)
  stdio: ["pipe", "ignore", "inherit"],
});
let peerExit: { code: number | null; signal: string | null; atSeconds: number } | undefined;
child.on("exit", (code, signal) => (peerExit = { code, signal, atSeconds: round((Date.now() - started) / 1000) }));
const { ep, intro } = await connected;
const rkey: RemoteKey = await ep.unpackRkey(fromHex(intro.rkey));
const control = (c: Control) => ep.send(encode(c), TAG.CONTROL);
const full = payload(size, 1);
const rand = seededRandom(64);

async function op(id: number): Promise<void> {
  const size = randomSizes ? randomSize(rand) : full.length;
  const out = full.subarray(0, size);
  const tag = dataTag(id);
  switch (kind) {
    case "tag": {
      const back = new Uint8Array(size);
      const echo = posted(ep.recv(back, tag + 1));
      await Promise.all([control({ op: "tag", id, sizes: [size] }), ep.send(out, tag), echo]);
      return;
    }
    case "stream": {
      const back = new Uint8Array(size);
      const echo = posted(ep.streamRecv(back));
      await Promise.all([control({ op: "stream", id, sizes: [size] }), ep.streamSend(out), echo]);
      return;
    }
    case "am": {
      const echo = posted(ep.amRecv());
      await Promise.all([control({ op: "am", id, sizes: [size] }), ep.amSend(out, { header: out.subarray(0, 16) }), echo]);
      return;
    }
    case "multi": {
      const echo = posted(ep.recvMulti(tag + 1));
      await Promise.all([control({ op: "multi", id, sizes: [size, size] }), ep.sendMulti([out, out], tag), echo]);
      return;
    }
    case "put":
      await ep.put(out, intro.address, rkey);
      await ep.flush();
      return;
    case "get": {
      const back = new Uint8Array(Math.min(size, REGION));
      await ep.get(back, intro.address, rkey);
      await ep.flush();
      return;
    }
  }
}

const readings: { ops: number; mallocInUseMiB: number; rssMiB: number; jsHeapMiB: number }[] = [];
for (let id = 1; id <= count; id++) {
  try {
    await op(id);
  } catch (e) {
    // No fault is injected here, so any failure is a finding: say when, under what load, and
    // whether the peer process was still there (peer.ts reports its own endpoint's failure).
    await new Promise((r) => setTimeout(r, 500)); // the peer's exit, if it is going, arrives
    const error = e instanceof Error ? { code: (e as { code?: string }).code, message: e.message } : { message: String(e) };
    console.log(JSON.stringify({ kind, size: sizeText, mode: worker.progressMode, failedAt: id, seconds: round((Date.now() - started) / 1000), error, peerExit: peerExit ?? "running", loadavg: loadavg().map(round) }));
    child.kill("SIGKILL");
    process.exit(1);
  }
  if (id % every === 0) {
    const s = await leastOfThree(started, id, () => new Promise((r) => setTimeout(r, 50)));
    const r = { ops: id, mallocInUseMiB: round(s.mallocInUseMiB), rssMiB: round(s.trimmedRssMiB), jsHeapMiB: round(s.heapMiB) };
    readings.push(r);
    console.error(JSON.stringify(r));
  }
}
// The line from the second reading on (the first holds the warm-up's one-off allocations).
const tail = readings.slice(1);
const fit = (k: "mallocInUseMiB" | "rssMiB" | "jsHeapMiB") => fitLine(tail.map((r) => [r.ops, r[k]] as [number, number]));
const perOp = (k: "mallocInUseMiB" | "rssMiB" | "jsHeapMiB") => {
  const f = fit(k);
  return f && { bytesPerOp: round(f.slope * 2 ** 20), adjustedStdErr: round(f.adjustedStdErr * 2 ** 20), low: round(f.low * 2 ** 20), high: round(f.high * 2 ** 20) };
};
console.log(JSON.stringify({ kind, size: randomSizes ? "random" : size, count, mode: worker.progressMode, tcacheOff: tcacheOff(), seconds: round((Date.now() - started) / 1000), malloc: perOp("mallocInUseMiB"), rss: perOp("rssMiB"), jsHeap: perOp("jsHeapMiB") }));
// OP_GROWTH_NO_CLOSE=1: exit with everything open, so that heaptrack reports what is live now as "leaked".
if (process.env.OP_GROWTH_NO_CLOSE === "1") {
  child.kill("SIGKILL");
  process.exit(0);
}
await control({ op: "stop", id: 0, sizes: [] });
child.stdin?.end();
await ep.close({ force: true }).catch(() => {});
await listener.close();
await worker.close();
process.exit(0);
