/**
 * A plan instance (seed: the plan's mutable part): a shared constant part bound to one call's
 * buffers, scratch memory and op, and its execution. Binding makes the views each phase needs
 * once; a persistent request keeps its instance, so starting it again does no work but the
 * transfers themselves.
 */
import { UcxError } from "../core/errors.ts";
import { byteView, type CollectiveArray, type Datatype } from "./datatype.ts";
import type { ResolvedOp } from "./op.ts";
import type { BufferName, Phase, Region } from "./phase.ts";
import type { PlanConstant } from "./plans/base/plan_base.ts";

/** A handler that marks a Promise's rejection handled (it is awaited, and thrown, later). */
export const ignoreRejection = (): void => {};

/** A run that completed synchronously, as a Promise (execute). */
const DONE: Promise<void> = Promise.resolve();

/**
 * How an instance reaches the other members (the group gives it its channel and headers). A
 * transfer reports through the callbacks it is posted with, from inside the progress call that
 * delivers its completion (a small send: before `send` returns), not through a Promise: the step
 * counts them, and one whose messages are there completes without a microtask (pollNow).
 */
export interface Transport {
  send(peer: number, bytes: Uint8Array, done: () => void, failed: (e: unknown) => void): void;
  /** Returns the receive's request id (what `cancel` takes); `done` gets the received length. */
  recv(peer: number, bytes: Uint8Array, done: (length: number) => void, failed: (e: unknown) => void): number;
  /** Cancels posted receive `id`: it then fails (UCS_ERR_CANCELED). */
  cancel(id: number): void;
  /** Drives progress while `pending()` holds, for a while (step-spin.ts); absent: just await. */
  readonly spin?: (pending: () => boolean) => Promise<void>;
  /** Polls synchronously while `pending()` holds, for a short while (step-spin.ts pollNow); absent: none. */
  readonly pollNow?: (pending: () => boolean) => void;
}

/**
 * One run of a request (what an AbortController was, minus its EventTarget: making one and a
 * listener per receive cost microseconds per step). `abort()` cancels the receives of the step
 * that waits; the step then rejects, and a run aborted between steps stops at the next one.
 */
export class RunControl {
  aborted = false;
  reason: unknown = undefined;
  /** Set by the instance while a step waits. */
  onAbort: (() => void) | undefined = undefined;

  abort(reason: unknown): void {
    if (this.aborted) return;
    this.aborted = true;
    this.reason = reason;
    this.onAbort?.();
  }
}

/** One step's time (ms): posting its sends and receives, waiting for them all, its reduces and copies. */
export interface StepTiming {
  /** How many sends and receives the step has (0: a local step, a copy or a reduce only). */
  readonly transfers: number;
  readonly post: number;
  readonly wait: number;
  readonly local: number;
}

/**
 * A transfer bound to its buffer, with its completion handlers made once (a persistent request
 * starts again without making any): a receive checks the length that came.
 */
interface BoundTransfer {
  readonly send: boolean;
  readonly peer: number;
  readonly bytes: Uint8Array;
  /** A receive's gets the received length; a send's none. */
  readonly done: (length: number) => void;
  readonly failed: (e: unknown) => void;
}
type BoundLocal = () => void;
interface BoundStep {
  transfers: BoundTransfer[];
  local: BoundLocal[];
}

export class PlanInstance {
  private readonly steps: BoundStep[];

  constructor(
    constant: PlanConstant,
    buffers: Readonly<Record<BufferName, CollectiveArray>>,
    datatype: Datatype,
    op: ResolvedOp | undefined,
  ) {
    const typed = (r: Region): CollectiveArray => {
      const b = buffers[r.buffer];
      if (r.offset + r.count > b.length) {
        throw new UcxError("UCX_TS_INVALID_ARGUMENT", `plan region ${r.buffer}[${r.offset}, +${r.count}) exceeds the ${b.length}-element buffer`);
      }
      return datatype.view(b.buffer, b.byteOffset + r.offset * datatype.size, r.count);
    };
    const bindLocal = (p: Phase): BoundLocal => {
      if (p.type === "copy") {
        const target = typed(p.target);
        const source = typed(p.source);
        return () => (target as Float64Array).set(source as Float64Array);
      }
      if (p.type === "reduce") {
        if (!op) throw new UcxError("UCX_TS_INVALID_ARGUMENT", "a reduce phase needs an op");
        const target = typed(p.target);
        const source = typed(p.source);
        const operand = p.operand ? typed(p.operand) : target;
        const combine = op.combine;
        return p.sourceFirst ? () => combine(source, operand, target) : () => combine(operand, source, target);
      }
      throw new Error(`phase ${p.type} is not local`);
    };
    this.steps = constant.steps.map((s) => ({
      transfers: s.transfers.map((p) => {
        if (p.type !== "send" && p.type !== "recv") throw new Error(`phase ${p.type} is not a transfer`);
        const a = typed(p.region);
        return this.bindTransfer(p.type === "send", p.peer, byteView(a, 0, a.length));
      }),
      local: s.local.map(bindLocal),
    }));
    this.receiveIds = new Array<number>(Math.max(0, ...this.steps.map((s) => s.transfers.length))).fill(0);
  }

  private bindTransfer(send: boolean, peer: number, bytes: Uint8Array): BoundTransfer {
    const transferDone = this.transferDone;
    const failed = this.transferFailed;
    const done = send
      ? transferDone
      : (length: number) => {
          if (length === bytes.length) return transferDone();
          // Both ends run the same plan: a length that differs means the members disagree on the call.
          failed(new UcxError("UCX_TS_PROTOCOL_ERROR", `member ${peer} sent ${length} bytes where this plan expects ${bytes.length}: do all members call the collective with the same counts and root?`));
        };
    return { send, peer, bytes, done, failed };
  }

  /**
   * Runs every step in order; the first failure cancels the step's other receives and rejects.
   * With `stepTimes`, one entry per step is appended: where a step's time goes is what shows the
   * point-to-point engine's per-message cost inside a collective (bench/ucg.ts).
   * One run at a time per instance (its group runs its requests one after another).
   */
  execute(transport: Transport, run: RunControl, stepTimes?: StepTiming[]): Promise<void> {
    try {
      return this.executeNow(transport, run, stepTimes) ?? DONE;
    } catch (e) {
      return Promise.reject(e);
    }
  }

  /**
   * `execute`, without a Promise where it need not make one: when every step completed inside
   * this call (polling and blocking modes, a peer that answered within the step's synchronous
   * poll: pollNow) it returns undefined, and a failure found meanwhile throws. Otherwise it
   * returns the Promise of the rest of the run. The group's request then resolves without the
   * two or three Promise hops an async function per layer cost (issue 23: ~1-2 us of a 2-rank
   * 8 B allreduce).
   */
  executeNow(transport: Transport, run: RunControl, stepTimes?: StepTiming[]): Promise<void> | undefined {
    this.transport = transport;
    this.run = run;
    run.onAbort = this.abortStep;
    let later: Promise<void> | undefined;
    try {
      later = this.stepsFrom(0, stepTimes);
    } finally {
      if (later === undefined) this.endRun(run);
    }
    return later && this.endRunAfter(later, run);
  }

  /**
   * Runs the steps from `first` on while each completes synchronously; the first that must wait
   * returns the Promise of the rest (awaitStep). Throws the first failure met synchronously.
   */
  private stepsFrom(first: number, stepTimes: StepTiming[] | undefined): Promise<void> | undefined {
    const run = this.run!;
    const transport = this.transport!;
    for (let i = first; i < this.steps.length; i++) {
      const step = this.steps[i]!;
      if (run.aborted) throw run.reason;
      const t0 = stepTimes ? performance.now() : 0;
      let posted = t0;
      if (step.transfers.length > 0) {
        this.post(step.transfers, transport);
        if (stepTimes) posted = performance.now();
        // Polling and blocking modes: a peer that answers within microseconds completes the
        // step here, synchronously; the step then makes no Promise and does not await.
        if (this.stepOpen && transport.pollNow) transport.pollNow(this.stepPending);
        if (this.stepOpen) return this.awaitStep(i, stepTimes, t0, posted);
        if (this.stepError !== undefined) throw this.stepError;
      }
      this.runLocal(step, stepTimes, t0, posted);
    }
    return undefined;
  }

  /** Awaits step `i` (posted, not complete), runs its local phases, then the steps after it. */
  private async awaitStep(i: number, stepTimes: StepTiming[] | undefined, t0: number, posted: number): Promise<void> {
    const transport = this.transport!;
    const waiting = new Promise<void>((resolve, reject) => {
      this.waiter = (e) => (e === undefined ? resolve() : reject(e));
    });
    if (transport.spin) {
      // The step may fail while the spin still runs (a peer died): `waiting` then rejects
      // before it is awaited, and the spin's turns of the event loop would report it
      // unhandled, which ends the process. Marked handled here; the await below still throws.
      waiting.catch(ignoreRejection);
      await transport.spin(this.stepPending);
    }
    await waiting;
    this.runLocal(this.steps[i]!, stepTimes, t0, posted);
    const rest = this.stepsFrom(i + 1, stepTimes);
    if (rest) await rest;
  }

  private runLocal(step: BoundStep, stepTimes: StepTiming[] | undefined, t0: number, posted: number): void {
    const completed = stepTimes ? performance.now() : 0;
    for (const local of step.local) local();
    if (stepTimes) stepTimes.push({ transfers: step.transfers.length, post: posted - t0, wait: completed - posted, local: performance.now() - completed });
  }

  private async endRunAfter(later: Promise<void>, run: RunControl): Promise<void> {
    try {
      await later;
    } finally {
      this.endRun(run);
    }
  }

  private endRun(run: RunControl): void {
    run.onAbort = undefined;
    this.run = undefined;
    this.transport = undefined;
  }

  // --- the step that waits: its transfers counted down, a Promise only if it must be awaited ---

  private transport: Transport | undefined;
  private run: RunControl | undefined;
  /** Transfers of the waiting step not yet complete. */
  private left = 0;
  /** The step is posted and has neither completed nor failed. */
  private stepOpen = false;
  /** Why the step failed (always defined then: transferFailed supplies an Error if none came). */
  private stepError: unknown = undefined;
  /** Settles the Promise the step awaits, once it awaits one. */
  private waiter: ((e?: unknown) => void) | undefined;
  /** The waiting step's receives (request ids: an abort cancels them); `receives` of them. */
  private readonly receiveIds: number[];
  private receives = 0;

  /** Posts a step's transfers (receives first, as the plan lists them); they count down `left`. */
  private post(transfers: readonly BoundTransfer[], transport: Transport): void {
    this.stepOpen = true;
    this.stepError = undefined;
    this.waiter = undefined;
    this.left = transfers.length;
    this.receives = 0;
    try {
      for (let i = 0; i < transfers.length; i++) {
        const t = transfers[i]!;
        if (t.send) transport.send(t.peer, t.bytes, t.done as () => void, t.failed);
        else this.receiveIds[this.receives++] = transport.recv(t.peer, t.bytes, t.done, t.failed);
      }
    } catch (e) {
      // A transfer refused as it was posted (the worker closed): the step fails like any other.
      this.transferFailed(e);
    }
  }

  private readonly stepPending = (): boolean => this.stepOpen;

  private readonly transferDone = (): void => {
    if (--this.left === 0 && this.stepOpen) this.finishStep(undefined);
  };

  /** The step fails with the first failure; its receives still posted are cancelled. */
  private readonly transferFailed = (e: unknown): void => {
    if (!this.stepOpen) return;
    this.finishStep(e ?? new Error("transfer failed"));
    this.cancelStep();
  };

  private finishStep(e: unknown): void {
    this.stepOpen = false;
    if (e !== undefined) this.stepError = e;
    const w = this.waiter;
    this.waiter = undefined;
    w?.(e);
  }

  /**
   * An abort fails the waiting step at once with the run's reason and cancels its receives. Not
   * by the cancelled receives alone: a step may wait on a send only (a rendezvous to a member
   * whose shared-memory endpoint cannot fail: bootstrap.ts), which nothing would ever complete.
   * Such a send's late callbacks find the step closed (an aborted run breaks its group, so no
   * later step of this instance runs) and UCX keeps its buffer until the worker closes.
   */
  private readonly abortStep = (): void => {
    this.transferFailed(this.run?.reason ?? new Error("aborted"));
  };

  /** Cancels the waiting step's receives (those already complete are not in UCX any more: no effect). */
  private readonly cancelStep = (): void => {
    const t = this.transport;
    if (!t) return;
    for (let i = 0; i < this.receives; i++) t.cancel(this.receiveIds[i]!);
    this.receives = 0;
  };
}
