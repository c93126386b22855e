/**
 * Bootstrap: every process learns every other's worker address, through rank 0's listener only
 * (so the same script runs on one host or many: no shared files, no launcher cooperation beyond
 * the rte's variables).
 *  1. rank 0 listens on UCX_TS_ROOT_ADDR's port (ucx-ts's hello listener, authenticated when the
 *     job has a secret: bootstrap-secret.ts); the others connect to it, retrying until it is up,
 *     and send their rank, host name and worker address (bootstrap-wire.ts);
 *  2. rank 0 sends everyone the table of all of them (its length first, then the table);
 *  3. every process connects to every other by worker address (raw 64-bit tags, error handling
 *     as configured; to a process on this host, with "peer", a shared-memory endpoint and a
 *     "peer" one that only watches it, on the watch worker where both have one: channel.ts) and
 *     exchanges one control message on each endpoint (on the data endpoint: the watch worker's address),
 *     so that every link is wired up (and a process that dies later is seen by all: each holds a
 *     live connection to it);
 *  4. the hello endpoints and the listener are closed (in the background).
 */
import { hostname } from "node:os";
import process from "node:process";
import type { Endpoint } from "../core/endpoint.ts";
import { UcxError } from "../core/errors.ts";
import type { Worker } from "../core/worker.ts";
import { Channel, makeHeader, MAX_GROUP_ID } from "./channel.ts";
import { CONTROL_COLL_TYPE } from "./coll-type.ts";
import type { Rte } from "./rte.ts";
import type { HelloAuthOptions } from "../core/hello/auth.ts";
import { type BootstrapTable, decodeHello, decodeTable, decodeTableLength, encodeHello, encodeTable, HELLO_CAPACITY } from "./bootstrap-wire.ts";

const TAG_HELLO = 1;
const TAG_TABLE_LENGTH = 2;
const TAG_TABLE = 3;

async function within<T>(p: Promise<T>, deadline: number, what: string): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const left = Math.max(0, deadline - Date.now());
  try {
    return await Promise.race([
      p,
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new UcxError("UCS_ERR_TIMED_OUT", `bootstrap: ${what} did not happen within the bootstrap timeout`, { status: -20 })), left);
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}

export function thisHost(env: Readonly<Record<string, string | undefined>> = process.env): string {
  return env.UCX_TS_HOSTNAME || hostname();
}

/** Runs the bootstrap and fills `channel` with an endpoint to every other process. */
export async function bootstrap(worker: Worker, channel: Channel, rte: Rte, options: { timeoutMs: number; host: string; auth?: HelloAuthOptions; sharedMemory?: boolean; watch?: Worker }): Promise<BootstrapTable> {
  const own = await worker.address();
  if (rte.size === 1) return { addresses: [own], hosts: [options.host] };
  const deadline = Date.now() + options.timeoutMs;
  const root = rte.root!;
  let table: BootstrapTable;
  const helloEndpoints: Endpoint[] = [];
  let listener: Awaited<ReturnType<Worker["listen"]>> | undefined;
  try {
    if (rte.rank === 0) {
      const accepted: Endpoint[] = [];
      let wake: (() => void) | undefined;
      listener = await worker.listen({
        port: root.port,
        auth: options.auth,
        onConnection: (ep: Endpoint) => {
          accepted.push(ep);
          wake?.();
        },
      } as Parameters<Worker["listen"]>[0]);
      const hosts: string[] = new Array(rte.size);
      const addresses: Uint8Array[] = new Array(rte.size);
      hosts[0] = options.host;
      addresses[0] = own;
      let got = 1;
      const pending: Promise<void>[] = [];
      const take = async (ep: Endpoint) => {
        const buf = new Uint8Array(HELLO_CAPACITY);
        const { length } = await ep.recv(buf, TAG_HELLO);
        const h = decodeHello(buf.subarray(0, length));
        if (h.rank < 1 || h.rank >= rte.size || addresses[h.rank]) throw new UcxError("UCX_TS_PROTOCOL_ERROR", `bootstrap: a process says it is rank ${h.rank} (of ${rte.size}), which is taken or out of range`);
        hosts[h.rank] = h.host;
        addresses[h.rank] = h.address;
        got++;
      };
      while (helloEndpoints.length < rte.size - 1) {
        if (accepted.length === 0) await within(new Promise<void>((r) => (wake = r)), deadline, `${rte.size - 1 - helloEndpoints.length} of ${rte.size - 1} processes connecting to rank 0 (port ${root.port})`);
        const ep = accepted.shift();
        if (!ep) continue;
        helloEndpoints.push(ep);
        pending.push(take(ep));
      }
      await within(Promise.all(pending), deadline, "every process's worker address reaching rank 0");
      if (got !== rte.size) throw new UcxError("UCX_TS_PROTOCOL_ERROR", "bootstrap: missing worker addresses");
      table = { hosts, addresses };
      const bytes = encodeTable(hosts, addresses);
      const length = new Uint8Array(8);
      new DataView(length.buffer).setUint32(0, bytes.length, true);
      await within(Promise.all(helloEndpoints.flatMap((ep) => [ep.send(length, TAG_TABLE_LENGTH), ep.send(bytes, TAG_TABLE)])), deadline, "sending the address table");
    } else {
      let ep: Endpoint | undefined;
      let lastError: unknown;
      while (!ep) {
        if (Date.now() > deadline) throw new UcxError("UCS_ERR_TIMED_OUT", `bootstrap: could not reach rank 0 at ${root.host}:${root.port} (${String((lastError as Error)?.message ?? lastError)})`, { status: -20, cause: lastError });
        try {
          ep = await worker.connect({ host: root.host, port: root.port }, { auth: options.auth });
        } catch (e) {
          // Refused for the secret: retrying cannot help (bootstrap-secret.ts).
          if (e instanceof UcxError && e.code === "UCX_TS_AUTH_FAILED") throw e;
          lastError = e;
          await new Promise((r) => setTimeout(r, 50));
        }
      }
      helloEndpoints.push(ep);
      await within(ep.send(encodeHello(rte.rank, options.host, own), TAG_HELLO), deadline, "sending this process's address to rank 0");
      const length = new Uint8Array(8);
      await within(ep.recv(length, TAG_TABLE_LENGTH), deadline, "the address table's length from rank 0");
      const bytes = new Uint8Array(decodeTableLength(length, rte.size));
      await within(ep.recv(bytes, TAG_TABLE), deadline, "the address table from rank 0");
      table = decodeTable(bytes, rte.size);
    }
    // Every process to every other, by worker address, and one message each way to wire them up.
    // A process on this host, when the worker's error handling is "peer": the collectives' messages
    // go on an endpoint without error handling, which UCX lets use shared memory (8 B one-way
    // ~0.2 us against tcp's ~9.4 us here: docs/guide.md), and a second, "peer" endpoint over tcp
    // carries nothing but reports the process's death (its socket closes), so a dying member still
    // makes the others' collectives reject. That watching endpoint is on the watch worker when both
    // ends have one (options.watch: its address rides on the first message of the data endpoint),
    // else on the worker itself.
    const others = Array.from({ length: rte.size }, (_, r) => r).filter((r) => r !== rte.rank);
    const split = (r: number) => options.sharedMemory && worker.errorHandling === "peer" && table.hosts[r] === options.host;
    const eps = await within(
      Promise.all(others.map((r) => worker.connect(table.addresses[r]!, split(r) ? { errorHandling: "none" } : {}))),
      deadline,
      "connecting to every process by worker address",
    );
    const watch = options.watch;
    const ownWatch = watch ? await watch.address() : new Uint8Array(0);
    const theirWatch = await within(
      Promise.all(others.map(async (r, i) => {
        const buf = new Uint8Array(HELLO_CAPACITY);
        const [, got] = await Promise.all([eps[i]!.send(ownWatch, makeHeader(CONTROL_COLL_TYPE, rte.rank, MAX_GROUP_ID)), channel.recv(buf, makeHeader(CONTROL_COLL_TYPE, r, MAX_GROUP_ID))]);
        return buf.slice(0, (got as { length: number }).length);
      })),
      deadline,
      "the first message with every process",
    );
    // The watching endpoints (split peers only), on the watch worker where both ends have one.
    const onWatch = (i: number) => watch !== undefined && theirWatch[i]!.length > 0;
    const watches = await within(
      Promise.all(others.map(async (r, i) => (!split(r) ? undefined : onWatch(i) ? await watch!.settled(watch!.connect(theirWatch[i]!)) : await worker.connect(table.addresses[r]!)))),
      deadline,
      "connecting a watching endpoint to every process on this host",
    );
    others.forEach((r, i) => channel.addEndpoint(r, eps[i]!, watches[i]));
    const none = new Uint8Array(0);
    await within(
      Promise.all(others.flatMap((r, i) => {
        const w = watches[i];
        if (!w) return [];
        const send = w.send(none, makeHeader(CONTROL_COLL_TYPE, rte.rank, MAX_GROUP_ID));
        // The watch worker's own operations are driven by its settled(): the caller's settled()
        // (context.ts) drives the collectives' worker only.
        if (!onWatch(i)) return [send, channel.recv(new Uint8Array(0), makeHeader(CONTROL_COLL_TYPE, r, MAX_GROUP_ID))];
        return [watch!.settled(send), watch!.settled(watch!.recv(new Uint8Array(0), makeHeader(CONTROL_COLL_TYPE, r, MAX_GROUP_ID)))];
      })),
      deadline,
      "the first message on every watching endpoint",
    );
    return table;
  } finally {
    // Closing the hello endpoints takes a round trip each (~0.1-0.8 s on 2 busy cores): done in
    // the background, the collectives do not wait for it (their endpoints are others).
    void Promise.all(helloEndpoints.map((ep) => ep.close().catch(() => {}))).then(() => listener?.close().catch(() => {}));
  }
}
