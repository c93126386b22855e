/**
 * A worker's endpoints: connecting (by worker address, by host and port through the hello or
 * UCX's sockaddr protocol), the endpoints the hello and listeners make, and the table by id that
 * completion records (an endpoint's error, an active message's sender) are routed through.
 */
import { asBytes, type BufferLike } from "../buffers.ts";
import { markCloseOnExec } from "../close-on-exec.ts";
import { Endpoint, type ErrorHandling } from "../endpoint.ts";
import type { EndpointHost } from "../endpoint-host.ts";
import { submission } from "../engine/engine.ts";
import { EP_FLAG_ERR_PEER, Op } from "../engine/records.ts";
import { connectionError, invalidArgument, type UcxError } from "../errors.ts";
import { connectWithHello, type HelloWorker } from "../hello/connection.ts";
import { authWithoutHello, secretBytes, type HelloAuthOptions } from "../hello/auth.ts";
import { ScopeTable } from "../hello/scopes.ts";
import { ConnectionSequences } from "../hello/pairing.ts";
import { workerUuid } from "../ucx-address-format.ts";
import { describeStatus } from "../library.ts";
import type { ConnectProtocol } from "../listener.ts";
import { checkHost, sockaddr } from "../sockaddr.ts";
import { checkWorkerAddress } from "../worker-address.ts";
import { checkErrorHandling, checkProtocol } from "./options.ts";
import { addressOf, type RequestPath } from "./request-path.ts";

export type Remote = { host: string; port: number };

export class EndpointTable {
  private readonly endpoints = new Map<number, Endpoint>();
  /** Receive scopes of endpoints made through the hello (hello/scopes.ts). */
  readonly scopes = new ScopeTable();
  /** Endpoints created by address, per peer worker, in UCX's order (hello/pairing.ts). */
  readonly sequences = new ConnectionSequences();
  /** This worker's plain UCX address, asked once: connect() checks peers' addresses against it. */
  private ownAddress: Promise<Uint8Array> | undefined;

  constructor(
    /** The worker: what its endpoints and the hello are given. */
    private readonly worker: EndpointHost & HelloWorker,
    private readonly path: RequestPath,
    private readonly settled: <T>(p: Promise<T>) => Promise<T>,
  ) {}

  get(id: number): Endpoint | undefined {
    return this.endpoints.get(id);
  }

  get size(): number {
    return this.endpoints.size;
  }

  values(): IterableIterator<Endpoint> {
    return this.endpoints.values();
  }

  clear(): void {
    this.endpoints.clear();
  }

  private ownUcxAddress(): Promise<Uint8Array> {
    if (!this.ownAddress) {
      this.ownAddress = this.path.copyOut({ op: Op.WorkerAddress }, 4096, "ucp_worker_get_address");
      this.ownAddress.catch(() => (this.ownAddress = undefined)); // asked again next time
    }
    return this.ownAddress;
  }

  async connect(peer: BufferLike | (Remote & { protocol?: ConnectProtocol }), errorHandling: ErrorHandling, auth?: HelloAuthOptions): Promise<Endpoint> {
    const secret = secretBytes(auth);
    checkErrorHandling(errorHandling);
    if (typeof peer === "object" && peer !== null && "port" in peer && !ArrayBuffer.isView(peer) && checkProtocol(peer.protocol) === "hello") {
      checkHost(peer.host ?? "");
      if (!Number.isInteger(peer.port) || peer.port < 1 || peer.port > 65535) throw invalidArgument(`port must be 1..65535, got ${peer.port}`);
      this.path.assertOpen();
      return connectWithHello(this.worker, peer.host, peer.port, errorHandling, secret);
    }
    // Only the hello can check a secret: by worker address (or UCX's client) anyone may connect.
    if (secret) throw authWithoutHello();
    const id = this.path.newObjectId();
    let create: () => Promise<unknown>;
    let remote: Remote | undefined;
    if (typeof peer === "object" && peer !== null && "port" in peer && !ArrayBuffer.isView(peer)) {
      remote = { host: peer.host, port: peer.port };
      const keep = await sockaddr(peer.host, peer.port);
      const flags = errorHandling === "peer" ? EP_FLAG_ERR_PEER : 0;
      const s = submission({ op: Op.EndpointCreateSockaddr, target: id, address: addressOf(keep), length: keep.length, flags });
      create = () => this.settled(this.path.request(s, keep, "ucp_ep_create", () => undefined).promise);
    } else {
      const keep = checkWorkerAddress(asBytes(peer as BufferLike, "peer address"), await this.ownUcxAddress());
      create = () => this.createByAddress(id, keep, errorHandling);
    }
    const ep = new Endpoint(this.worker, id, errorHandling, remote, undefined, remote === undefined);
    this.endpoints.set(id, ep);
    try {
      await create();
      // Client-server endpoints connect in the background: a flush completes when the
      // connection is up, and fails (error handling peer) when it cannot be made.
      if (remote) await ep.flush();
    } catch (e) {
      this.endpoints.delete(id);
      await ep.close({ force: true }).catch(() => {});
      const status = (e as UcxError).status;
      throw remote && status !== undefined ? connectionError(status, remote.host, remote.port, describeStatus) : e;
    }
    markCloseOnExec(); // the connection's sockets, before the caller can start a child process
    return ep;
  }

  /**
   * See Worker.endpointByAddress: submitted now, in the order the hello's pairing needs, after a
   * filler endpoint for each of `fillers` (hello/pairing.ts). A filler has no Endpoint object: it
   * only takes its number in UCX's sequence and joins the peer's endpoint of that number; the
   * engine closes it with the worker.
   */
  byAddress(
    address: Uint8Array,
    errorHandling: ErrorHandling,
    remote: Remote,
    scopes: { scope: number; peerScope: number; loopback?: boolean },
    fillers: readonly ErrorHandling[] = [],
  ): { endpoint: Endpoint; created: Promise<void> } {
    for (const mode of fillers) {
      // Its failure (UCX refused it) costs only the pairing of an endpoint nobody here uses.
      this.createByAddress(this.path.newObjectId(), address, mode).catch(() => {});
    }
    const id = this.path.newObjectId();
    const ep = new Endpoint(this.worker, id, errorHandling, remote, scopes, true);
    if (scopes.loopback) this.pairLoopback(ep);
    this.endpoints.set(id, ep);
    const created = this.createByAddress(id, address, errorHandling).then(
      () => void markCloseOnExec(),
      (e: unknown) => {
        this.forget(id);
        throw e;
      },
    );
    return { endpoint: ep, created };
  }

  /**
   * `ucp_ep_create` to a (checked) worker address, submitted now and numbered in the same step:
   * UCX gives it the next number of that peer's sequence in submission order, and the hello's
   * pairing relies on every such create being counted (hello/pairing.ts).
   */
  private createByAddress(id: number, address: Uint8Array, mode: ErrorHandling): Promise<unknown> {
    this.sequences.record(workerUuid(address), mode);
    const flags = mode === "peer" ? EP_FLAG_ERR_PEER : 0;
    const s = submission({ op: Op.EndpointCreateAddress, target: id, address: addressOf(address), length: address.length, flags });
    return this.settled(this.path.request(s, address, "ucp_ep_create", () => undefined).promise);
  }

  /**
   * The second end of a connection from this worker to its own listener finds the first: both
   * scopes are this worker's, so the pair is the endpoint whose scope is the newcomer's peer scope
   * and the other way round (the hello allocates scopes per worker, never twice at once).
   */
  private pairLoopback(ep: Endpoint): void {
    for (const other of this.endpoints.values()) {
      if (other.loopPartner === undefined && other.scope === ep.peerScope && other.peerScope === ep.scope) {
        other.loopPartner = ep;
        ep.loopPartner = other;
        return;
      }
    }
  }

  /** An endpoint accepted by a listener (`conn_request` from its handler). */
  async accept(connRequest: number, errorHandling: ErrorHandling, remote: Remote): Promise<Endpoint> {
    const id = this.path.newObjectId();
    const ep = new Endpoint(this.worker, id, errorHandling, remote);
    this.endpoints.set(id, ep);
    const flags = errorHandling === "peer" ? EP_FLAG_ERR_PEER : 0;
    try {
      await this.settled(
        this.path.request(submission({ op: Op.EndpointCreateConnRequest, target: id, handle: connRequest, flags }), null, "ucp_ep_create", () => undefined)
          .promise,
      );
    } catch (e) {
      this.endpoints.delete(id);
      throw e;
    }
    markCloseOnExec(); // the accepted connection's sockets, before the application sees it
    return ep;
  }

  /** The endpoint is closed: forget it and release its receive scope. */
  forget(id: number): void {
    const ep = this.endpoints.get(id);
    const scope = ep?.scope;
    if (scope !== undefined) this.scopes.release(scope);
    if (ep?.loopPartner) ep.loopPartner.loopPartner = undefined;
    this.endpoints.delete(id);
  }
}
