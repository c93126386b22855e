/**
 * A UCT interface (`uct_iface_h`): one transport on one device, on a worker. It has addresses a
 * peer connects to, a table of active-message handlers, and flush/fence over all its endpoints.
 *
 * Endpoints are made the way the transport's capability flags say (the UCT design seed,
 * "Connection establishment"): `connect()` for UCT_IFACE_FLAG_CONNECT_TO_IFACE (one-sided: the
 * peer's device and interface addresses are enough), `createEndpoint()` then
 * `UctEndpoint.connectToEndpoint()` for UCT_IFACE_FLAG_CONNECT_TO_EP (both sides exchange
 * endpoint addresses).
 */
import { UCS_STATUS, UCX_CONSTANTS as C, type Pointer } from "../../ffi/index.ts";
import { markCloseOnExec } from "../close-on-exec.ts";
import { invalidArgument, UcxError } from "../errors.ts";
import { check, ucx } from "../library.ts";
import { OutSlots } from "../out-slots.ts";
import { callUserCallback } from "../user-callback.ts";
import { UctAmMessage, type UctAmHandler } from "./am-message.ts";
import type { UctCompletion } from "./completion.ts";
import { UctEndpoint } from "./endpoint.ts";
import type { UctMemoryDomain } from "./memory-domain.ts";
import { UctMemory } from "./memory.ts";
import { nativeCallbacks } from "./native-callbacks.ts";
import { cStringBytes } from "./native-memory.ts";
import { bindOps, type UctOps } from "./ops.ts";
import { sendStatus, type UctSendStatus } from "./status.ts";
import { transportAttributes, type UctTransportAttributes } from "./transport-attributes.ts";
import type { UctWorker } from "./worker.ts";
import { checkPosixInterfaceAddress, type UctInterfaceAddress } from "./interface-address.ts";

/** What a peer needs to reach an interface. */
export type { UctInterfaceAddress } from "./interface-address.ts";

export class UctInterface {
  private closed = false;
  readonly attributes: UctTransportAttributes;
  /** `attributes.capabilities` as a set, for the checks on the data path. */
  readonly capabilitySet: ReadonlySet<string>;
  /** The ops table (uct.h's inline calls), for this interface and its endpoints. */
  readonly ops: UctOps;
  private readonly token: number;
  private readonly handlers: Array<UctAmHandler | undefined> = [];
  readonly endpoints: Set<UctEndpoint> = new Set();
  /** This interface's own address, read once: what a peer's is checked against (posix). */
  private ownAddress: UctInterfaceAddress | undefined;

  private constructor(
    readonly worker: UctWorker,
    readonly memoryDomain: UctMemoryDomain,
    readonly transport: string,
    readonly device: string,
    /** The `uct_iface_h`. */
    readonly handle: Pointer,
  ) {
    const u = ucx();
    const attr = u.struct("uct_iface_attr_t");
    check(u.uct_iface_query(handle, u.addressOf(attr.bytes)), `uct_iface_query(${transport}/${device})`);
    this.attributes = transportAttributes(attr);
    this.capabilitySet = new Set(this.attributes.capabilities);
    this.ops = bindOps(handle);
    const callbacks = nativeCallbacks();
    this.token = callbacks.nextToken();
    callbacks.amInterfaces.set(this.token, (arg, data, length, flags) => this.dispatch(arg, data, length, flags));
  }

  /** Open `transport` on `device` of `memoryDomain` (`uct_md_iface_config_read` + `uct_iface_open`). */
  static open(worker: UctWorker, memoryDomain: UctMemoryDomain, transport: string, device: string): UctInterface {
    const known = memoryDomain.transportResources();
    if (!known.some((r) => r.transport === transport && r.device === device)) {
      throw invalidArgument(
        `memory domain '${memoryDomain.name}' has no transport ${transport} on device ${device} (have: ${known.map((r) => `${r.transport}/${r.device}`).join(", ") || "none"})`,
      );
    }
    const u = ucx();
    const out = new OutSlots(1);
    check(u.uct_md_iface_config_read(memoryDomain.md, transport, null, null, out.address()), `uct_md_iface_config_read(${transport})`);
    const config = out.pointer();
    const tl = cStringBytes(transport);
    const dev = cStringBytes(device);
    const params = u.struct("uct_iface_params_t");
    params.set("field_mask", C.UCT_IFACE_PARAM_FIELD_OPEN_MODE | C.UCT_IFACE_PARAM_FIELD_DEVICE | C.UCT_IFACE_PARAM_FIELD_RX_HEADROOM);
    params.set("open_mode", C.UCT_IFACE_OPEN_MODE_DEVICE);
    params.set("mode.device.tl_name", u.addressOf(tl));
    params.set("mode.device.dev_name", u.addressOf(dev));
    params.set("rx_headroom", 0);
    try {
      check(u.uct_iface_open(memoryDomain.md, worker.handle, u.addressOf(params.bytes), config, out.address()), `uct_iface_open(${transport}/${device})`);
    } finally {
      u.uct_config_release(config);
    }
    const iface = new UctInterface(worker, memoryDomain, transport, device, out.pointer());
    // UCT interfaces are not progressed until asked: put this one's progress into the worker's queue.
    iface.ops.iface_progress_enable(iface.handle, C.UCT_PROGRESS_SEND | C.UCT_PROGRESS_RECV);
    worker.interfaces.add(iface);
    markCloseOnExec(); // tcp's listening socket and epoll set (close-on-exec.ts)
    return iface;
  }

  get iface(): Pointer {
    if (this.closed) throw new UcxError("UCX_TS_CLOSED", `UCT interface ${this.transport}/${this.device} is closed`);
    return this.handle;
  }

  /** `uct_iface_get_device_address` and `uct_iface_get_address`. */
  address(): UctInterfaceAddress {
    const u = ucx();
    const a = this.attributes;
    const deviceAddress = new Uint8Array(Math.max(1, a.deviceAddressLength));
    const interfaceAddress = new Uint8Array(Math.max(1, a.interfaceAddressLength));
    check(u.uct_iface_get_device_address(this.iface, u.addressOf(deviceAddress)), "uct_iface_get_device_address");
    if (a.connectToInterface) check(u.uct_iface_get_address(this.iface, u.addressOf(interfaceAddress)), "uct_iface_get_address");
    return {
      deviceAddress: deviceAddress.slice(0, a.deviceAddressLength),
      interfaceAddress: a.connectToInterface ? interfaceAddress.slice(0, a.interfaceAddressLength) : new Uint8Array(0),
    };
  }

  private checkAddress(peer: UctInterfaceAddress, needInterface: boolean): void {
    const a = this.attributes;
    if (peer.deviceAddress.length !== a.deviceAddressLength) {
      throw invalidArgument(`device address is ${peer.deviceAddress.length} bytes, ${this.transport} uses ${a.deviceAddressLength}`);
    }
    if (needInterface && peer.interfaceAddress.length !== a.interfaceAddressLength) {
      throw invalidArgument(`interface address is ${peer.interfaceAddress.length} bytes, ${this.transport} uses ${a.interfaceAddressLength}`);
    }
    if (needInterface && this.transport === "posix") {
      const why = checkPosixInterfaceAddress((this.ownAddress ??= this.address()).interfaceAddress, peer.interfaceAddress);
      if (why) throw new UcxError("UCS_ERR_INVALID_ADDR", why, { status: UCS_STATUS.UCS_ERR_INVALID_ADDR });
    }
  }

  /** `uct_iface_is_reachable`. */
  isReachable(peer: UctInterfaceAddress): boolean {
    this.checkAddress(peer, this.attributes.connectToInterface);
    const u = ucx();
    const dev = peer.deviceAddress.length > 0 ? u.addressOf(peer.deviceAddress) : 0;
    const ifa = peer.interfaceAddress.length > 0 ? u.addressOf(peer.interfaceAddress) : 0;
    return u.uct_iface_is_reachable(this.iface, dev, ifa) !== 0;
  }

  /** An endpoint connected to a peer interface (transports with CONNECT_TO_IFACE). */
  connect(peer: UctInterfaceAddress): UctEndpoint {
    if (!this.attributes.connectToInterface) {
      throw new UcxError("UCS_ERR_UNSUPPORTED", `${this.transport} cannot connect to an interface: use createEndpoint() and connectToEndpoint()`, { status: -22 });
    }
    if (!this.isReachable(peer)) throw new UcxError("UCS_ERR_UNREACHABLE", `${this.transport}/${this.device}: the peer interface is not reachable`, { status: -6 });
    return UctEndpoint.create(this, peer);
  }

  /** An unconnected endpoint, for CONNECT_TO_EP transports: exchange `ep.address()` and call `connectToEndpoint`. */
  createEndpoint(): UctEndpoint {
    if (!this.attributes.connectToEndpoint) {
      throw new UcxError("UCS_ERR_UNSUPPORTED", `${this.transport} cannot connect endpoint to endpoint: use connect()`, { status: -22 });
    }
    return UctEndpoint.create(this, undefined);
  }

  /**
   * `uct_iface_set_am_handler(id)`: `handler` is called during `worker.progress()` for each
   * message with that id; `null` removes it.
   */
  setAmHandler(id: number, handler: UctAmHandler | null): void {
    if (!Number.isInteger(id) || id < 0 || id >= C.UCT_AM_ID_MAX) throw invalidArgument(`AM id must be 0..${C.UCT_AM_ID_MAX - 1}, got ${id}`);
    if (!this.attributes.capabilities.some((c) => c.startsWith("am_"))) {
      throw new UcxError("UCS_ERR_UNSUPPORTED", `${this.transport} has no active messages`, { status: -22 });
    }
    const u = ucx();
    const cb = handler ? nativeCallbacks().am : 0;
    check(u.uct_iface_set_am_handler(this.iface, id, cb, this.token * C.UCT_AM_ID_MAX + id, 0), "uct_iface_set_am_handler");
    this.handlers[id] = handler ?? undefined;
  }

  private dispatch(arg: Pointer, data: Pointer, length: number, flags: number): number {
    const id = arg % C.UCT_AM_ID_MAX;
    const handler = this.handlers[id];
    const message = new UctAmMessage(id, data, length, flags);
    callUserCallback(handler, message);
    return message.finish();
  }

  /** `uct_iface_flush`: UCS_OK when every operation of every endpoint is complete, else INPROGRESS/NO_RESOURCE. */
  flush(completion?: UctCompletion, flags: number = C.UCT_FLUSH_FLAG_LOCAL): UctSendStatus {
    return sendStatus(this.ops.iface_flush(this.iface, flags, completion?.address ?? 0), "uct_iface_flush");
  }

  /** `uct_iface_fence`: operations issued after it are ordered after those before it. */
  fence(): void {
    check(this.ops.iface_fence(this.iface, 0), "uct_iface_fence");
  }

  /** Memory peers can access through this interface's memory domain (see UctMemory). */
  memoryForRemoteAccess(length: number): UctMemory {
    return UctMemory.forRemoteAccess(this, length);
  }

  /** Destroys the endpoints, then `uct_iface_close`. */
  close(): void {
    if (this.closed) return;
    for (const ep of [...this.endpoints]) ep.destroy();
    this.closed = true;
    this.ops.iface_progress_disable(this.handle, C.UCT_PROGRESS_SEND | C.UCT_PROGRESS_RECV);
    ucx().uct_iface_close(this.handle);
    nativeCallbacks().amInterfaces.delete(this.token);
    this.worker.interfaces.delete(this);
  }
}
