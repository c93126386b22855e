/**
 * Messages a peer sent to an endpoint after this side closed it land nowhere: UCX's tag matching
 * is worker-wide, no receive will ever name the closed endpoint's receive scope (scopes.ts), and
 * UCX keeps each one in its unexpected queue until the worker closes (a 64 KiB tcp segment
 * apiece; 28-38 after a 10-minute faulted soak, growing with every close; and one would be taken
 * by the endpoint that gets the scope 65,535 allocations later). So when an endpoint made
 * through the hello is gone, the messages of its scope are received into scratch memory and
 * dropped: at once, and once more after DRAIN_AGAIN_MS for those still on their way then.
 */
import { FULL_MASK, wholeScope, type Tag } from "../tag.ts";
import type { RecvResult } from "../receive-options.ts";

/** The second look: a peer's sends in flight at the close arrive within milliseconds. */
export const DRAIN_AGAIN_MS = 1000;

export interface ScopeDrainHost {
  readonly closed: boolean;
  probe(tag: Tag, mask: Tag): Promise<RecvResult | null>;
  recv(buffer: Uint8Array, tag: Tag, mask: Tag): Promise<unknown>;
  settled<T>(p: Promise<T>): Promise<T>;
}

/** Receives and drops every queued message of `scope`; resolves with how many (never rejects). */
export async function drainScope(host: ScopeDrainHost, scope: number): Promise<number> {
  const { tag, mask } = wholeScope(scope);
  let dropped = 0;
  try {
    for (;;) {
      if (host.closed) return dropped;
      const found = await host.settled(host.probe(tag, mask));
      if (!found) return dropped;
      await host.settled(host.recv(new Uint8Array(found.length), found.tag, FULL_MASK));
      dropped++;
    }
  } catch {
    return dropped; // the worker closed meanwhile: UCX drops its queue itself
  }
}

/** drainScope now and again after DRAIN_AGAIN_MS (unref'd: it keeps no process alive). */
export function drainScopeTwice(host: ScopeDrainHost, scope: number): void {
  void drainScope(host, scope).then(() => {
    const timer = setTimeout(() => void drainScope(host, scope), DRAIN_AGAIN_MS);
    (timer as { unref?: () => void }).unref?.();
  });
}
