/**
 * Allreduce on a ring: reduce-scatter (after n - 1 steps member r holds block r + 1 fully reduced)
 * then allgather of the reduced blocks. Commutative ops only: each block is combined in ring order.
 *
 * The caller's send buffer is read where it is: the first step sends the member's own block from
 * it, and each reduce adds the incoming partial block to the member's own block from it, writing
 * the result (every block of the result is either reduced into or received). A copy of the whole
 * vector into the result first cost 27-42 us per 1 MiB call at 2 ranks (bench/ucg-timeline.ts
 * --bytes 1048576, 2026-11-26) for bytes that were then overwritten. In place (recv = send) the
 * reduce reads and writes the same block, which the op allows.
 */
import { copy, recv, reduce, region, send, StepBuilder } from "../../phase.ts";
import { blockCount, blockOffset, mod, type PlanArgs, type PlanConstant, type PlanTemplate } from "../base/plan_base.ts";
import { ringNeighbours } from "./ring.ts";

export const ringAllreducePlan: PlanTemplate = {
  coll: "allreduce",
  id: 1,
  name: "ring/ring_allreduce",
  commutativeOnly: true,
  build({ rank, size, count }: PlanArgs): PlanConstant {
    const { left, right } = ringNeighbours(rank, size);
    const block = (buffer: "send" | "recv", i: number) => region(buffer, blockOffset(count, size, mod(i, size)), blockCount(count, size, mod(i, size)));
    const incoming = (i: number) => region("scratch", 0, blockCount(count, size, mod(i, size)));
    const b = new StepBuilder();
    if (size === 1) b.local(copy(region("recv", 0, count), region("send", 0, count)));
    for (let s = 0; s < size - 1; s++) {
      // Step 0 sends the own block as given; later steps the block reduced in the step before.
      const outgoing = s === 0 ? block("send", rank) : block("recv", rank - s);
      b.step([send(right, outgoing), recv(left, incoming(rank - s - 1))], [reduce(block("recv", rank - s - 1), incoming(rank - s - 1), true, block("send", rank - s - 1))]);
    }
    for (let s = 0; s < size - 1; s++) b.step([send(right, block("recv", rank + 1 - s)), recv(left, block("recv", rank - s))]);
    return { steps: b.steps, scratchCount: blockCount(count, size, 0) };
  },
};
