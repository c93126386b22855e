/**
 * The other process of the two-process UCT tests, one for all of them. Usage:
 *   <runtime> test/helpers/uct-peer.ts
 *
 * For every transport the tests use (uct.ts: uctTargets, minus self) and every connect mode its
 * flags allow, it opens an interface (one worker for all), fills 64 KiB of remote-access memory
 * with pattern(65536, 77), and prints one JSON line: per "transport/device/mode" key its
 * addresses (hex), its endpoint address (ep mode), the packed key and address of that memory.
 * Then it reads JSON commands on stdin, one a line, each answered with one JSON line:
 *   {"cmd":"connect", key, deviceAddress, interfaceAddress, endpointAddress}  -> {"ok":true}
 *   {"cmd":"read", key, offset, length}                                        -> {"hex":...}
 *   {"cmd":"flood", key, total}                                                -> {"received","once"}
 *   {"cmd":"quit"}                                                             -> exits 0
 * While waiting it progresses its worker and answers active messages: ids 1..3 are echoed back
 * with am_bcopy on id + 8 (a message too big for a bcopy is answered with its length and
 * FNV-1a hash), id 5 counts flood messages by the sequence number in their first 4 bytes.
 */
import process from "node:process";
import { createInterface } from "node:readline";
import { UCS_ERR_NO_RESOURCE, UCS_OK, UctComponent, UctInterface, UctWorker, type UctEndpoint, type UctMemory, type UctMemoryDomain } from "../../src/core/uct/index.ts";
import { fnv1a, pattern, uctTargets } from "./uct.ts";

const hex = (b: Uint8Array) => Array.from(b, (x) => x.toString(16).padStart(2, "0")).join("");
const unhex = (s: string) => new Uint8Array((s.match(/../g) ?? []).map((x) => parseInt(x, 16)));
const say = (o: unknown) => process.stdout.write(JSON.stringify(o) + "\n");

interface Served {
  readonly iface: UctInterface;
  readonly mem: UctMemory;
  ep: UctEndpoint | undefined;
  readonly floodSeen: Map<number, number>;
}

const worker = UctWorker.create();
const domains: UctMemoryDomain[] = [];
const served = new Map<string, Served>();
const hello: Record<string, unknown> = {};

for (const t of uctTargets()) {
  if (t.transport === "self") continue; // reaches only its own interface
  const md = UctComponent.find(t.component).openMemoryDomain(t.memoryDomain);
  domains.push(md);
  const probe = UctInterface.open(worker, md, t.transport, t.device);
  const modes = [...(probe.attributes.connectToInterface ? ["iface"] : []), ...(probe.attributes.connectToEndpoint ? ["ep"] : [])];
  probe.close();
  for (const mode of modes) {
    const iface = UctInterface.open(worker, md, t.transport, t.device);
    const mem = iface.memoryForRemoteAccess(65536);
    mem.bytes.set(pattern(65536, 77));
    const s: Served = { iface, mem, ep: mode === "ep" ? iface.createEndpoint() : undefined, floodSeen: new Map() };
    if (iface.attributes.capabilities.some((x) => x.startsWith("am_"))) {
      for (const id of [1, 2, 3]) {
        iface.setAmHandler(id, (m) => {
          const data = m.data;
          const reply = data.length <= iface.attributes.am.maxBcopy ? data.slice() : new Uint8Array(new Uint32Array([data.length, fnv1a(data)]).buffer);
          if (s.ep!.amBcopy(id + 8, reply) === UCS_ERR_NO_RESOURCE) {
            s.ep!.pendingAdd(() => (s.ep!.amBcopy(id + 8, reply) === UCS_ERR_NO_RESOURCE ? UCS_ERR_NO_RESOURCE : UCS_OK));
          }
        });
      }
      iface.setAmHandler(5, (m) => {
        const seq = new DataView(m.data.buffer, m.data.byteOffset).getUint32(0, true);
        s.floodSeen.set(seq, (s.floodSeen.get(seq) ?? 0) + 1);
      });
    }
    const key = `${t.transport}/${t.device}/${mode}`;
    served.set(key, s);
    const a = iface.address();
    hello[key] = {
      deviceAddress: hex(a.deviceAddress),
      interfaceAddress: hex(a.interfaceAddress),
      endpointAddress: s.ep ? hex(s.ep.address()) : "",
      rkey: hex(mem.packRemoteKey()),
      memAddress: mem.address,
    };
  }
}
say(hello);

let quit = false;
const lines = createInterface({ input: process.stdin });
lines.on("line", (line) => {
  const cmd = JSON.parse(line);
  if (cmd.cmd === "quit") {
    quit = true;
    return;
  }
  const s = served.get(cmd.key)!;
  if (cmd.cmd === "connect") {
    if (s.ep) s.ep.connectToEndpoint(unhex(cmd.deviceAddress), unhex(cmd.endpointAddress));
    else s.ep = s.iface.connect({ deviceAddress: unhex(cmd.deviceAddress), interfaceAddress: unhex(cmd.interfaceAddress) });
    say({ ok: true });
  } else if (cmd.cmd === "read") {
    say({ hex: hex(s.mem.bytes.subarray(cmd.offset, cmd.offset + cmd.length)) });
  } else if (cmd.cmd === "flood") {
    let once = 0;
    for (let i = 0; i < cmd.total; i++) if (s.floodSeen.get(i) === 1) once++;
    say({ received: [...s.floodSeen.values()].reduce((x, y) => x + y, 0), once });
  }
});
lines.on("close", () => (quit = true));

await worker.progressUntil(() => quit, { timeoutMs: 300_000, what: "quit" });
lines.close();
for (const s of served.values()) s.mem.release();
worker.close();
for (const md of domains) md.close();
process.exit(0);
