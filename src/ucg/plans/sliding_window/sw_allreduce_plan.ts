/**
 * Allreduce by sliding window (UCC tl/ucp's sliding_window allreduce; sliding_window.ts has the
 * shape). Round k combines chunk k of every member's block: a member receives the chunk's
 * contributions `window` members at a time (one step per window: the window slides along the
 * contributors) into `window` scratch slots and folds each into its accumulator, while it sends
 * its own data for chunk k of the other members' blocks in the step where each of them expects
 * it. In round k + 1 the finished chunk k goes back to every member, `window` at a time, beside
 * chunk k + 1's contributions: the pipeline. Each member sends and receives about 2 (n-1)/n of
 * the vector, like the ring, in (chunks + 1) x ceil((n-1)/window) steps whose peers are all the
 * others (the ring's 2 (n-1) steps each wait on one neighbour, so one slow member stalls all).
 *
 * UCC reads the contributions with ucp_get and writes the results with ucp_put after exchanging
 * memory keys. Here they are tag messages over the group's channel: a plan is a fixed list of
 * send/recv/reduce/copy phases that instance.ts runs over the group's transport, and a one-sided
 * version would need get/put phases there, a memory registration of the caller's buffers per
 * request kept until the request is dropped (requests have no close), a key exchange per
 * request, and a closing barrier so that a member knows the others have finished reading its
 * send buffer and writing its receive buffer; a tag message carries the data and that
 * knowledge at once. Message order between two members is the order both compute here (UCX
 * matches equal tags first-in first-out): per step, contributions before results.
 *
 * Any op: a commutative one is combined from the owner's own data round the members; a
 * non-commutative one in rank order, in a scratch accumulator (in-place calls then still read
 * the owner's own data after the earlier ranks' have arrived).
 */
import { copy, recv, reduce, region, send, StepBuilder, type Phase, type Region } from "../../phase.ts";
import { mod, type PlanArgs, type PlanConstant, type PlanTemplate, type Tunables } from "../base/plan_base.ts";
import { contributionOrder, remotePosition, swChunks } from "./sliding_window.ts";

export const swAllreducePlan: PlanTemplate = {
  coll: "allreduce",
  id: 4,
  name: "sliding_window/sw_allreduce",
  commutativeOnly: false,
  configTable: "sliding_window",
  build({ rank, size, count, commutative, elementSize }: PlanArgs, t: Tunables): PlanConstant {
    const b = new StepBuilder();
    if (size === 1) return { steps: b.local(copy(region("recv", 0, count), region("send", 0, count))).steps, scratchCount: 0 };
    const cut = swChunks(count, size, elementSize, t.CHUNK_BYTES!);
    const others = size - 1;
    const window = t.WINDOW! === 0 ? others : Math.min(t.WINDOW!, others);
    const windows = Math.ceil(others / window);
    const order = contributionOrder(rank, size, commutative);
    const remote = order.filter((m) => m !== rank);
    // Each other member's place in my order, and mine in each other owner's (computed once).
    const placeIn = Array.from({ length: size }, (_, o) => (o === rank ? -1 : remotePosition(o, rank, size, commutative)));
    const accOffset = window * cut.chunk;
    for (let k = 0; k <= cut.rounds; k++) {
      const own = k < cut.rounds ? cut.at(rank, k) : undefined;
      const acc: Region | undefined = own && (commutative ? region("recv", own.offset, own.count) : region("scratch", accOffset, own.count));
      const slot = (q: number) => region("scratch", (q % window) * cut.chunk, own!.count);
      let applied = 0; // entries of `order` folded into acc so far
      const fold = (upTo: number, locals: Phase[]) => {
        for (; applied < upTo; applied++) {
          const m = order[applied]!;
          const source = m === rank ? region("send", own!.offset, own!.count) : slot(remote.indexOf(m));
          if (applied === 0) {
            // The first contribution starts the accumulator: copied if it is ours, received there if not.
            if (m === rank) locals.push(copy(acc!, source));
          } else locals.push(reduce(acc!, source, false));
        }
      };
      for (let j = 0; j < windows; j++) {
        const inWindow = (q: number) => q >= j * window && q < (j + 1) * window;
        const transfers: Phase[] = [];
        const locals: Phase[] = [];
        // Round k's contributions: mine to the owners whose window j I am in, theirs to me.
        if (k < cut.rounds) {
          for (let o = 0; o < size; o++) {
            const c = o === rank ? undefined : cut.at(o, k);
            if (c && inWindow(placeIn[o]!)) transfers.push(send(o, region("send", c.offset, c.count)));
          }
          if (own) {
            const last = Math.min((j + 1) * window, others);
            for (let q = j * window; q < last; q++) {
              const m = remote[q]!;
              transfers.push(recv(m, order[0] === m ? acc! : slot(q)));
            }
            fold(j === windows - 1 ? size : order.indexOf(remote[last - 1]!) + 1, locals);
            if (j === windows - 1 && !commutative) locals.push(copy(region("recv", own.offset, own.count), acc!));
          }
        }
        // Round k - 1's results: mine to members rank + 1 + q for q in window j, the owners' to me.
        if (k > 0) {
          const done = cut.at(rank, k - 1);
          if (done) {
            for (let q = j * window; q < Math.min((j + 1) * window, others); q++) transfers.push(send(mod(rank + 1 + q, size), region("recv", done.offset, done.count)));
          }
          for (let o = 0; o < size; o++) {
            const c = o === rank ? undefined : cut.at(o, k - 1);
            if (c && inWindow(mod(rank - o - 1, size))) transfers.push(recv(o, region("recv", c.offset, c.count)));
          }
        }
        b.step(transfers, locals);
      }
    }
    return { steps: b.steps, scratchCount: count === 0 ? 0 : accOffset + (commutative ? 0 : cut.chunk) };
  },
};
