/**
 * Every member of a plan in one process, over an in-memory transport that keeps UCX's ordering
 * promise (per sender and receiver, first sent is first received): checks a plan's message
 * pattern and data movement for any member count in milliseconds, without processes. The real
 * transport is checked by the multi-process tests.
 */
import { normalize } from "../../src/ucg/request.ts";
import { PlanInstance, RunControl, type Transport } from "../../src/ucg/instance.ts";
import type { PlanTemplate } from "../../src/ucg/plans/base/plan_base.ts";
import type { CollectiveArray } from "../../src/ucg/index.ts";
import { expectedOf, firstDifference, opOf, sendOf, type Case } from "./ucg-reference.ts";

class Mailboxes {
  private readonly queues = new Map<string, Uint8Array[]>();
  private readonly waiting = new Map<string, ((m: Uint8Array) => void)[]>();
  messages = 0;
  put(from: number, to: number, bytes: Uint8Array): void {
    const key = `${from}>${to}`;
    this.messages++;
    const w = this.waiting.get(key)?.shift();
    if (w) w(bytes.slice());
    else (this.queues.get(key) ?? this.queues.set(key, []).get(key)!).push(bytes.slice());
  }
  take(from: number, to: number): Promise<Uint8Array> {
    const key = `${from}>${to}`;
    const m = this.queues.get(key)?.shift();
    if (m) return Promise.resolve(m);
    return new Promise((resolve) => (this.waiting.get(key) ?? this.waiting.set(key, []).get(key)!).push(resolve));
  }
  leftover(): number {
    return [...this.queues.values()].reduce((n, q) => n + q.length, 0) + [...this.waiting.values()].reduce((n, q) => n + q.length, 0);
  }
}

/** Runs `template` for case `c` on `size` simulated members (`inPlace`: receive buffer = send buffer); returns a problem or undefined. */
export async function simulate(template: PlanTemplate, c: Case, size: number, tunables: Record<string, number>, options: { inPlace?: boolean } = {}): Promise<string | undefined> {
  const boxes = new Mailboxes();
  const results: (CollectiveArray | undefined)[] = [];
  const runs = Array.from({ length: size }, async (_, rank) => {
    const send = sendOf(c, size, rank);
    // In place (allreduce): the result lands in the send buffer itself.
    const spec = c.coll === "bcast" ? { recv: send } : c.coll === "scatter" ? { send, recv: undefined as never } : options.inPlace ? { send, recv: send } : { send };
    const scatterRecv = c.coll === "scatter" ? (await import("../../src/ucg/index.ts")).DATATYPES[c.dtype].create(c.count) : undefined;
    const n = normalize(c.coll, { ...spec, recv: scatterRecv ?? (spec as { recv?: CollectiveArray }).recv, op: opOf(c), root: c.root }, rank, size);
    const constant = template.build({ rank, size, count: n.count, root: n.root, commutative: n.op?.commutative ?? true, elementSize: n.datatype.size }, tunables);
    const instance = new PlanInstance(constant, { send: n.send, recv: n.recv, scratch: n.datatype.create(constant.scratchCount) }, n.datatype, n.op);
    const transport: Transport = {
      // A send completes at once (as a small send does over UCX), a receive once its message is there.
      send: (peer, bytes, done) => {
        boxes.put(rank, peer, bytes);
        done();
      },
      recv: (peer, bytes, done) => {
        void boxes.take(peer, rank).then((m) => {
          bytes.set(m.subarray(0, Math.min(m.length, bytes.length)));
          done(m.length);
        });
        return 0;
      },
      cancel: () => {},
    };
    await instance.execute(transport, new RunControl());
    results[rank] = n.result;
  });
  let timer: ReturnType<typeof setTimeout> | undefined;
  const stuck = new Promise<string>((resolve) => (timer = setTimeout(() => resolve("deadlock: some member never finished"), 2000)));
  const problem = await Promise.race([Promise.all(runs).then(() => undefined, (e: Error) => `threw: ${e.message}`), stuck]);
  clearTimeout(timer);
  if (problem) return problem;
  if (boxes.leftover() > 0) return `${boxes.leftover()} messages or receives left unmatched`;
  for (let rank = 0; rank < size; rank++) {
    const d = firstDifference(results[rank], expectedOf(c, size, rank));
    if (d) return `rank ${rank}: ${d}`;
  }
  return undefined;
}
