/**
 * A worker's close, in the order UCX and the application need: sends that resolved early are
 * given time to reach the peer, listeners and endpoints stop, views of UCX-allocated memory are
 * detached, the engine stops (UCX is freed), and only then are waiting receives and requests
 * failed and the tables emptied.
 */
import { closedError } from "../errors.ts";
import type { SendPath } from "../proto/send-path.ts";
import type { CompletionTargets } from "./completion-routing.ts";
import type { RegisteredMemory } from "./registered-memory.ts";

/** How long `close()` waits for sends that resolved early to reach the peer. */
const EARLY_SEND_DRAIN_MS = 2000;
const UCS_ERR_CANCELED = -16;

export async function shutDown(
  parts: CompletionTargets & { readonly memory: RegisteredMemory; readonly sendPath: SendPath },
  settled: <T>(p: Promise<T>) => Promise<T>,
): Promise<void> {
  const { path, listeners, endpoints, am, memory, sendPath } = parts;
  // Sends that resolved early are owed to the peer: let them finish (bounded: a dead peer with
  // error handling "none" may never complete them), then cancel the rest.
  if (sendPath.unfinished > 0) {
    let timer: ReturnType<typeof setTimeout> | undefined;
    const timeout = new Promise<void>((resolve) => (timer = setTimeout(resolve, EARLY_SEND_DRAIN_MS)));
    await settled(Promise.race([sendPath.whenDrained(), timeout]));
    clearTimeout(timer);
  }
  await listeners.markAllClosed();
  for (const ep of endpoints.values()) ep.markClosed();
  // UCX frees the memory it allocated when the engine stops: no view may reach it after.
  memory.detachAll();
  await path.engine.stop();
  path.markStopped();
  am.closeAll(closedError("worker"));
  path.requests.abandonAll(UCS_ERR_CANCELED);
  listeners.clear();
  endpoints.clear();
}
