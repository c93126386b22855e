/**
 * A soak peer process (main.ts spawns 1 to 3): maps the memory the coordinator puts, gets and
 * does atomics into, connects to the coordinator's listener, introduces itself, then takes part
 * in each operation the coordinator announces, echoing what it received. When its endpoint
 * fails (the coordinator closed it: an injected fault) it connects again. It exits when its stdin
 * closes (the coordinator ended or died) or when it cannot reach the coordinator any more.
 *
 *   peer.ts <port> <slot> <secret-hex>
 */
import process from "node:process";
import { Worker, type Endpoint } from "../../src/index.ts";
import { type Control, dataTag, decode, encode, fromHex, GPU_KINDS, type GpuKind, MEMORY, TAG, toHex, type Intro } from "./protocol.ts";
import { peerAct } from "./gpu.ts";

const [portText = "0", slotText = "0", secretHex = ""] = process.argv.slice(2);
const port = Number(portText);
const slot = Number(slotText);
const auth = { secret: fromHex(secretHex) };

/**
 * SOAK_PEER_REPORT=1 (op-growth.ts sets it): say on stderr when this peer's endpoint fails and
 * when it exits, so that a failure without a fault shows which side saw it first. The soak
 * leaves it off: there every injected fault would print a line.
 */
const reporting = process.env.SOAK_PEER_REPORT === "1";
const born = Date.now();
function report(what: string): void {
  if (reporting) process.stderr.write(`peer ${slot} (pid ${process.pid}, ${((Date.now() - born) / 1000).toFixed(1)} s): ${what}\n`);
}
const describe = (e: unknown) => (e instanceof Error ? `${(e as { code?: string }).code ?? e.name}: ${e.message}` : String(e));

const stdinGone = () => {
  report("stdin closed (the coordinator ended or died): exiting");
  process.exit(0);
};
process.stdin.on("close", stdinGone);
process.stdin.on("end", stdinGone);
process.stdin.resume();

const worker = await Worker.create({ errorHandling: "peer" });
const mem = await worker.memMap(MEMORY);
const packed = await mem.packRkey();
mem.bytes.fill(0);

async function serve(ep: Endpoint): Promise<void> {
  const intro: Intro = { slot, pid: process.pid, address: mem.address, length: MEMORY, rkey: toHex(packed) };
  await ep.send(encode(intro), TAG.INTRO);
  const control = new Uint8Array(4096);
  for (;;) {
    const { length } = await ep.recv(control, TAG.CONTROL);
    const c = decode<Control>(control.subarray(0, length));
    if (c.op === "stop") return;
    // Each operation runs on its own; the coordinator keeps stream and AM ones one at a time.
    void act(ep, c).catch(() => {}); // its failure is the endpoint's, seen by the loop's next recv
  }
}

async function act(ep: Endpoint, c: Control): Promise<void> {
  const tag = dataTag(c.id);
  if ((GPU_KINDS as readonly string[]).includes(c.op)) return peerAct(ep, c as Control & { op: GpuKind }); // --gpu: gpu.ts
  if (c.op === "tag" && c.window) {
    const bufs = c.sizes.map((n) => new Uint8Array(n));
    await ep.recvMany(bufs, tag);
    await ep.sendMany(bufs, tag + 1);
  } else if (c.op === "tag") {
    const buf = new Uint8Array(c.sizes[0]!);
    await ep.recv(buf, tag);
    await ep.send(buf, tag + 1);
  } else if (c.op === "stream") {
    const buf = new Uint8Array(c.sizes[0]!);
    await ep.streamRecv(buf);
    await ep.streamSend(buf);
  } else if (c.op === "multi") {
    const frames = await ep.recvMulti(tag);
    await ep.sendMulti(frames, tag + 1);
  } else if (c.op === "am") {
    const m = await ep.amRecv();
    await ep.amSend(m.data, { header: m.header });
  }
}

for (let failures = 0; failures < 50; ) {
  let ep: Endpoint;
  try {
    ep = await worker.connect({ host: "127.0.0.1", port }, { auth });
    failures = 0;
  } catch (e) {
    failures++;
    report(`connect failed (${failures}): ${describe(e)}`);
    await new Promise((r) => setTimeout(r, 100));
    continue;
  }
  try {
    await serve(ep);
    break; // "stop"
  } catch (e) {
    // The endpoint failed (closed by the coordinator, an injected fault): connect again.
    report(`endpoint failed: ${describe(e)}; connecting again`);
    await ep.close({ force: true }).catch(() => {});
  }
}
report("stopping");
await worker.close();
process.exit(0);
