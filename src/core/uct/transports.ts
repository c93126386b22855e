/**
 * Every component, memory domain and transport of this host with its attributes, the way
 * `ucx_info -d` finds them: each transport's attributes come from opening its interface on a
 * scratch worker for a moment (UCT has no other way to tell them).
 */
import { UctComponent } from "./component.ts";
import { UctInterface } from "./interface.ts";
import type { UctMemoryDomainAttributes } from "./memory-domain.ts";
import type { UctTransportAttributes } from "./transport-attributes.ts";
import { UctWorker } from "./worker.ts";

export interface UctTransportInfo {
  readonly component: string;
  readonly memoryDomain: string;
  readonly memoryDomainAttributes: UctMemoryDomainAttributes;
  readonly transport: string;
  readonly device: string;
  readonly deviceType: string;
  /** Undefined when the interface could not be opened here (`error` says why). */
  readonly attributes?: UctTransportAttributes;
  readonly error?: string;
}

export function listUctTransports(): UctTransportInfo[] {
  const found: UctTransportInfo[] = [];
  const worker = UctWorker.create();
  try {
    for (const component of UctComponent.list()) {
      for (const mdName of component.memoryDomainNames) {
        let md;
        try {
          md = component.openMemoryDomain(mdName);
        } catch {
          continue; // a memory domain that cannot open here (no device, no driver) has no transports
        }
        try {
          for (const r of md.transportResources()) {
            const base = { component: component.name, memoryDomain: mdName, memoryDomainAttributes: md.attributes, ...r };
            try {
              const iface = UctInterface.open(worker, md, r.transport, r.device);
              found.push({ ...base, attributes: iface.attributes });
              iface.close();
            } catch (e) {
              found.push({ ...base, error: e instanceof Error ? e.message : String(e) });
            }
          }
        } finally {
          md.close();
        }
      }
    }
  } finally {
    worker.close();
  }
  return found;
}
