/**
 * A worker's active messages on the application thread: the receives (`worker.amRecv`,
 * `ep.amRecv`), the handlers (`onAm`, `onAmCallback`), and each arriving message handed to the
 * router (am/router.ts), which picks its handler or inbox.
 */
import { ATOMIC_AM_ID } from "../engine/am-atomic-wire.ts";
import { ownerBytes, RECEIVED_PLAIN_HEADER, RESERVED_OWNER } from "../am/header.ts";
import type { AmInbox, AmMessage, AmQueueLimits } from "../am/inbox.ts";
import { AmRouter, noRelease, type AmHandler } from "../am/router.ts";
import type { Endpoint } from "../endpoint.ts";
import { submission } from "../engine/engine.ts";
import { Op } from "../engine/records.ts";
import { invalidArgument, type UcxError } from "../errors.ts";
import type { Payload } from "../engine/payload.ts";
import type { RequestPath } from "./request-path.ts";
import { unpackActiveMessages } from "../engine/am-pack.ts";

export class ActiveMessageHub {
  private readonly router: AmRouter;
  /** Receives waiting for a message: the worker stays active meanwhile. */
  private waiting = 0;

  constructor(
    limits: Required<AmQueueLimits>,
    private readonly path: RequestPath,
    private readonly settled: <T>(p: Promise<T>) => Promise<T>,
    private readonly features: () => readonly string[],
  ) {
    this.router = new AmRouter(limits, (buffer) => this.path.engine.reuseActiveMessageBuffer(buffer));
  }

  /** Something waits for a message or handles them: the worker must keep progressing. */
  get active(): boolean {
    return this.waiting > 0 || this.router.handlerCount > 0;
  }

  /** The inbox of endpoint `id` (0: messages from senders without an endpoint here). */
  inbox(id: number): AmInbox {
    return this.router.inbox(id);
  }

  /** Endpoint `id` is closed: its inbox rejects its waiters and is forgotten. */
  closeInbox(id: number, error: UcxError): void {
    this.router.closeInbox(id, error);
  }

  /** Wait for the next message of inbox `id` (-1: any), keeping the worker active meanwhile. */
  take(id: number, signal?: AbortSignal): Promise<AmMessage> {
    // A message already queued: a settled Promise, with no waiting count and no driver round
    // (a stream of small messages is read this way, one amRecv each).
    const ready = this.router.takeReady(id);
    if (ready) return this.path.settledNow(ready);
    return this.awaited(this.router.take(id, signal));
  }

  /**
   * The next `count` messages of inbox `id` (-1: any) as one window (`amRecvMany`): one Promise,
   * settled at once when all are queued already, else once the last arrives.
   */
  takeMany(id: number, count: number, signal?: AbortSignal): Promise<AmMessage[]> {
    if (!Number.isSafeInteger(count) || count < 0) throw invalidArgument(`amRecvMany needs a count of messages (an integer from 0), got ${String(count)}`);
    const r = this.router.takeMany(id, count, signal);
    return Array.isArray(r) ? this.path.settledNow(r) : this.awaited(r);
  }

  /** A receive that waits: counted as waiting (the worker stays active) until `p` settles. */
  private awaited<T>(p: Promise<T>): Promise<T> {
    this.waiting++;
    this.path.updateActive();
    const done = () => {
      this.waiting--;
      this.path.updateActive();
    };
    p.then(done, done);
    return this.settled(p);
  }

  onAmCallback(owner: string, id: number | bigint, handler: AmHandler): () => void {
    if (owner === RESERVED_OWNER) throw invalidArgument(`the receiver-callback owner '${RESERVED_OWNER}' is reserved by UCXX`);
    try {
      ownerBytes(owner);
    } catch (e) {
      throw invalidArgument((e as Error).message);
    }
    return this.addHandler(AmRouter.callbackKey(owner, id), handler);
  }

  async onAm(amId: number, handler: AmHandler): Promise<() => void> {
    if (!Number.isInteger(amId) || amId < 1 || amId >= ATOMIC_AM_ID) {
      throw invalidArgument(`AM id must be an integer from 1 to ${ATOMIC_AM_ID - 1} (${ATOMIC_AM_ID} carries ucx-ts's atomics), got ${amId}`);
    }
    if (!this.features().includes("am")) throw invalidArgument("active messages need the 'am' feature");
    const off = this.addHandler(AmRouter.rawKey(amId), handler);
    try {
      await this.settled(this.path.request(submission({ op: Op.AmRegister, target: amId }), null, "ucp_worker_set_am_recv_handler", () => undefined).promise);
    } catch (e) {
      off();
      throw e;
    }
    return off;
  }

  private addHandler(key: string, handler: AmHandler): () => void {
    if (typeof handler !== "function") throw invalidArgument("the handler must be a function");
    const off = this.router.addHandler(key, handler);
    this.path.updateActive();
    return () => {
      off();
      this.path.updateActive();
    };
  }

  /** A message arrived (a completion record of kind AmMessage) from `endpoint`, if it is one of ours. */
  arrived(endpointId: number, endpoint: Endpoint | undefined, status: number, payload: Payload | undefined, amId: number): void {
    // A worker connected to itself: UCX reports the sending end; the message is for its partner.
    const to = endpoint?.loopPartner ?? endpoint;
    this.router.route(to ? to.id : 0, to, status, payload, amId);
  }

  /**
   * Small messages that arrived together, packed by the engine (engine/am-pack.ts): each is
   * routed as `arrived` routes one, in arrival order, its data a view of the pack's one buffer.
   */
  arrivedPacked(payload: Payload | undefined, endpoints: { get(id: number): Endpoint | undefined }): void {
    if (!payload?.buffers) return;
    unpackActiveMessages(payload.buffers, RECEIVED_PLAIN_HEADER, (endpointId, amId, data, header) => {
      const endpoint = endpoints.get(endpointId);
      const to = endpoint?.loopPartner ?? endpoint;
      // Its memory is shared with the others of its pack: nothing to give back (it is small).
      this.router.routeData(to ? to.id : 0, to, amId, data, header, noRelease);
    });
  }

  /** The worker is closed: waiting receives reject with `error`, handlers are dropped. */
  closeAll(error: UcxError): void {
    this.router.closeAll(error);
  }
}
