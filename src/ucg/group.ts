/**
 * A group (seed: "group", MPI's communicator): an ordered list of members. A member has a
 * *handle*, its world rank, the same in every group (the seed's "mh": links are per process and
 * shared by all groups), and a *rank*, its index in this group's list, which is all the plans
 * see. Every member runs the group's collectives in the same order; the group runs them one
 * after another (channel.ts explains why that keeps messages from crossing). Two groups run at
 * the same time freely: their group ids keep their messages apart.
 * A failed collective (a member died, a timeout) leaves the members out of step, so it breaks
 * the group: its queued and later requests reject with the same error.
 */
import { UcxError } from "../core/errors.ts";
import type { CollType } from "./coll-type.ts";
import { makeHeader } from "./channel.ts";
import type { CollectiveArray } from "./datatype.ts";
import { ignoreRejection, RunControl, type Transport } from "./instance.ts";
import type { OpLike } from "./op.ts";
import type { CallFacts, DecisionTree } from "./ppool.ts";
import type { PlanConstant, PlanTemplate } from "./plans/base/plan_base.ts";
import { CollectiveRequest, normalize, type CollectiveResult, type CollectiveSpec, type RunBody, type StartOptions } from "./request.ts";
import type { GroupContext } from "./group-context.ts";

type Normalized = ReturnType<typeof normalize>;

/** The plan cache's bounds per group (planStats). */
export const MAX_CACHED_PLANS = 128;
export const MAX_CACHED_SCRATCH_BYTES = 64 * 1024 * 1024;

export class Group {
  readonly rank: number;
  readonly size: number;
  /** The decision trees with the member-count questions answered (seed: prune per group). */
  readonly trees: Readonly<Record<CollType, DecisionTree>>;
  /** The plan cache: most recently used last (the Map's order is the eviction order). */
  private readonly constants = new Map<string, { template: PlanTemplate; constant: PlanConstant; scratch: CollectiveArray }>();
  /**
   * Plans built and reused from the cache (a second identical call builds nothing), evicted from
   * it, and held in it now. The cache is keyed by every argument a plan depends on (count, type,
   * root ...): a program that varies them would grow it without end, so it keeps the most recently
   * used MAX_CACHED_PLANS, their scratch buffers within MAX_CACHED_SCRATCH_BYTES together.
   */
  readonly planStats: PlanCacheStats = planCacheStats(this.constants);
  /** Members on the same host as this one, and each host's first member (group ranks; topology.ts). */
  readonly localRanks: readonly number[];
  readonly nodeLeaders: readonly number[];
  private cachedScratchBytes = 0;
  private tail: Promise<unknown> = Promise.resolve();
  /** Requests started and not finished (0: the next one starts at once). */
  private queued = 0;
  private brokenBy: UcxError | undefined;
  private readonly running = new Set<RunControl>();
  private readonly transports = new Map<number, Transport>();
  #freed = false;

  constructor(readonly context: GroupContext<Group>, readonly id: number, readonly members: readonly number[]) {
    this.rank = members.indexOf(context.rte.rank);
    this.size = members.length;
    this.trees = context.ppool.treesFor(this.size);
    const topo = context.topology;
    this.localRanks = members.flatMap((h, r) => (topo.sameHost(h, context.rte.rank) ? [r] : []));
    this.nodeLeaders = members.flatMap((h, r) => (members.findIndex((g) => topo.sameHost(g, h)) === r ? [r] : []));
  }

  /** The member handle (world rank) of a group rank. */
  handleOf(rank: number): number {
    return this.members[rank]!;
  }

  get broken(): UcxError | undefined {
    return this.brokenBy;
  }

  // --- the collectives (non-blocking: each returns a Promise) ------------------------------

  barrier(options?: StartOptions): Promise<void> {
    return this.run("barrier", {}, options).then(() => undefined);
  }
  /** The root's `data` into every member's `data` (in place). */
  bcast<T extends CollectiveArray>(data: T, root = 0, options?: StartOptions): Promise<T> {
    return this.run("bcast", { recv: data, root }, options) as Promise<T>;
  }
  /** The op over every member's `send`, at the root (undefined elsewhere). */
  reduce<T extends CollectiveArray>(send: T, op: OpLike = "sum", root = 0, options?: StartOptions & { recv?: T }): Promise<T | undefined> {
    return this.run("reduce", { send, op, root, recv: options?.recv }, options) as Promise<T | undefined>;
  }
  allreduce<T extends CollectiveArray>(send: T, op: OpLike = "sum", options?: StartOptions & { recv?: T }): Promise<T> {
    return this.run("allreduce", { send, op, recv: options?.recv }, options) as Promise<T>;
  }
  /** Every member's `send`, in rank order, at every member (size x send.length elements). */
  allgather<T extends CollectiveArray>(send: T, options?: StartOptions & { recv?: T }): Promise<T> {
    return this.run("allgather", { send, recv: options?.recv }, options) as Promise<T>;
  }
  gather<T extends CollectiveArray>(send: T, root = 0, options?: StartOptions & { recv?: T }): Promise<T | undefined> {
    return this.run("gather", { send, root, recv: options?.recv }, options) as Promise<T | undefined>;
  }
  /** Block r of the root's `send` (size x recv.length elements; ignored elsewhere) into member r's `recv`. */
  scatter<T extends CollectiveArray>(send: T | undefined, recv: T, root = 0, options?: StartOptions): Promise<T> {
    return this.run("scatter", { send, recv, root }, options) as Promise<T>;
  }
  /** Block j of member i's `send` into block i of member j's result. */
  alltoall<T extends CollectiveArray>(send: T, options?: StartOptions & { recv?: T }): Promise<T> {
    return this.run("alltoall", { send, recv: options?.recv }, options) as Promise<T>;
  }
  /** The op over every member's `send` (size equal blocks); member r gets block r. */
  reduceScatter<T extends CollectiveArray>(send: T, op: OpLike = "sum", options?: StartOptions & { recv?: T }): Promise<T> {
    return this.run("reduce_scatter", { send, op, recv: options?.recv }, options) as Promise<T>;
  }

  /** A persistent request: plan chosen and bound once, `start()` as often as wanted. */
  init(coll: CollType, spec: CollectiveSpec = {}, options: { measurePhases?: boolean } = {}): CollectiveRequest {
    if (this.#freed) throw this.freedError();
    this.assertUsable();
    return new CollectiveRequest(this, coll, spec, options);
  }

  private run(coll: CollType, spec: CollectiveSpec, options?: StartOptions): Promise<CollectiveResult> {
    try {
      return this.init(coll, spec).start(options);
    } catch (e) {
      return Promise.reject(e);
    }
  }

  /**
   * A subgroup of the members at `ranks` (in that order), with a group id of its own. Collective
   * over this group: every member calls it with the same ranks (members left out get undefined).
   * The id is the largest next-free id among the members (an allreduce), so it is new to all of them.
   */
  async subgroup(ranks: readonly number[]): Promise<Group | undefined> {
    if (!Array.isArray(ranks) || ranks.length === 0 || new Set(ranks).size !== ranks.length || ranks.some((r) => !Number.isInteger(r) || r < 0 || r >= this.size)) {
      throw new UcxError("UCX_TS_INVALID_ARGUMENT", `subgroup ranks must be distinct ranks 0..${this.size - 1}, got ${JSON.stringify(ranks)}`);
    }
    const next = await this.allreduce(new Uint32Array([this.context.nextGroupId]), "max");
    const id = next[0]!;
    this.context.nextGroupId = id + 1;
    if (!ranks.includes(this.rank)) return undefined;
    return this.context.addGroup(id, ranks.map((r) => this.handleOf(r)));
  }

  /**
   * Releases a subgroup (MPI_Comm_free): once the requests already started on it end, its cached
   * plans and transports are dropped and the context forgets it; later calls reject with
   * UCX_TS_CLOSED. Local, not collective: its id is never given out again (ids only grow), so a
   * member that frees it early cannot catch another group's messages. A program that makes
   * subgroups over and over frees them, or holds each one's plans and buffers for good.
   * The world group lives as long as the context.
   */
  async free(): Promise<void> {
    if (this.id === 0) throw new UcxError("UCX_TS_INVALID_ARGUMENT", "the world group cannot be freed: close the context");
    if (this.#freed) return;
    this.#freed = true;
    await this.tail;
    this.constants.clear();
    this.cachedScratchBytes = 0;
    this.transports.clear();
    this.context.removeGroup(this);
  }

  // --- plans and execution ---------------------------------------------------------------

  /** @internal The plan for a call: selected by the tree, its constant part built once per arguments. */
  planFor(coll: CollType, n: Normalized, plan?: number): { template: PlanTemplate; constant: PlanConstant; scratch: CollectiveArray } {
    const commutative = n.op?.commutative ?? true;
    const facts: CallFacts = { commutative, bytes: n.bytes, count: n.count };
    const template = this.context.ppool.select(coll, this.size, facts, plan);
    const key = `${coll}/${template.id}/${n.datatype.name}/${n.count}/${n.root}/${commutative}`;
    let hit = this.constants.get(key);
    if (hit) {
      this.planStats.reused++;
      // Most recently used last: the Map's order is the eviction order.
      this.constants.delete(key);
      this.constants.set(key, hit);
      return hit;
    }
    const constant = template.build(
      { rank: this.rank, size: this.size, count: n.count, root: n.root, commutative, elementSize: n.datatype.size },
      this.context.ppool.tunables(template),
    );
    hit = { template, constant, scratch: n.datatype.create(constant.scratchCount) };
    this.constants.set(key, hit);
    this.cachedScratchBytes += hit.scratch.byteLength;
    this.evictPlans();
    this.planStats.built++;
    return hit;
  }

  /**
   * Drops the least recently used plans beyond the cache's bounds. A persistent request keeps the
   * plan it was made with; the next call with those arguments builds it again.
   */
  private evictPlans(): void {
    for (const [key, entry] of this.constants) {
      if (this.constants.size <= MAX_CACHED_PLANS && this.cachedScratchBytes <= MAX_CACHED_SCRATCH_BYTES) break;
      if (this.constants.size === 1) break; // the one just built is in use
      this.constants.delete(key);
      this.cachedScratchBytes -= entry.scratch.byteLength;
      this.planStats.evicted++;
    }
  }

  /**
   * @internal Runs `body` after every request started before it; a failure breaks the group.
   * With nothing queued it starts at once, in this call (its first step is posted before
   * `start()` returns), rather than a microtask later behind the tail; and a run that completes
   * inside this call (every step's messages were there: PlanInstance.executeNow) returns a
   * settled Promise, with no async function between the caller's `await` and the result.
   */
  enqueue(body: RunBody, transport: Transport, coll: CollType, options: StartOptions, result: CollectiveResult): Promise<CollectiveResult> {
    // Refused here, not when its turn comes: requests started before free() still run.
    if (this.#freed) return Promise.reject(this.freedError());
    if (this.queued++ === 0) {
      const p = this.runRequest(body, transport, coll, options, result);
      // Ended inside the call (queued is back to 0): nothing for a later request to wait on.
      this.tail = this.queued === 0 ? SETTLED : p.catch(ignoreRejection);
      return p;
    }
    const run = () => this.runRequest(body, transport, coll, options, result);
    const p = this.tail.then(run, run);
    // The tail only orders requests: a request's failure is its caller's, the next one runs anyway.
    this.tail = p.catch(ignoreRejection);
    return p;
  }

  /** One request's run: its timeout and signal wired, `body` run, and what it ends with. */
  private runRequest(body: RunBody, transport: Transport, coll: CollType, options: StartOptions, result: CollectiveResult): Promise<CollectiveResult> {
    const r = new RequestRun(coll, options);
    let later: Promise<void> | undefined;
    try {
      this.assertUsable();
      this.running.add(r);
      if (options.timeoutMs !== undefined) {
        r.timer = setTimeout(() => this.fail(new UcxError("UCS_ERR_TIMED_OUT", `${coll} did not complete within ${options.timeoutMs} ms`, { status: -20 })), options.timeoutMs);
      }
      if (options.signal) {
        const signal = options.signal;
        if (signal.aborted) throw new UcxError("UCS_ERR_CANCELED", `${coll} aborted`, { status: -16, cause: signal.reason });
        r.signalListener = () => r.abort(signal.reason);
        signal.addEventListener("abort", r.signalListener);
      }
      later = body(transport, r);
    } catch (e) {
      const error = this.failure(r, e);
      this.endRequest(r);
      return Promise.reject(error);
    }
    if (later === undefined) {
      this.endRequest(r);
      return Promise.resolve(result);
    }
    return this.finishRequest(r, later, result);
  }

  private async finishRequest(r: RequestRun, later: Promise<void>, result: CollectiveResult): Promise<CollectiveResult> {
    try {
      await later;
      return result;
    } catch (e) {
      throw this.failure(r, e);
    } finally {
      this.endRequest(r);
    }
  }

  /** The error a failed run rejects with; a run that had begun breaks the group with it. */
  private failure(r: RequestRun, e: unknown): UcxError {
    const { coll, options } = r;
    const error = this.brokenBy ?? (r.aborted && options.signal?.aborted
      ? new UcxError("UCS_ERR_CANCELED", `${coll} aborted`, { status: -16, cause: options.signal.reason })
      : e instanceof UcxError ? e : new UcxError("UCX_TS_PROTOCOL_ERROR", String(e), { cause: e }));
    // A refusal before the run began (broken group, closed context) does not break the group further.
    if (this.running.has(r)) this.fail(error);
    return error;
  }

  private endRequest(r: RequestRun): void {
    if (r.timer !== undefined) clearTimeout(r.timer);
    if (r.signalListener) r.options.signal!.removeEventListener("abort", r.signalListener);
    this.running.delete(r);
    this.queued--;
  }

  private freedError(): UcxError {
    return new UcxError("UCX_TS_CLOSED", `group ${this.id} is freed`);
  }

  /** @internal Breaks the group: running requests are aborted (their receives cancelled), later ones reject. */
  fail(error: UcxError): void {
    this.brokenBy ??= error;
    for (const c of this.running) c.abort(error);
  }

  private assertUsable(): void {
    if (this.brokenBy) throw this.brokenBy;
    if (this.context.closed) throw new UcxError("UCX_TS_CLOSED", "the collectives context is closed");
  }

  /** @internal The transport of this group's collectives of type `collType` (made once per type). */
  transportFor(collType: number): Transport {
    let t = this.transports.get(collType);
    if (t) return t;
    const channel = this.context.channel;
    // As Numbers: a header's top 12 bits are 0 (channel.ts), so it is below 2^52 and exact, and
    // a Number tag skips the BigInt arithmetic of every send and receive (tag.ts).
    const header = Number(makeHeader(collType, this.rank, this.id));
    const from = this.members.map((_, r) => Number(makeHeader(collType, r, this.id)));
    const handles = this.members;
    t = {
      send: (peer, bytes, done, failed) => channel.postSend(handles[peer]!, bytes, header, done, failed),
      recv: (peer, bytes, done, failed) => channel.post(bytes, from[peer]!, done, failed),
      cancel: (id) => channel.cancel(id),
      spin: channel.stepSpinMs > 0 || channel.drivesSteps ? channel.spin : undefined,
      pollNow: channel.drivesSteps && channel.stepSyncMs > 0 ? channel.pollNow : undefined,
    };
    this.transports.set(collType, t);
    return t;
  }
}

/** The tail of a group whose requests all ended. */
const SETTLED: Promise<unknown> = Promise.resolve();

/** One started request's run: its control (one object per start), and the timer and abort listener to undo when it ends. */
class RequestRun extends RunControl {
  timer: ReturnType<typeof setTimeout> | undefined = undefined;
  /** The listener on the caller's AbortSignal (RunControl's own onAbort is the instance's). */
  signalListener: (() => void) | undefined = undefined;
  constructor(
    readonly coll: CollType,
    readonly options: StartOptions,
  ) {
    super();
  }
}

/** A group's plan-cache counters (Group.planStats). */
export interface PlanCacheStats {
  built: number;
  reused: number;
  evicted: number;
  /** Plans held now: read from the cache itself, so it cannot drift. */
  readonly cached: number;
}

function planCacheStats(plans: ReadonlyMap<string, unknown>): PlanCacheStats {
  return {
    built: 0,
    reused: 0,
    evicted: 0,
    get cached() {
      return plans.size;
    },
  };
}
