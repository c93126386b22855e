/**
 * Every member of a plan in one process, over an in-memory transport that keeps UCX's ordering
 * promise (per sender and receiver, first sent is first received): checks a plan's message
 * pattern and data movement for any member count in milliseconds, without processes. The real
 * transport is checked by the multi-process tests.
 *
 * `rendezvous` models a large message over UCX instead of a small one: the receiver reads the
 * sender's memory itself, a few microtask turns after both are posted, and the send completes
 * only a while after that (the acknowledgement). The sender's memory must not change in between:
 * each send's bytes are snapshotted as it is posted and compared when the receiver reads them and
 * when the send completes, so a plan or instance that writes what an unfinished send reads fails
 * whether or not the result happens to come out right.
 */
import { normalize } from "../../src/ucg/request.ts";
import { PlanInstance, RunControl, type Transport } from "../../src/ucg/instance.ts";
import type { PlanTemplate } from "../../src/ucg/plans/base/plan_base.ts";
import type { CollectiveArray } from "../../src/ucg/index.ts";
import { expectedOf, firstDifference, opOf, sendOf, type Case } from "./ucg-reference.ts";

/** A message in flight: its bytes (a copy when eager; the sender's own memory over rendezvous). */
interface Message {
  readonly bytes: Uint8Array;
  /** Rendezvous: what the sender's memory held when the send was posted, and its completion. */
  readonly snapshot?: Uint8Array;
  readonly sent?: () => void;
}

class Mailboxes {
  private readonly queues = new Map<string, Message[]>();
  private readonly waiting = new Map<string, ((m: Message) => void)[]>();
  messages = 0;
  put(from: number, to: number, m: Message): void {
    const key = `${from}>${to}`;
    this.messages++;
    const w = this.waiting.get(key)?.shift();
    if (w) w(m);
    else (this.queues.get(key) ?? this.queues.set(key, []).get(key)!).push(m);
  }
  take(from: number, to: number): Promise<Message> {
    const key = `${from}>${to}`;
    const m = this.queues.get(key)?.shift();
    if (m) return Promise.resolve(m);
    return new Promise((resolve) => (this.waiting.get(key) ?? this.waiting.set(key, []).get(key)!).push(resolve));
  }
  leftover(): number {
    return [...this.queues.values()].reduce((n, q) => n + q.length, 0) + [...this.waiting.values()].reduce((n, q) => n + q.length, 0);
  }
}

/** Lets `turns` microtask turns pass (other members' steps, and their reduces, run meanwhile). */
async function turns(n: number): Promise<void> {
  for (let i = 0; i < n; i++) await undefined;
}

/**
 * Runs `template` for case `c` on `size` simulated members (`inPlace`: receive buffer = send
 * buffer; `rendezvous`: sends read late and complete later, see above); returns a problem or undefined.
 */
export async function simulate(template: PlanTemplate, c: Case, size: number, tunables: Record<string, number>, options: { inPlace?: boolean; rendezvous?: boolean } = {}): Promise<string | undefined> {
  const boxes = new Mailboxes();
  const overwritten: string[] = [];
  const checkUnchanged = (m: Message, what: string): void => {
    if (m.snapshot && m.bytes.some((b, i) => b !== m.snapshot![i])) overwritten.push(what);
  };
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
      // Eager: a send completes at once (as a small send does over UCX), a receive once its
      // message is there. Rendezvous: the receive reads the sender's memory 3 turns after both
      // are posted, the send completes 40 turns after that; both check the memory is as posted.
      send: (peer, bytes, done) => {
        if (!options.rendezvous) {
          boxes.put(rank, peer, { bytes: bytes.slice() });
          return done();
        }
        boxes.put(rank, peer, { bytes, snapshot: bytes.slice(), sent: done });
      },
      recv: (peer, bytes, done) => {
        void boxes.take(peer, rank).then(async (m) => {
          const what = `member ${peer}'s ${m.bytes.length}-byte send to member ${rank} (byte offset ${m.bytes.byteOffset})`;
          if (m.sent) await turns(3);
          checkUnchanged(m, `${what} was overwritten before the receiver read it`);
          bytes.set(m.bytes.subarray(0, Math.min(m.bytes.length, bytes.length)));
          done(m.bytes.length);
          if (!m.sent) return;
          await turns(40);
          checkUnchanged(m, `${what} was overwritten before it completed`);
          m.sent();
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
  // A send overwritten in flight first: it is the cause of any wrong result below.
  if (overwritten.length > 0) return overwritten[0];
  if (problem) return problem;
  if (boxes.leftover() > 0) return `${boxes.leftover()} messages or receives left unmatched`;
  for (let rank = 0; rank < size; rank++) {
    const d = firstDifference(results[rank], expectedOf(c, size, rank));
    if (d) return `rank ${rank}: ${d}`;
  }
  return undefined;
}
