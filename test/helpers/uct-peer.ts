/**
 * The other process of the two-process UCT tests. Usage:
 *   <runtime> test/helpers/uct-peer.ts COMPONENT MEMORY_DOMAIN TRANSPORT DEVICE iface|ep
 *
 * It opens the interface, fills 64 KiB of remote-access memory with pattern(65536, 77), and
 * prints one JSON line: its addresses (hex), its endpoint address (ep mode), the packed key
 * and address of that memory. Then it reads JSON commands on stdin, one a line, and answers
 * each with one JSON line on stdout:
 *   {"cmd":"connect", deviceAddress, interfaceAddress, endpointAddress?}  -> {"ok":true}
 *   {"cmd":"read", offset, length}                                        -> {"hex":...}
 *   {"cmd":"flood", total}                                                -> {"received","once"}
 *   {"cmd":"quit"}                                                        -> exits 0
 * While waiting it progresses its worker, and answers active messages: ids 1..3 are echoed
 * back with am_bcopy on id + 8 (a message too big for a bcopy is answered with its length and
 * FNV-1a hash), id 5 counts flood messages by the sequence number in their first 4 bytes.
 */
import process from "node:process";
import { createInterface } from "node:readline";
import { UCS_ERR_NO_RESOURCE, UCS_OK, UctComponent, UctInterface, UctWorker, type UctEndpoint } from "../../src/core/uct/index.ts";
import { fnv1a, pattern } from "./uct.ts";

const [component, mdName, transport, device, mode] = process.argv.slice(2) as [string, string, string, string, string];
const hex = (b: Uint8Array) => Array.from(b, (x) => x.toString(16).padStart(2, "0")).join("");
const unhex = (s: string) => new Uint8Array((s.match(/../g) ?? []).map((x) => parseInt(x, 16)));
const say = (o: unknown) => process.stdout.write(JSON.stringify(o) + "\n");

const c = UctComponent.find(component);
const md = c.openMemoryDomain(mdName);
const worker = UctWorker.create();
const iface = UctInterface.open(worker, md, transport, device);
const mem = iface.memoryForRemoteAccess(65536);
mem.bytes.set(pattern(65536, 77));
let ep: UctEndpoint | undefined = mode === "ep" ? iface.createEndpoint() : undefined;

const floodSeen = new Map<number, number>();
const hasAm = iface.attributes.capabilities.some((x) => x.startsWith("am_"));
if (hasAm) {
  for (const id of [1, 2, 3]) {
    iface.setAmHandler(id, (m) => {
      const data = m.data;
      const reply =
        data.length <= iface.attributes.am.maxBcopy ? data.slice() : new Uint8Array(new Uint32Array([data.length, fnv1a(data)]).buffer);
      if (ep!.amBcopy(id + 8, reply) === UCS_ERR_NO_RESOURCE) {
        ep!.pendingAdd(() => (ep!.amBcopy(id + 8, reply) === UCS_ERR_NO_RESOURCE ? UCS_ERR_NO_RESOURCE : UCS_OK));
      }
    });
  }
  iface.setAmHandler(5, (m) => {
    const seq = new DataView(m.data.buffer, m.data.byteOffset).getUint32(0, true);
    floodSeen.set(seq, (floodSeen.get(seq) ?? 0) + 1);
  });
}

const a = iface.address();
say({
  deviceAddress: hex(a.deviceAddress),
  interfaceAddress: hex(a.interfaceAddress),
  endpointAddress: ep ? hex(ep.address()) : "",
  rkey: hex(mem.packRemoteKey()),
  memAddress: mem.address,
});

let quit = false;
const lines = createInterface({ input: process.stdin });
lines.on("line", (line) => {
  const cmd = JSON.parse(line);
  if (cmd.cmd === "connect") {
    if (mode === "ep") ep!.connectToEndpoint(unhex(cmd.deviceAddress), unhex(cmd.endpointAddress));
    else ep = iface.connect({ deviceAddress: unhex(cmd.deviceAddress), interfaceAddress: unhex(cmd.interfaceAddress) });
    say({ ok: true });
  } else if (cmd.cmd === "read") {
    say({ hex: hex(mem.bytes.subarray(cmd.offset, cmd.offset + cmd.length)) });
  } else if (cmd.cmd === "flood") {
    let once = 0;
    for (let i = 0; i < cmd.total; i++) if (floodSeen.get(i) === 1) once++;
    say({ received: [...floodSeen.values()].reduce((x, y) => x + y, 0), once });
  } else if (cmd.cmd === "quit") quit = true;
});

await worker.progressUntil(() => quit, { timeoutMs: 120_000, what: "quit" });
lines.close();
mem.release();
worker.close();
md.close();
process.exit(0);
