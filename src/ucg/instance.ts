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

/** How an instance reaches the other members (the group gives it its channel and headers). */
export interface Transport {
  send(peer: number, bytes: Uint8Array): Promise<void>;
  recv(peer: number, bytes: Uint8Array, signal: AbortSignal): Promise<unknown>;
}

/** One step's time (ms): posting its sends and receives, waiting for them all, its reduces and copies. */
export interface StepTiming {
  /** How many sends and receives the step has (0: a local step, a copy or a reduce only). */
  readonly transfers: number;
  readonly post: number;
  readonly wait: number;
  readonly local: number;
}

type BoundTransfer = { send: boolean; peer: number; bytes: Uint8Array };
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
        const combine = op.combine;
        return p.sourceFirst ? () => combine(source, target, target) : () => combine(target, source, target);
      }
      throw new Error(`phase ${p.type} is not local`);
    };
    this.steps = constant.steps.map((s) => ({
      transfers: s.transfers.map((p) => {
        if (p.type !== "send" && p.type !== "recv") throw new Error(`phase ${p.type} is not a transfer`);
        const a = typed(p.region);
        return { send: p.type === "send", peer: p.peer, bytes: byteView(a, 0, a.length) };
      }),
      local: s.local.map(bindLocal),
    }));
  }

  /**
   * Runs every step in order; the first failure aborts `controller` (cancelling posted receives)
   * and rejects. With `stepTimes`, one entry per step is appended: where a step's time goes is
   * what shows the point-to-point engine's per-message cost inside a collective (bench/ucg.ts).
   */
  async execute(transport: Transport, controller: AbortController, stepTimes?: StepTiming[]): Promise<void> {
    for (let i = 0; i < this.steps.length; i++) {
      const step = this.steps[i]!;
      const t0 = stepTimes ? performance.now() : 0;
      let posted = t0;
      if (step.transfers.length === 1) {
        const p = this.start(step.transfers[0]!, transport, controller.signal);
        if (stepTimes) posted = performance.now();
        await p;
      } else if (step.transfers.length > 0) {
        const all = step.transfers.map((t) => this.start(t, transport, controller.signal));
        if (stepTimes) posted = performance.now();
        await Promise.all(all);
      }
      const completed = stepTimes ? performance.now() : 0;
      for (const run of step.local) run();
      if (stepTimes) stepTimes.push({ transfers: step.transfers.length, post: posted - t0, wait: completed - posted, local: performance.now() - completed });
    }
  }

  private async start(t: BoundTransfer, transport: Transport, signal: AbortSignal): Promise<void> {
    if (t.send) return transport.send(t.peer, t.bytes);
    const r = (await transport.recv(t.peer, t.bytes, signal)) as { length: number };
    if (r.length !== t.bytes.length) {
      // Both ends run the same plan: a length that differs means the members disagree on the call.
      throw new UcxError("UCX_TS_PROTOCOL_ERROR", `member ${t.peer} sent ${r.length} bytes where this plan expects ${t.bytes.length}: do all members call the collective with the same counts and root?`);
    }
  }
}
