/**
 * The coordinator's side of each operation, on one connection to a peer (peer.ts echoes): every
 * byte that comes back is compared with the payload sent, every get with the put before it,
 * every fetch-add with the count kept here. Resolves with the bytes verified; throws a UcxError
 * when the endpoint fails, or a CorruptionError when bytes differ.
 */
import type { Endpoint, RemoteKey } from "../../src/index.ts";
import { COUNTER_OFFSET, type Control, dataTag, encode, type OpKind, payload, REGION, sameBytes, TAG } from "./protocol.ts";

/** amSend protocols the soak picks from, "auto" (the default) weighted as the others together. */
const AM_PROTOCOLS = ["auto", "auto", "auto", "eager", "rndv", "ucx"] as const;

export class CorruptionError extends Error {
  override name = "CorruptionError";
}

/** One operation at a time through `run`, in call order. */
export class Lock {
  private tail: Promise<unknown> = Promise.resolve();
  run<T>(body: () => Promise<T>): Promise<T> {
    const mine = this.tail.then(body, body);
    this.tail = mine.catch(() => {});
    return mine;
  }
}

export interface Connection {
  readonly slot: number;
  readonly ep: Endpoint;
  readonly rkey: RemoteKey;
  readonly address: number;
  /** The peer's counter as this side has counted it (read afresh on each connection). */
  counter: bigint;
  /** Set when a fault was injected into this connection: its failures are expected. */
  faulted: string | undefined;
  readonly stream: Lock;
  readonly am: Lock;
  readonly rma: Lock;
  /** The coordinator's worker.settled (a UcxRequest's Promise is not one the worker drives by itself in polling mode). */
  readonly settled: <T>(p: Promise<T>) => Promise<T>;
}

export const control = (ep: Endpoint, c: Control) => ep.send(encode(c), TAG.CONTROL);

/**
 * The echo's receive is posted before the sends; on a failed endpoint a send throws at once
 * (before Promise.all has the receive), so the receive's rejection is handled here too.
 */
export function posted<T>(p: Promise<T>): Promise<T> {
  p.catch(() => {});
  return p;
}

/**
 * Operations whose parts are not all settled yet. An operation ends (Promise.all) at its first
 * failure, but on a faulted endpoint its echo receive can stay posted, holding its buffer (up to
 * 16 MiB), until the library fails or closes the endpoint (seconds after a peer is killed): the
 * soak's at-rest readings, which waited only for the operations in flight, caught 8-16 MiB of
 * such payloads in a third of them (10-minute soak, seed 47, 2026-11-26). They now wait for
 * these too. (Waiting for every part before the operation ends stalled all four lanes on a killed
 * peer's endpoint for tens of seconds.)
 */
let lingering = 0;
export const lingeringOps = () => lingering;

export function all<T extends readonly unknown[]>(parts: T): Promise<{ -readonly [K in keyof T]: Awaited<T[K]> }> {
  lingering++;
  void Promise.allSettled(parts).then(() => lingering--);
  return Promise.all(parts);
}

/** Sizes from 0 B to 16 MiB, most of them small: log-uniform within three bands. */
export function randomSize(rand: () => number, max = 16 * 2 ** 20): number {
  const r = rand();
  const band = r < 0.7 ? [0, 4096] : r < 0.9 ? [4096, 2 ** 20] : [2 ** 20, max];
  if (band[0] === 0) return Math.min(max, Math.floor(rand() * band[1]!));
  return Math.min(max, Math.floor(band[0]! * (band[1]! / band[0]!) ** rand()));
}

/** `maxSize` caps every payload (the soak's --max-size: many more operations a minute, to tell a per-operation leak from allocator noise). */
export async function runOp(kind: OpKind, c: Connection, id: number, rand: () => number, maxSize = 16 * 2 ** 20): Promise<number> {
  const ep = c.ep;
  const size = (max: number) => randomSize(rand, Math.min(max, maxSize));
  const tag = dataTag(id);
  switch (kind) {
    case "tag": {
      // A third of them a window: `sendMany` / `recvMany` both ways (the peer echoes it the
      // same way), 1-8 messages, most small, some past sendMany's 64 KiB (sent one by one).
      if (rand() < 1 / 3) {
        const n = 1 + Math.floor(rand() * 8);
        const frames = Array.from({ length: n }, (_, i) => payload(size(2 ** 18), id * 8 + i));
        const back = frames.map((f) => new Uint8Array(f.length));
        const echo = posted(ep.recvMany(back, tag + 1));
        const [, , got] = await all([control(ep, { op: "tag", id, sizes: frames.map((f) => f.length), window: true }), ep.sendMany(frames, tag), echo] as const);
        if (got.length !== n || got.some((g, i) => g.length !== frames[i]!.length || !sameBytes(frames[i]!, back[i]!))) throw new CorruptionError(`window echo ${id} (${n} messages) differs`);
        return 2 * frames.reduce((sum, f) => sum + f.length, 0);
      }
      const out = payload(size(16 * 2 ** 20), id);
      const back = new Uint8Array(out.length);
      const echo = posted(ep.recv(back, tag + 1));
      await all([control(ep, { op: "tag", id, sizes: [out.length] }), ep.send(out, tag), echo]);
      if (!sameBytes(out, back)) throw new CorruptionError(`tag echo ${id} (${out.length} B) differs`);
      return 2 * out.length;
    }
    case "request": {
      // The same echo as "tag" (the peer cannot tell), through UcxRequests and their Promises.
      const out = payload(size(16 * 2 ** 20), id);
      const back = new Uint8Array(out.length);
      const echo = ep.recvRequest(back, tag + 1);
      const sent = ep.sendRequest(out, tag);
      await all([control(ep, { op: "tag", id, sizes: [out.length] }), c.settled(sent.promise), posted(c.settled(echo.promise))]);
      if (!echo.done || echo.result().length !== out.length || !sameBytes(out, back)) throw new CorruptionError(`request echo ${id} (${out.length} B) differs`);
      return 2 * out.length;
    }
    case "stream":
      return c.stream.run(async () => {
        const out = payload(1 + size(16 * 2 ** 20), id); // a stream has no 0-byte message
        const back = new Uint8Array(out.length);
        const echo = posted(ep.streamRecv(back));
        await all([control(ep, { op: "stream", id, sizes: [out.length] }), ep.streamSend(out), echo]);
        if (!sameBytes(out, back)) throw new CorruptionError(`stream echo ${id} (${out.length} B) differs`);
        return 2 * out.length;
      });
    case "multi": {
      const n = Math.floor(rand() * 6);
      const frames = Array.from({ length: n }, (_, i) => payload(size(4 * 2 ** 20), id * 8 + i));
      const echo = posted(ep.recvMulti(tag + 1));
      const [, , got] = await all([control(ep, { op: "multi", id, sizes: frames.map((f) => f.length) }), ep.sendMulti(frames, tag), echo] as const);
      if (got.length !== n || got.some((g, i) => !sameBytes(g, frames[i]!))) throw new CorruptionError(`multi-buffer echo ${id} (${n} frames) differs`);
      return 2 * frames.reduce((s, f) => s + f.length, 0);
    }
    case "am":
      return c.am.run(async () => {
        const out = payload(size(2 ** 20), id);
        const header = payload(Math.floor(rand() * 64), id + 1);
        // Every wire protocol (send-protocol.ts): "auto" half the time, else forced or UCX's choice.
        const protocol = AM_PROTOCOLS[Math.floor(rand() * AM_PROTOCOLS.length)];
        const echo = posted(ep.amRecv());
        await all([control(ep, { op: "am", id, sizes: [out.length] }), ep.amSend(out, { header, protocol }), echo]);
        const m = await echo;
        if (!sameBytes(out, m.data) || !sameBytes(header, m.header)) throw new CorruptionError(`active message echo ${id} (${out.length} B) differs`);
        return 2 * out.length + 2 * header.length;
      });
    case "rma":
      return c.rma.run(async () => {
        const n = size(16 * 2 ** 20);
        const offset = Math.floor(rand() * (REGION - n + 1));
        const out = payload(n, id);
        const back = new Uint8Array(n);
        await ep.put(out, c.address + offset, c.rkey);
        await ep.flush();
        await ep.get(back, c.address + offset, c.rkey);
        await ep.flush();
        if (!sameBytes(out, back)) throw new CorruptionError(`get after put ${id} (${n} B at ${offset}) differs`);
        return 2 * n;
      });
    case "atomic":
      return c.rma.run(async () => {
        const old = (await ep.atomic("add", c.address + COUNTER_OFFSET, c.rkey, 1n, { fetch: true })) as bigint;
        if (old !== c.counter) throw new CorruptionError(`fetch-add ${id} returned ${old}, the count here is ${c.counter}`);
        c.counter++;
        return 8;
      });
  }
}
