/**
 * Where each completion record goes on the application thread: a request's to the request path
 * (its Promise), a connection request to its listener, an endpoint error to its endpoint, an
 * active message to the hub (with its sender's endpoint, if it is one of ours).
 */
import { CompletionKind, DONE } from "../engine/records.ts";
import type { Ring } from "../engine/ring.ts";
import type { ActiveMessageHub } from "./active-message-hub.ts";
import type { EndpointTable } from "./endpoint-table.ts";
import type { ListenerTable } from "./listener-table.ts";
import type { RequestPath } from "./request-path.ts";
import { enter, leave, Phase, PROFILING } from "../profile.ts";

export interface CompletionTargets {
  readonly path: RequestPath;
  readonly listeners: ListenerTable;
  readonly endpoints: EndpointTable;
  readonly am: ActiveMessageHub;
}

/** Route the completion record at word index `w` of `ring`. */
export function routeCompletion(t: CompletionTargets, ring: Ring, w: number): void {
  if (!PROFILING) return route(t, ring, w);
  enter(Phase.Deliver);
  try {
    route(t, ring, w);
  } finally {
    leave();
  }
}

function route(t: CompletionTargets, ring: Ring, w: number): void {
  const u32 = ring.u32;
  const kind = u32[w + DONE.kind];
  const id = u32[w + DONE.id]!;
  const status = ring.i32[w + DONE.status]!;
  const value = ring.f64[(w >> 1) + DONE.value]!;
  const tagLo = u32[w + DONE.tagLo]!;
  const tagHi = u32[w + DONE.tagHi]!;
  if (kind === CompletionKind.Request) t.path.complete(id, status, value, tagLo, tagHi);
  else if (kind === CompletionKind.ConnectionRequest) t.listeners.get(id)?.onConnectionRequest(value, tagLo, tagHi);
  else if (kind === CompletionKind.EndpointError) t.endpoints.get(id)?.fail(status);
  else if (kind === CompletionKind.AmMessage) t.am.arrived(id, t.endpoints.get(id), status, t.path.engine.takePayload(value), tagLo);
  else if (kind === CompletionKind.AmBatch) t.am.arrivedPacked(t.path.engine.takePayload(value), t.endpoints);
}
