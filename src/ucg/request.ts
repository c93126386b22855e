/**
 * Collective requests (seed: "request"): creating a request and running it are separate, so a
 * request can be made once and started many times (persistent). Making one selects the plan
 * (ppool.ts), takes the group's cached constant part for these arguments (or builds it once) and
 * binds an instance; `start()` queues it on its group and resolves with the result.
 * The plan knows nothing of the request (seed: "does a plan need to know the request? No").
 */
import { UcxError } from "../core/errors.ts";
import { COLL_TYPES, type CollType } from "./coll-type.ts";
import { datatypeOf, type CollectiveArray, type Datatype } from "./datatype.ts";
import { resolveOp, type OpLike, type ResolvedOp } from "./op.ts";
import { PlanInstance } from "./instance.ts";
import type { PlanConstant, PlanTemplate } from "./plans/base/plan_base.ts";
import type { RunControl, StepTiming, Transport } from "./instance.ts";

/** A collective's arguments. Roots are ranks in the group (seed: "interface conventions"). */
export interface CollectiveSpec {
  readonly send?: CollectiveArray;
  readonly recv?: CollectiveArray;
  readonly op?: OpLike;
  readonly root?: number;
  /** Run this plan id of the collective rather than the decision tree's pick (refused if it cannot run the call). */
  readonly plan?: number;
}

/**
 * What a request needs of its group (group.ts implements it): declared here so that request.ts
 * does not import group.ts, which imports request.ts.
 */
export interface RequestGroup {
  readonly rank: number;
  readonly size: number;
  /** The plan for this call: its template, the shared constant part, and scratch memory. */
  planFor(coll: CollType, n: ReturnType<typeof normalize>, plan?: number): { template: PlanTemplate; constant: PlanConstant; scratch: CollectiveArray };
  /**
   * Runs `body` after the group's earlier requests, with the group's transport, and resolves with
   * `result` once it ends; `body` returns undefined when the run completed inside the call.
   */
  enqueue(body: RunBody, transport: Transport, coll: CollType, options: StartOptions, result: CollectiveResult): Promise<CollectiveResult>;
  /** The transport of the group's collectives of this type (coll-type.ts). */
  transportFor(collType: number): Transport;
}

/** What a start runs (PlanInstance.executeNow): undefined when it completed synchronously, else the Promise of the rest. */
export type RunBody = (t: Transport, run: RunControl) => Promise<void> | undefined;

export interface StartOptions {
  /** Reject with UCS_ERR_TIMED_OUT after this long (the group is then unusable: its members are out of step). */
  readonly timeoutMs?: number;
  readonly signal?: AbortSignal;
}

/** What a started request resolves with: the result buffer (undefined where a rank gets none: reduce/gather off the root, barrier). */
export type CollectiveResult = CollectiveArray | undefined;

const EMPTY: Record<string, CollectiveArray> = {};
function empty(d: Datatype): CollectiveArray {
  return (EMPTY[d.name] ??= d.create(0));
}

function invalid(message: string): UcxError {
  return new UcxError("UCX_TS_INVALID_ARGUMENT", message);
}

/** The buffers, count and datatype of a call, checked; the plan's "count" is per member's block where the collective has blocks. */
export function normalize(coll: CollType, spec: CollectiveSpec, rank: number, size: number): {
  send: CollectiveArray; recv: CollectiveArray; count: number; datatype: Datatype; root: number; result: CollectiveResult; op: ResolvedOp | undefined; bytes: number;
} {
  const root = spec.root ?? 0;
  if (!Number.isInteger(root) || root < 0 || root >= size) throw invalid(`root must be a rank 0..${size - 1}, got ${root}`);
  const isRoot = rank === root;
  const need = (a: CollectiveArray | undefined, what: string) => {
    if (a === undefined) throw invalid(`${coll} needs a ${what} buffer`);
    return a;
  };
  let send: CollectiveArray;
  let recv: CollectiveArray | undefined;
  let count: number;
  let datatype: Datatype;
  switch (coll) {
    case "barrier":
      datatype = datatypeOf(new Uint8Array(0));
      send = recv = empty(datatype);
      count = 0;
      break;
    case "bcast":
      recv = need(spec.recv ?? spec.send, "data");
      datatype = datatypeOf(recv);
      send = empty(datatype);
      count = recv.length;
      break;
    case "reduce":
    case "allreduce":
    case "gather":
    case "allgather": {
      send = need(spec.send, "send");
      datatype = datatypeOf(send, "send");
      count = send.length;
      const total = coll === "gather" || coll === "allgather" ? size * count : count;
      const gets = coll === "allreduce" || coll === "allgather" || isRoot;
      recv = gets ? (spec.recv ?? datatype.create(total)) : (spec.recv ?? empty(datatype));
      if (gets && recv.length < total) throw invalid(`${coll}: the receive buffer has ${recv.length} elements, the result ${total}`);
      break;
    }
    case "scatter": {
      recv = need(spec.recv, "receive");
      datatype = datatypeOf(recv, "recv");
      count = recv.length;
      send = isRoot ? need(spec.send, "send (at the root)") : (spec.send ?? empty(datatype));
      if (isRoot && send.length < size * count) throw invalid(`scatter: the root's send buffer has ${send.length} elements, ${size} members x ${count} need ${size * count}`);
      break;
    }
    case "alltoall":
    case "reduce_scatter": {
      send = need(spec.send, "send");
      datatype = datatypeOf(send, "send");
      if (send.length % size !== 0) throw invalid(`${coll}: the send buffer's ${send.length} elements do not split into ${size} equal blocks`);
      count = send.length / size;
      const total = coll === "alltoall" ? send.length : count;
      recv = spec.recv ?? datatype.create(total);
      if (recv.length < total) throw invalid(`${coll}: the receive buffer has ${recv.length} elements, the result ${total}`);
      break;
    }
  }
  if (datatypeOf(recv, "recv") !== datatype && recv.length > 0) throw invalid(`${coll}: send and receive buffers must have the same element type (${datatype.name} and ${datatypeOf(recv).name})`);
  const reduces = coll === "reduce" || coll === "allreduce" || coll === "reduce_scatter";
  const op = reduces ? resolveOp(spec.op ?? "sum", datatype) : undefined;
  const result = coll === "barrier" || ((coll === "reduce" || coll === "gather") && !isRoot) ? undefined : recv;
  const bytes = (coll === "allgather" ? size * count : count) * datatype.size;
  return { send, recv, count, datatype, root, result, op, bytes };
}

export class CollectiveRequest {
  /** The plan this request runs (its template's name and id). */
  readonly plan: PlanTemplate;
  private readonly instance: PlanInstance;
  private readonly result: CollectiveResult;
  private readonly transport: Transport;
  /** Per-step times (ms: post, wait, local) of the last start, when `measurePhases` was set. */
  phaseTimes: StepTiming[] | undefined;

  constructor(readonly group: RequestGroup, readonly coll: CollType, spec: CollectiveSpec, options: { measurePhases?: boolean } = {}) {
    const n = normalize(coll, spec, group.rank, group.size);
    this.result = n.result;
    const { template, constant, scratch } = group.planFor(coll, n, spec.plan);
    this.plan = template;
    this.instance = new PlanInstance(constant, { send: n.send, recv: n.recv, scratch }, n.datatype, n.op);
    if (options.measurePhases) this.phaseTimes = [];
    this.transport = group.transportFor(COLL_TYPES[coll]);
  }

  /** Runs the collective (after the group's earlier requests); resolves with the result buffer. */
  start(options: StartOptions = NO_OPTIONS): Promise<CollectiveResult> {
    return this.group.enqueue(this.body, this.transport, this.coll, options, this.result);
  }

  /** What a start runs, made once: a persistent request's starts allocate no closures of their own. */
  private readonly body: RunBody = (transport, run) => {
    if (this.phaseTimes) this.phaseTimes = [];
    return this.instance.executeNow(transport, run, this.phaseTimes);
  };
}

const NO_OPTIONS: StartOptions = {};
