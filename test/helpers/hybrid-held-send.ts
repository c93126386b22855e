/**
 * A hybrid-mode process whose only outstanding work is sends UCX has not finished, taken by the
 * direct path (engine/direct-tags.ts: no entry in the request table): it must stay alive until
 * they end. Run by test/core/hybrid-keepalive.test.ts:
 *   <runtime> test/helpers/hybrid-held-send.ts <port> <peer pid>
 * Connects to the "silent" peer at <port> (test/helpers/peer.ts: it stops progressing after its
 * first second), sends 192-byte messages (zcopy forced: such a send's Promise waits for UCX)
 * until some stay in flight behind the full socket, then awaits them with nothing else
 * outstanding. Two seconds later an unref'd timer (it keeps nothing alive) kills the peer, so
 * the sends fail; it prints "settled: ..." once they have. A process that did not hold itself
 * alive for the direct sends ended before, with nothing printed (the perf server, 2026-12-07).
 */
import process from "node:process";
import { Worker, type UcxError } from "../../src/index.ts";

const [portText, pidText] = process.argv.slice(2);
setTimeout(() => process.exit(3), 60_000).unref?.();

const worker = await Worker.create({ progressMode: "hybrid", errorHandling: "peer", protocols: { force: { "tag-send": "zcopy" } } });
const ep = await worker.connect({ host: "127.0.0.1", port: Number(portText) });
await new Promise((r) => setTimeout(r, 1500)); // the peer has stopped progressing by now
const message = new Uint8Array(192);
const sends: Promise<void>[] = [];
let done = 0;
for (let i = 0; i < 200_000; i++) sends.push(ep.send(message, 5).then(() => void done++));
const direct = (worker as unknown as { directTags(): { count: number } | undefined }).directTags();
process.stdout.write(`posted ${sends.length}, ${direct?.count ?? "?"} direct in flight\n`);
const unref = (t: ReturnType<typeof setTimeout>) => (typeof t === "number" ? (globalThis as { Deno?: { unrefTimer(id: number): void } }).Deno?.unrefTimer(t) : t.unref?.());
unref(setTimeout(() => process.kill(Number(pidText), "SIGKILL"), 2000));
const outcome = await Promise.all(sends).then(
  () => "resolved",
  (e: UcxError) => `rejected ${e.code}`,
);
process.stdout.write(`settled: ${outcome} (${done} sent)\n`);
await worker.close().catch(() => {});
process.exit(0);
