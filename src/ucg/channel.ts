/**
 * The channel: how a plan's phases reach other members. Every message is one UCX tag message on
 * an endpoint made by worker address (raw 64-bit tags; tag.ts), its tag laid out exactly as the
 * seed's "channel" section says:
 *
 *     reserved(12) | coll_type(8) | src_rank(24) | group_id(20)
 *     header = reserved << 52 | coll_type << 44 | src_rank << 20 | group_id
 *
 * and every receive is worker-wide (`worker.recv`) with the full mask. There is no sequence
 * number; correctness rests on the seed's three facts:
 *  1. UCX delivers the messages of one sender in order, and matches receives with equal tags in
 *     the order they were posted (per sender, per tag: FIFO);
 *  2. a request runs its plan's phases in order, and a group runs its requests one after another
 *     in the order they were started (group.ts queues them), which every member does alike;
 *  3. both ends run the same plan, so for each (src_rank, group_id, coll_type) the k-th message
 *     sent is the k-th receive posted.
 * So the n-th message from member s to member r in group g of type t always meets r's n-th
 * receive for (s, g, t), whether the collectives are back to back on one group (same tags, FIFO)
 * or concurrent on two groups (different group_id, never the same tag).
 *
 * The reserved bits stay 0. That also keeps these tags apart from the scoped tags of endpoints
 * made through the hello (top 16 bits = a scope >= 1, tag.ts) on the same worker: coll_type < 16
 * leaves bits 48..63 of a collective's tag at 0. (The control type 0xff uses bit 48..51, but only
 * during bootstrap, before any hello endpoint of the user's exists.)
 */
import type { Endpoint } from "../core/endpoint.ts";
import type { Worker } from "../core/worker.ts";
import { UcxError } from "../core/errors.ts";
import { type Tag } from "../core/tag.ts";
import { pollNow, pollWhile, spinWhile } from "./step-spin.ts";

export const RESERVED_BITS = 12;
export const COLL_TYPE_BITS = 8;
export const SRC_RANK_BITS = 24;
export const GROUP_ID_BITS = 20;
export const MAX_GROUP_ID = 2 ** GROUP_ID_BITS - 1;
export const MAX_RANK = 2 ** SRC_RANK_BITS - 1;

/** The seed's header: reserved << 52 | coll_type << 44 | src_rank << 20 | group_id. */
export function makeHeader(collType: number, srcRank: number, groupId: number, reserved = 0): bigint {
  if (collType < 0 || collType > 0xff || srcRank < 0 || srcRank > MAX_RANK || groupId < 0 || groupId > MAX_GROUP_ID || reserved < 0 || reserved > 0xfff) {
    throw new UcxError("UCX_TS_INVALID_ARGUMENT", `header field out of range (coll_type ${collType}, src_rank ${srcRank}, group_id ${groupId}, reserved ${reserved})`);
  }
  return (BigInt(reserved) << 52n) | (BigInt(collType) << 44n) | (BigInt(srcRank) << 20n) | BigInt(groupId);
}

export function parseHeader(header: bigint): { reserved: number; collType: number; srcRank: number; groupId: number } {
  return {
    reserved: Number(header >> 52n),
    collType: Number((header >> 44n) & 0xffn),
    srcRank: Number((header >> 20n) & 0xffffffn),
    groupId: Number(header & 0xfffffn),
  };
}

/** A member's way to be reached: its endpoint (none for the member itself). */
export class Channel {
  /** Endpoints by member handle (the world rank; see group.ts for handle vs rank). */
  private readonly endpoints = new Map<number, Endpoint>();
  /** Called when the endpoint to a member fails: the context fails that member's groups' requests. */
  onMemberFailure: ((handle: number, error: UcxError) => void) | undefined;
  /** Messages sent and received, for the tests and the per-phase report. */
  readonly stats = { sends: 0, recvs: 0, bytesSent: 0 };

  /**
   * How long a collective's waiting step polls and yields after the last event (ms). Hybrid mode:
   * 0 (the step just awaits) unless this host has more ranks than cores; blocking mode: then it
   * sleeps (step-spin.ts). The context sets it.
   */
  stepSpinMs = 0;

  /**
   * Polling and blocking modes: how long (ms) a step, once posted, polls synchronously for its
   * messages before it awaits (step-spin.ts pollNow); 0: it awaits at once. The context sets it.
   */
  stepSyncMs = 0;

  /**
   * Polling and blocking modes: for how long (ms) of `stepSyncMs` the step polls without yielding
   * its core in between (step-spin.ts pollNow); 0 on a host with more ranks than cores. The
   * context sets it.
   */
  stepBusyMs = 0;

  /**
   * Polling and blocking modes, "peer" error handling with shared memory: the worker the
   * watching endpoints are on (context.ts), progressed by a waiting step only now and then
   * (step-spin.ts pollWhile). Closed by the context after the channel.
   */
  watchWorker: Worker | undefined;

  constructor(readonly worker: Worker, readonly selfHandle: number) {}

  /** Progresses the watch worker, if any: a member's death reported there fails its groups. */
  readonly progressWatches = (): void => {
    const w = this.watchWorker;
    if (w && !w.closed) w.progress();
  };

  /** Polls synchronously while `pending()` holds, for up to `stepSyncMs` (step-spin.ts pollNow). */
  readonly pollNow = (pending: () => boolean): void => pollNow(this.worker, pending, this.stepSyncMs, this.stepBusyMs);

  /** Polls while `pending()` holds, for up to `stepSpinMs` after the last event (step-spin.ts). */
  readonly spin = (pending: () => boolean): Promise<void> =>
    this.drivesSteps ? pollWhile(this.worker, pending, this.stepSpinMs, this.worker.progressMode === "blocking", this.progressWatches) : spinWhile(this.worker, pending, this.stepSpinMs);

  /**
   * Polling and blocking modes: nothing progresses the worker by itself, so every waiting step
   * drives it (step-spin.ts pollWhile), whatever `stepSpinMs` is.
   */
  get drivesSteps(): boolean {
    const mode = this.worker.progressMode;
    return mode === "polling" || mode === "blocking";
  }

  /**
   * The member's endpoint, and where that one cannot report the member's death (error handling
   * "none", which lets UCX use shared memory: bootstrap.ts), a `watch` endpoint with error
   * handling "peer" that carries no collective's message and only reports it.
   */
  addEndpoint(handle: number, ep: Endpoint, watch?: Endpoint): void {
    this.endpoints.set(handle, ep);
    ep.onError = (error) => this.onMemberFailure?.(handle, error);
    if (watch) {
      this.watches.set(handle, watch);
      watch.onError = (error) => {
        this.failed.add(handle);
        this.onMemberFailure?.(handle, error);
      };
    }
  }

  /** Watch endpoints by member handle (addEndpoint). */
  private readonly watches = new Map<number, Endpoint>();
  /** Members whose watch endpoint reported them dead: their data endpoint is not flushed on close. */
  private readonly failed = new Set<number>();

  endpointTo(handle: number): Endpoint {
    const ep = this.endpoints.get(handle);
    if (!ep) throw new UcxError("UCX_TS_INVALID_ARGUMENT", `no endpoint to member ${handle}`);
    return ep;
  }

  send(handle: number, bytes: Uint8Array, header: Tag): Promise<void> {
    this.stats.sends++;
    this.stats.bytesSent += bytes.length;
    return this.endpointTo(handle).send(bytes, header);
  }

  /**
   * A plan's send: as `send`, for a step that drives progress itself while it waits (step-spin.ts;
   * in hybrid and thread modes the engine does), reporting through `done` / `failed`
   * (Endpoint.postSend): a small send calls `done` before this returns.
   */
  postSend(handle: number, bytes: Uint8Array, header: Tag, done: () => void, failed: (e: unknown) => void): void {
    this.stats.sends++;
    this.stats.bytesSent += bytes.length;
    this.endpointTo(handle).postSend(bytes, header, done, failed);
  }

  recv(bytes: Uint8Array, header: bigint, signal?: AbortSignal): Promise<unknown> {
    this.stats.recvs++;
    return this.worker.recv(bytes, header, undefined, signal ? { signal } : {});
  }

  /**
   * A plan's receive: posted with its request id, which `cancel` takes (a run's abort cancels its
   * step's receives by id: an AbortSignal listener per receive cost microseconds per step). It
   * reports through `done(length)` / `failed` from inside the progress call that delivers its
   * completion, with no Promise (Worker.tagRecvWith): a step whose messages are there completes
   * in that call (step-spin.ts pollNow).
   */
  post(bytes: Uint8Array, header: Tag, done: (length: number) => void, failed: (e: unknown) => void): number {
    this.stats.recvs++;
    return this.worker.tagRecvWith(bytes, header, done, failed);
  }

  /** Cancels a receive made by `post` (it rejects with UCS_ERR_CANCELED); one already complete is left alone. */
  cancel(id: number): void {
    this.worker.cancel(id);
  }

  async close(): Promise<void> {
    const eps = [...this.endpoints].flatMap(([handle, ep]) => (this.failed.has(handle) ? [] : [ep]));
    const watches = [...this.watches.values()];
    this.endpoints.clear();
    this.watches.clear();
    // A dead member's "none" endpoint is left to the worker's close: UCX cannot force-close one,
    // and flushing it would wait on a process that is gone.
    await Promise.all([...eps, ...watches].map((ep) => ep.close().catch(() => ep.close({ force: true }).catch(() => {}))));
  }
}
