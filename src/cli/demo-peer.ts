/**
 * The second process of `ucx-ts demo` (`ucx-ts demo --peer HOST:PORT --tcp-port N --sizes ...`):
 * it connects to the first one over UCX and over node:net, then follows the schedule both sides
 * derive from the sizes: echo the pings, take in the bulk transfers, verify every byte of every
 * message, acknowledge. It prints one JSON line (its transports and what it verified) and exits.
 *
 * It never outlives its parent: a watchdog bounds its run, and it exits when the parent's
 * node:net connection goes away before the end.
 */
import { connect as netConnect, type Socket } from "node:net";
import process from "node:process";
import { USER_TAG_MASK, Worker, type Endpoint, type ErrorHandling, type ProgressMode } from "../index.ts";
import { BULK_ROUNDS, bulkSeed, patternFor, plan, receiveBuffer, StreamReader, TAG_ACK, TAG_BULK, TAG_BYE, TAG_FIN, TAG_PING, TAG_PONG, verify, writeAll, type Plan } from "./demo-protocol.ts";

export interface PeerOptions {
  readonly host: string;
  readonly port: number;
  readonly tcpPort: number;
  readonly sizes: readonly number[];
  readonly mode: ProgressMode;
  readonly errorHandling: ErrorHandling;
  readonly timeoutMs: number;
  /** Tests only: damage one byte of the first pong, which the demo must catch. */
  readonly corrupt?: boolean;
}

export interface PeerReport {
  readonly transports: string[];
  readonly verified: { messages: number; bytes: number };
}

export async function runPeer(o: PeerOptions, write: (text: string) => void): Promise<number> {
  let finished = false;
  const die = (why: string) => {
    if (finished) return;
    process.stderr.write(`ucx-ts demo --peer: ${why}\n`);
    process.exit(1);
  };
  const watchdog = setTimeout(() => die(`did not finish within ${o.timeoutMs} ms`), o.timeoutMs);
  const verified = { messages: 0, bytes: 0 };
  const check = (got: Uint8Array, pattern: Uint8Array, p: Plan, seed: number, what: string) => {
    verify(got, pattern, p.size, seed, `peer: ${what} of ${p.size} bytes (message ${seed})`);
    verified.messages++;
    verified.bytes += got.length;
  };

  const worker = await Worker.create({ progressMode: o.mode, errorHandling: o.errorHandling });
  let socket: Socket | undefined;
  try {
    const ep = await worker.connect({ host: o.host, port: o.port });
    socket = await new Promise<Socket>((resolve, reject) => {
      const s = netConnect({ host: o.host, port: o.tcpPort }, () => resolve(s));
      s.once("error", reject);
    });
    socket.setNoDelay(true);
    socket.on("close", () => die("the demo's node:net connection closed before the end"));
    const reader = new StreamReader(socket);
    // On the worker: no progress loop meanwhile. USER_TAG_MASK: the endpoint came through the
    // hello, its peer's tags carry a receive scope above the 48 user bits.
    const fin = worker.recv(new Uint8Array(8), TAG_FIN, USER_TAG_MASK);
    fin.catch(() => {});

    for (const size of o.sizes) {
      const p = plan(size);
      const pattern = patternFor(size);
      // The bulk phases' receive buffers, made (and their pages touched) before the timed part.
      const bulk = Array.from({ length: p.transfers }, () => receiveBuffer(p.size));
      await ucxEcho(ep, p, pattern, check, o.corrupt === true && size === o.sizes[0]);
      // A warm-up round is checked before its acknowledgement: checked after it, the check
      // would run while the demo's timed round is already sending.
      for (let round = 1; round <= BULK_ROUNDS; round++) await ucxSink(ep, p, pattern, check, bulk, round === BULK_ROUNDS);
      await tcpEcho(socket, reader, p, pattern, check);
      for (let round = 1; round <= BULK_ROUNDS; round++) await tcpSink(socket, reader, p, pattern, check, bulk, round === BULK_ROUNDS);
    }

    const transports = await ep.transports();
    await worker.settled(fin);
    finished = true; // from here on the demo may close the node:net connection at any time
    write(JSON.stringify({ transports, verified } satisfies PeerReport));
    await ep.send(new Uint8Array(8), TAG_BYE);
    let timer: ReturnType<typeof setTimeout> | undefined;
    await Promise.race([ep.close(), new Promise((r) => (timer = setTimeout(r, 10_000)))]);
    clearTimeout(timer);
  } finally {
    finished = true;
    clearTimeout(watchdog);
    socket?.destroy();
    await worker.close();
  }
  return 0;
}

type Check = (got: Uint8Array, pattern: Uint8Array, p: Plan, seed: number, what: string) => void;

/**
 * Pings come in on two alternating buffers and go straight back; verified while the pong is out.
 * The pong leaves before anything else is awaited: the next receive goes into the buffer of the
 * previous pong, whose send completion may still be on its way (a thread-mode completion comes
 * with a wake-up), and waiting for it first put that wake-up inside every timed round trip. A
 * ping that arrives before its receive is posted is held by UCX as unexpected and matched then.
 */
async function ucxEcho(ep: Endpoint, p: Plan, pattern: Uint8Array, check: Check, corrupt: boolean): Promise<void> {
  const bufs = [receiveBuffer(p.size), receiveBuffer(p.size)];
  const pongs: Promise<void>[] = [Promise.resolve(), Promise.resolve()];
  let recv = ep.recv(bufs[0]!, TAG_PING);
  for (let i = 0; i < p.pings; i++) {
    const r = await recv;
    const buf = bufs[i % 2]!;
    pongs[i % 2] = ep.send(corrupt && i === 0 ? damaged(buf) : buf, TAG_PONG);
    if (i + 1 < p.pings) {
      await pongs[(i + 1) % 2];
      recv = ep.recv(bufs[(i + 1) % 2]!, TAG_PING);
    }
    check(buf.subarray(0, r.length), pattern, p, i, "ucx-ts ping"); // while the pong is out
  }
  await Promise.all(pongs);
}

/**
 * Bulk transfers land in `bulk`, one buffer each, taken by windows of receives posted ahead (one
 * recvMany per window, UCX matches them in order). Every byte is verified; in the timed round
 * (`timed`) once the transfers are acknowledged: the sender's clock stops at the
 * acknowledgement, so checking is not timed. A warm-up round is checked before it.
 */
async function ucxSink(ep: Endpoint, p: Plan, pattern: Uint8Array, check: Check, bulk: Uint8Array[], timed: boolean): Promise<void> {
  const windows: Promise<{ length: number }[]>[] = [];
  for (let i = 0; i < p.transfers; i += p.window) windows.push(ep.recvMany(bulk.slice(i, i + p.window), TAG_BULK));
  const got = (await Promise.all(windows)).flat();
  const checkAll = () => got.forEach((r, i) => check(bulk[i]!.subarray(0, r.length), pattern, p, bulkSeed(p, i), "ucx-ts transfer"));
  if (!timed) checkAll();
  await ep.send(ackFor(p), TAG_ACK);
  if (timed) checkAll();
}

async function tcpEcho(socket: Socket, reader: StreamReader, p: Plan, pattern: Uint8Array, check: Check): Promise<void> {
  const bufs = [receiveBuffer(p.size), receiveBuffer(p.size)];
  const pongs: Promise<void>[] = [Promise.resolve(), Promise.resolve()];
  for (let i = 0; i < p.pings; i++) {
    const buf = bufs[i % 2]!;
    await pongs[i % 2]; // the socket may still hold this buffer from two pings ago
    await reader.read(buf);
    pongs[i % 2] = writeAll(socket, buf);
    check(buf, pattern, p, i, "node:net ping");
  }
  await Promise.all(pongs);
}

/** node:net's bulk phase the same way: every transfer read into its own buffer, verified after the acknowledgement. */
async function tcpSink(socket: Socket, reader: StreamReader, p: Plan, pattern: Uint8Array, check: Check, bulk: Uint8Array[], timed: boolean): Promise<void> {
  for (let i = 0; i < p.transfers; i++) await reader.read(bulk[i]!);
  const checkAll = () => bulk.forEach((b, i) => check(b, pattern, p, bulkSeed(p, i), "node:net transfer"));
  if (!timed) checkAll();
  await writeAll(socket, ackFor(p));
  if (timed) checkAll();
}

/** The acknowledgement of a bulk phase: 8 bytes, the number of transfers received. */
export function ackFor(p: Plan): Uint8Array {
  const ack = new Uint8Array(8);
  new DataView(ack.buffer).setUint32(0, p.transfers, true);
  new DataView(ack.buffer).setUint32(4, p.size, true);
  return ack;
}

function damaged(buf: Uint8Array): Uint8Array {
  const copy = buf.slice();
  copy[copy.length - 1]! ^= 1;
  return copy;
}
