/**
 * UCT test helpers: the transports this host has (as `uct` reports them), and two interfaces of
 * one transport in one process, connected the way the transport's flags say.
 */
import {
  UctComponent,
  UctInterface,
  UctWorker,
  type UctEndpoint,
  type UctMemoryDomain,
} from "../../src/core/uct/index.ts";

export interface UctTarget {
  readonly component: string;
  readonly memoryDomain: string;
  readonly transport: string;
  readonly device: string;
}

/** Transports the tests run over, when this host has them: tcp only on loopback. */
export function uctTargets(): UctTarget[] {
  const out: UctTarget[] = [];
  for (const c of UctComponent.list()) {
    for (const mdName of c.memoryDomainNames) {
      let md: UctMemoryDomain;
      try {
        md = c.openMemoryDomain(mdName);
      } catch {
        continue;
      }
      for (const r of md.transportResources()) {
        if (r.transport === "tcp" && r.device !== "lo") continue;
        if (!["self", "posix", "sysv", "cma", "tcp"].includes(r.transport)) continue;
        out.push({ component: c.name, memoryDomain: mdName, transport: r.transport, device: r.device });
      }
      md.close();
    }
  }
  return out;
}

export interface UctPair {
  readonly worker: UctWorker;
  readonly md: UctMemoryDomain;
  readonly a: UctInterface;
  readonly b: UctInterface;
  /** a -> b and b -> a. */
  readonly ab: UctEndpoint;
  readonly ba: UctEndpoint;
  readonly component: UctComponent;
  close(): void;
}

/**
 * Two interfaces on one worker (self: one interface, which only reaches itself). `mode` picks
 * connect-to-iface or connect-to-ep (where the transport has both).
 */
export function uctPair(t: UctTarget, mode: "iface" | "ep" = "iface"): UctPair {
  const component = UctComponent.find(t.component);
  const md = component.openMemoryDomain(t.memoryDomain);
  const worker = UctWorker.create();
  const a = UctInterface.open(worker, md, t.transport, t.device);
  const b = t.transport === "self" ? a : UctInterface.open(worker, md, t.transport, t.device);
  let ab: UctEndpoint;
  let ba: UctEndpoint;
  if (mode === "ep") {
    ab = a.createEndpoint();
    ba = b.createEndpoint();
    ab.connectToEndpoint(b.address().deviceAddress, ba.address());
    ba.connectToEndpoint(a.address().deviceAddress, ab.address());
  } else {
    ab = a.connect(b.address());
    ba = b.connect(a.address());
  }
  return {
    worker,
    md,
    a,
    b,
    ab,
    ba,
    component,
    close() {
      worker.close();
      md.close();
    },
  };
}

/** `n` bytes of a pattern that depends on `seed`. */
export function pattern(n: number, seed: number): Uint8Array {
  const out = new Uint8Array(n);
  for (let i = 0; i < n; i++) out[i] = (i * 31 + seed * 7 + (i >> 8)) & 0xff;
  return out;
}

export function same(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

/** FNV-1a, 32 bits: the peer's short answer for a message too big to echo. */
export function fnv1a(b: Uint8Array): number {
  let h = 0x811c9dc5;
  for (const x of b) h = Math.imul(h ^ x, 0x01000193) >>> 0;
  return h;
}
