/**
 * Receive scopes: the number each endpoint made through the hello is known by on its own worker.
 * A peer puts it in the top 16 bits of every tag it sends on that connection (tag.ts,
 * `scopedTagWords`), and the endpoint's receives match it exactly, so that `ep.recv` takes only
 * this endpoint's peer's messages although UCX's tag matching is worker-wide (as Python ucxx gives
 * each endpoint its own tag after its handshake). Scope 0 is never handed out: a raw sender's
 * small tags carry 0 there and must not land in a scoped receive.
 */
import { UcxError } from "../errors.ts";

export const MAX_SCOPE = 0xffff;

export class ScopeTable {
  private readonly used = new Set<number>();
  private next = 1;

  /** A scope no live endpoint of this worker holds; release it when the endpoint is gone. */
  allocate(): number {
    if (this.used.size >= MAX_SCOPE) throw new UcxError("UCX_TS_LIMIT_EXCEEDED", `a worker has at most ${MAX_SCOPE} scoped endpoints at once`);
    // Round-robin rather than lowest-free: a scope just released is the last to come back, so a
    // late message of a closed endpoint does not land in the receive of the next one.
    while (this.used.has(this.next)) this.next = this.next === MAX_SCOPE ? 1 : this.next + 1;
    const scope = this.next;
    this.used.add(scope);
    this.next = scope === MAX_SCOPE ? 1 : scope + 1;
    return scope;
  }

  release(scope: number): void {
    this.used.delete(scope);
  }
}
