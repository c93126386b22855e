/**
 * Connections between ucx-ts workers by host and port: the hello over TCP (client.ts, server.ts),
 * then each side creates ONE endpoint to the other's worker address (`ucp_ep_create` by address),
 * and UCX joins the two into one connection.
 *
 * How UCX joins them (ucp_ep_match.c, ucp_wireup.c in UCX 1.13): every endpoint a worker creates
 * to a given peer worker gets the next number of a per-peer sequence (conn_sn). The wire-up
 * request carries it; the receiving worker looks for its own endpoint with the same number to
 * that sender, or keeps an internal one for its own next `ucp_ep_create` to claim. So the n-th
 * endpoint A creates to B joins the n-th endpoint B creates to A, whatever the timing. The hello
 * makes both ends take the same number (pairing.ts): the challenge and the proof carry each
 * side's count, the listener creates its endpoint as number T = the larger, the client as T too,
 * and whichever side was behind first creates fillers for the numbers in between. For the counts
 * to hold still meanwhile:
 * - a client runs its handshakes one at a time (`handshakes`), creating its endpoint before the
 *   next hello leaves;
 * - each side counts and creates synchronously (one event-loop task): the listener in the proof's
 *   data event, the client in the accept's continuation.
 * What this does not cover: endpoints between the same two workers made another way during the
 * handshake (a `connect(address)`, or the two workers connecting to each other's listeners at
 * once). The client sees those as a count that moved past T and fails with
 * UCX_TS_PAIRING_CROSSED. README, "Connecting", says so.
 */
import { UCS_STATUS } from "../../ffi/index.ts";
import { UcxError } from "../errors.ts";
import type { Endpoint, ErrorHandling } from "../endpoint.ts";
import type { Listener } from "../listener.ts";
import { checkWorkerAddress } from "../worker-address.ts";
import { sameBytes } from "../buffers.ts";
import { exchangeHello } from "./client.ts";
import { type Greeting, HelloKind, encodeRefusal, RefuseCode } from "./wire.ts";
import { HelloServer, type HelloAnswer, type Remote } from "./server.ts";
import { HelloLink } from "./link.ts";
import { fillerModes, type Pairing } from "./pairing.ts";
import type { Socket } from "node:net";

/** The worker-side operations a hello connection needs (worker.ts implements them). */
export interface HelloWorker {
  readonly errorHandling: ErrorHandling;
  /** Its worker address: the envelope (sent in the hello) or UCX's plain bytes (for checkWorkerAddress). */
  address(options?: { format?: "ucx-ts" | "ucx" }): Promise<Uint8Array>;
  settled<T>(p: Promise<T>): Promise<T>;
  allocateScope(): number;
  releaseScope(scope: number): void;
  /**
   * Submit `ucp_ep_create` to `address` now (synchronously: the submission order is the creation
   * order), for an endpoint whose receive scope is `scope` and whose peer's is `peerScope`.
   */
  endpointByAddress(
    address: Uint8Array,
    errorHandling: ErrorHandling,
    remote: Remote,
    scopes: { scope: number; peerScope: number; loopback?: boolean },
    fillers?: readonly ErrorHandling[],
  ): { endpoint: Endpoint; created: Promise<void> };
  /** Endpoints made by address so far to the worker of a plain UCX address (pairing.ts). */
  pairingCount(address: Uint8Array): number;
  /** Modes of those numbered [from, to). */
  pairingModes(address: Uint8Array, from: number, to: number): ErrorHandling[];
}

/**
 * The hello's connection stays open as the endpoint's link (link.ts). Its loss fails a "peer"
 * endpoint as UCX would (UCS_ERR_CONNECTION_RESET); a "none" endpoint promises no failure
 * detection (and could not be closed without a flush its dead peer never answers), so there it
 * only closes the link.
 */
function attachLink(endpoint: Endpoint, socket: Socket): void {
  endpoint.link = new HelloLink(socket, () => {
    if (endpoint.errorHandling === "peer" && !endpoint.closed && !endpoint.error) endpoint.fail(UCS_ERR_CONNECTION_RESET, "link");
  });
}

const UCS_ERR_CONNECTION_RESET = UCS_STATUS.UCS_ERR_CONNECTION_RESET;

/** Per client worker, the tail of its queue of handshakes. */
const handshakes = new WeakMap<object, Promise<unknown>>();

function oneAtATime<T>(worker: object, body: () => Promise<T>): Promise<T> {
  const previous = handshakes.get(worker) ?? Promise.resolve();
  const mine = previous.then(body, body);
  handshakes.set(
    worker,
    mine.catch(() => {}),
  );
  return mine;
}

/** `worker.connect({ host, port })`: the hello, then the endpoint, then a flush to see it connected. */
export async function connectWithHello(
  worker: HelloWorker,
  host: string,
  port: number,
  errorHandling: ErrorHandling,
  secret?: Uint8Array,
): Promise<Endpoint> {
  const own = await worker.settled(worker.address());
  const ownPlain = await worker.settled(worker.address({ format: "ucx" }));
  const endpoint = await oneAtATime(worker, async () => {
    const scope = worker.allocateScope();
    let scopeOwned = true; // until an endpoint holds it (the worker releases it with the endpoint)
    try {
      // What this side told the listener in its proof: the accept's modes are numbered from it.
      // (exchangeHello resolves only with an accept naming the same worker as the challenge.)
      let sent: { count: number; loopback: boolean; address: Uint8Array } | undefined;
      const pairing = (identity: Uint8Array, listenerCount: number): Pairing => {
        const plain = checkWorkerAddress(identity, ownPlain);
        const loopback = sameBytes(identity, own);
        const count = worker.pairingCount(plain);
        sent = { count, loopback, address: plain };
        // Our own worker: UCX pairs its endpoints to itself among themselves; nothing to fill.
        return { count, modes: loopback || count <= listenerCount ? [] : worker.pairingModes(plain, listenerCount, count) };
      };
      const { message: answer, socket } = await exchangeHello(host, port, { errorHandling, scope, address: own }, { secret, pairing });
      if (answer.kind === HelloKind.Refuse) {
        socket.destroy();
        throw new UcxError(answer.code === RefuseCode.Other ? "UCS_ERR_REJECTED" : "UCX_TS_AUTH_FAILED", `connect ${host}:${port}: the listener refused: ${answer.reason}`);
      }
      if (answer.kind !== HelloKind.Accept) {
        socket.destroy();
        throw new UcxError("UCX_TS_PROTOCOL_ERROR", `connect ${host}:${port}: the listener answered with kind ${answer.kind}`);
      }
      const peer = answer.greeting;
      if (peer.errorHandling !== errorHandling) {
        socket.destroy();
        throw new UcxError("UCX_TS_PROTOCOL_ERROR", `connect ${host}:${port}: the listener accepted with error handling '${peer.errorHandling}', this side asked for '${errorHandling}'`);
      }
      if (peer.scope === 0) {
        socket.destroy();
        throw new UcxError("UCX_TS_PROTOCOL_ERROR", `connect ${host}:${port}: the listener gave receive scope 0`);
      }
      let made;
      try {
        const address = sent!.address;
        // The listener is this worker's own: the two ends are paired here (Endpoint.loopPartner).
        const loopback = sent!.loopback;
        // Counted and created in this one task: nothing else can take a number in between.
        const fillers = loopback ? [] : fillerModes(worker.pairingCount(address), peer.pairing!.count, { from: sent!.count, modes: peer.pairing!.modes });
        made = worker.endpointByAddress(address, errorHandling, { host, port }, { scope, peerScope: peer.scope, loopback }, fillers);
        scopeOwned = false;
        await worker.settled(made.created);
      } catch (e) {
        socket.destroy();
        throw e;
      }
      attachLink(made.endpoint, socket);
      return made.endpoint;
    } catch (e) {
      if (scopeOwned) worker.releaseScope(scope);
      throw e;
    }
  });
  // The wire-up runs in the background; a flush ends when it is done (or fails, error handling
  // "peer", when the listener's worker cannot be reached), so a resolved connect is usable.
  try {
    await endpoint.flush();
  } catch (e) {
    await endpoint.close({ force: true }).catch(() => {});
    throw e;
  }
  return endpoint;
}

/** `worker.listen()` by default: the hello server, handing accepted endpoints to `listener`. */
export async function listenWithHello(
  worker: HelloWorker,
  listener: Listener,
  options: { host: string; port: number; errorHandling: ErrorHandling; maxPendingHandshakes?: number; handshakeTimeoutMs?: number; secret?: Uint8Array },
): Promise<HelloServer> {
  const own = await worker.settled(worker.address());
  // The listener's own plain address: checkWorkerAddress needs it to refuse a crafted address
  // whose transport addresses are cut short (worker-address.ts).
  const ownPlain = await worker.settled(worker.address({ format: "ucx" }));
  // Called only for a client that has proven it holds the secret, on an authenticated listener.
  const onHello = async (
    hello: Greeting,
    remote: Remote,
    encodeAccept: (g: Greeting) => Uint8Array,
    pairing: { readonly listenerCount: number; readonly client: Pairing },
  ): Promise<HelloAnswer> => {
    if (hello.errorHandling !== options.errorHandling) {
      const reason = `error handling '${hello.errorHandling}' asked, this listener's endpoints use '${options.errorHandling}' (both sides must agree)`;
      listener.reportError(new UcxError("UCS_ERR_REJECTED", `connection from ${remote.host}:${remote.port} refused: ${reason}`));
      return { answer: encodeRefusal(reason) };
    }
    if (hello.scope === 0) throw new UcxError("UCX_TS_PROTOCOL_ERROR", `connection from ${remote.host}:${remote.port}: receive scope 0`);
    const address = checkWorkerAddress(hello.address, ownPlain); // throws a UcxError: the connection is dropped and reported
    const loopback = sameBytes(hello.address, own);
    // Counted and created in this one task (the proof's data event): see the top of this file.
    const ours = worker.pairingCount(address);
    const target = loopback ? ours : Math.max(ours, pairing.client.count);
    const fillers = loopback ? [] : fillerModes(ours, target, { from: pairing.listenerCount, modes: pairing.client.modes });
    // The client fills the numbers from its count up to ours with the modes of ours.
    let theirFillers: ErrorHandling[];
    try {
      theirFillers = loopback || target <= pairing.client.count ? [] : worker.pairingModes(address, pairing.client.count, target);
    } catch (e) {
      // Too many of ours unanswered: an honest client is told why (its connect: UCS_ERR_REJECTED).
      if (!(e instanceof UcxError) || e.code !== "UCX_TS_LIMIT_EXCEEDED") throw e;
      listener.reportError(new UcxError(e.code, `connection from ${remote.host}:${remote.port} refused: ${e.message}`));
      return { answer: encodeRefusal(e.message) };
    }
    const scope = worker.allocateScope();
    let made;
    try {
      made = worker.endpointByAddress(address, options.errorHandling, remote, { scope, peerScope: hello.scope, loopback }, fillers);
    } catch (e) {
      worker.releaseScope(scope);
      throw e;
    }
    await worker.settled(made.created);
    const endpoint = made.endpoint;
    return {
      answer: encodeAccept({ errorHandling: options.errorHandling, scope, address: own, pairing: { count: target, modes: theirFillers } }),
      keep: (socket: Socket) => {
        attachLink(endpoint, socket);
        listener.deliver(endpoint);
      },
      // The client left before our answer: nobody will join this endpoint.
      discard: () => void endpoint.close({ force: true }).catch(() => {}),
    };
  };
  return HelloServer.start({
    host: options.host,
    port: options.port,
    maxPending: options.maxPendingHandshakes,
    timeoutMs: options.handshakeTimeoutMs,
    onHello,
    identity: own,
    // A hello whose address is not one is dropped here, before the challenge.
    pairingCount: (clientAddress) => worker.pairingCount(checkWorkerAddress(clientAddress, ownPlain)),
    ...(options.secret ? { auth: { secret: options.secret } } : {}),
    onError: (e) => listener.reportError(e),
  });
}
