/**
 * Alltoall by Bruck's algorithm: ceil(log2 n) steps instead of n - 1, each moving about half the
 * blocks (packed into one message), so it wins for small blocks. Scratch: the rotated blocks
 * (n), a pack and an unpack area (n/2 each, rounded up).
 *  1. rotate: work[i] = send block (r + i) mod n;
 *  2. for k = 1, 2, 4, ...: send the blocks i with bit k set to r + k, receive the same from r - k;
 *  3. work[i] then holds what rank r - i sent to r: recv block (r - i) mod n = work[i].
 */
import { copy, recv, region, send, StepBuilder, type Phase } from "../../phase.ts";
import { mod, type PlanArgs, type PlanConstant, type PlanTemplate } from "../base/plan_base.ts";

export const bruckAlltoallPlan: PlanTemplate = {
  coll: "alltoall",
  id: 1,
  name: "bruck/bruck_alltoall",
  commutativeOnly: false,
  build({ rank, size, count }: PlanArgs): PlanConstant {
    const n = size;
    const half = Math.ceil(n / 2);
    const work = (i: number) => region("scratch", i * count, count);
    const packAt = n * count;
    const unpackAt = packAt + half * count;
    const b = new StepBuilder();
    b.local(...Array.from({ length: n }, (_, i) => copy(work(i), region("send", mod(rank + i, n) * count, count))));
    for (let k = 1; k < n; k <<= 1) {
      const moved = Array.from({ length: n }, (_, i) => i).filter((i) => (i & k) !== 0);
      const pack: Phase[] = moved.map((i, j) => copy(region("scratch", packAt + j * count, count), work(i)));
      const unpack: Phase[] = moved.map((i, j) => copy(work(i), region("scratch", unpackAt + j * count, count)));
      b.local(...pack);
      b.step([send(mod(rank + k, n), region("scratch", packAt, moved.length * count)), recv(mod(rank - k, n), region("scratch", unpackAt, moved.length * count))], unpack);
    }
    b.local(...Array.from({ length: n }, (_, i) => copy(region("recv", mod(rank - i, n) * count, count), work(i))));
    return { steps: b.steps, scratchCount: (n + 2 * half) * count };
  },
};
