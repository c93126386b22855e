/**
 * Phases: the steps of a plan (seed: "phase execution framework"). A phase is one of
 *  - send: a region of a buffer to a member,
 *  - recv: a message from a member into a region (the receive itself; a received region that a
 *    later send phase sends again is *forwarded* without a copy: the send reads the region the
 *    receive filled, as the seed's "recv then send" case asks),
 *  - reduce: target = source (op) target, or target (op) source (operand order matters for
 *    non-commutative ops: the lower ranks' data always goes on the left); with an `operand`
 *    region, that region stands in for target on the right-hand side (target = source (op)
 *    operand): a plan reduces the caller's send buffer straight into the result, without first
 *    copying the whole vector into it,
 *  - copy: a local move between buffers (rotations, packing).
 * There is no RECV_THEN_SEND type (the seed forbids the combination): a forward is a recv phase
 * in one step and a send phase of the same region in the next.
 *
 * Regions are (buffer, offset, count) in elements: plans think of every buffer as contiguous and
 * starting at 0 (seed: "plan always considers the buffer to start at address 0"); the instance
 * binds the names to the caller's arrays.
 */
export type BufferName = "send" | "recv" | "scratch";

export interface Region {
  readonly buffer: BufferName;
  readonly offset: number;
  readonly count: number;
}

export type Phase =
  | { readonly type: "send"; readonly peer: number; readonly region: Region }
  | { readonly type: "recv"; readonly peer: number; readonly region: Region }
  | { readonly type: "reduce"; readonly target: Region; readonly source: Region; readonly sourceFirst: boolean; readonly operand?: Region }
  | { readonly type: "copy"; readonly target: Region; readonly source: Region };

/**
 * A step: phases that run together. Its send and recv phases are all posted at once and awaited
 * together; then its reduce and copy phases run in order. Steps run one after another.
 */
export interface Step {
  readonly transfers: readonly Phase[];
  readonly local: readonly Phase[];
}

export const region = (buffer: BufferName, offset: number, count: number): Region => ({ buffer, offset, count });

/** Builds a plan's steps in order; a step with nothing in it is dropped. */
export class StepBuilder {
  readonly steps: Step[] = [];
  step(transfers: Phase[], local: Phase[] = []): this {
    if (transfers.length > 0 || local.length > 0) this.steps.push({ transfers, local });
    return this;
  }
  local(...phases: Phase[]): this {
    return this.step([], phases);
  }
}

export const send = (peer: number, r: Region): Phase => ({ type: "send", peer, region: r });
export const recv = (peer: number, r: Region): Phase => ({ type: "recv", peer, region: r });
export const reduce = (target: Region, source: Region, sourceFirst: boolean, operand?: Region): Phase =>
  operand ? { type: "reduce", target, source, sourceFirst, operand } : { type: "reduce", target, source, sourceFirst };
export const copy = (target: Region, source: Region): Phase => ({ type: "copy", target, source });
