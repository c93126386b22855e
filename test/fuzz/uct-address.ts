/**
 * UCT interface addresses (src/core/uct/interface.ts connect, interface-address.ts): what a peer
 * sends so that `iface.connect()` reaches it. For each transport this host has (self, posix,
 * sysv, cma, tcp on loopback), the real address of a second interface, mutated: bits flipped in
 * the device or interface address, either one replaced by random bytes, posix's segment attach
 * flags rewritten, cut or extended. Each connect ends in a UcxError, or an endpoint that is used
 * once (an AM short, whatever its status) and destroyed: never a crash (posix aborted the process
 * on a flipped flag bit before the check in interface-address.ts). Afterwards the real address
 * still carries a message.
 */
import { UcxError } from "../../src/index.ts";
import { uctPair, uctTargets } from "../helpers/uct.ts";
import { count, type FuzzContext, type FuzzReport, hex } from "./context.ts";

export async function fuzzUctAddresses(ctx: FuzzContext): Promise<FuzzReport> {
  const outcomes: Record<string, number> = {};
  const targets = uctTargets();
  let inputs = 0;
  while (ctx.going(inputs)) {
    for (const t of targets) {
      const pair = uctPair(t);
      try {
        const real = pair.b.address();
        const hasAm = pair.a.attributes.capabilities.some((c) => c.startsWith("am_"));
        // The messages that reach b land here: without a handler UCX prints a warning and a
        // backtrace for each (~250 KB on stdout per run, which once buried this module's report).
        if (hasAm) pair.b.setAmHandler(1, () => {});
        for (let k = 0; k < 10; k++, inputs++) {
          let dev = real.deviceAddress.slice();
          let ifa = real.interfaceAddress.slice();
          const how = k % 6;
          const field = ifa.length > 0 && ctx.int(2) === 0 ? "iface" : "device";
          const target = field === "iface" ? ifa : dev;
          if (how === 0 && target.length > 0) for (let f = 1 + ctx.int(3); f > 0; f--) target[ctx.int(target.length)]! ^= 1 << ctx.int(8);
          else if (how === 1) for (let i = 0; i < target.length; i++) target[i] = ctx.int(256);
          else if (how === 2 && ifa.length >= 8) ifa[7] = (ifa[7]! & 0x0f) | ctx.pick([0x00, 0x20, 0x40, 0x80, 0x10, ctx.int(16) << 4]); // posix: its attach flags
          else if (how === 3) {
            const cut = target.subarray(0, ctx.int(target.length + 1));
            field === "iface" ? (ifa = cut) : (dev = cut);
          } else if (how === 4) {
            const longer = Uint8Array.from([...target, ...ctx.bytes(1 + ctx.int(8))]);
            field === "iface" ? (ifa = longer) : (dev = longer);
          }
          // how === 5: the real address (a second endpoint to the same peer).
          try {
            const ep = pair.a.connect({ deviceAddress: dev, interfaceAddress: ifa });
            let status: string;
            try {
              status = String(ep.amShort(1, 0n, Uint8Array.of(1, 2, 3)));
            } catch (e) {
              if (!(e instanceof UcxError)) throw e;
              status = e.code;
            }
            pair.worker.progress();
            ep.destroy();
            count(outcomes, `${t.transport}: connected, sent ${status}`);
          } catch (e) {
            if (!(e instanceof UcxError)) throw new Error(`${t.transport} connect threw ${String(e)}; seed ${ctx.seed}: ${hex(dev)} ${hex(ifa)}`);
            count(outcomes, `${t.transport}: ${e.code}`);
          }
        }
        // The real address still works: a message from a to b arrives (cma, which has no active
        // messages, still connects).
        const ep = pair.a.connect(real);
        if (!hasAm) {
          ep.destroy();
          continue;
        }
        let got: Uint8Array | undefined;
        pair.b.setAmHandler(2, (m) => void (got = m.data.slice(8)));
        for (let tries = 0; got === undefined && tries < 100_000; tries++) {
          if (tries % 100 === 0) ep.amShort(2, 0n, Uint8Array.of(7, 8, 9));
          pair.worker.progress();
        }
        if (got?.join() !== "7,8,9") throw new Error(`${t.transport}: the real address carried no message after the fuzz (seed ${ctx.seed})`);
        ep.destroy();
      } finally {
        pair.close();
      }
    }
  }
  return { inputs, outcomes };
}
