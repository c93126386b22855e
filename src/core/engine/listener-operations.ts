/**
 * UCX's sockaddr listeners on the executor's thread (protocol "ucx"; the hello's listeners are
 * a TCP server on the application thread): create, destroy, reject, and UCX's connection handler,
 * which reports each connection request with the client's IPv4 address and port.
 */
import { callbackTypes, UCX_CONSTANTS as C, type NativeCallback, type Pointer } from "../../ffi/index.ts";
import type { OpHost } from "./op-host.ts";
import { CompletionKind } from "./records.ts";

const UCS_OK = 0;
const UCS_ERR_NO_ELEM = -12;

export class ListenerOperations {
  private readonly listeners = new Map<number, Pointer>();
  private readonly connCallback: NativeCallback;

  constructor(private readonly h: OpHost) {
    this.connCallback = h.u.callback(callbackTypes.ucp_listener_conn_callback_t, (connRequest: number, arg: number) =>
      this.onConnectionRequest(arg, connRequest),
    );
  }

  listen(id: number, listener: number, address: number, length: number): void {
    const u = this.h.u;
    const p = u.struct("ucp_listener_params_t");
    p.set("field_mask", C.UCP_LISTENER_PARAM_FIELD_SOCK_ADDR | C.UCP_LISTENER_PARAM_FIELD_CONN_HANDLER);
    p.set("sockaddr.addr", address);
    p.set("sockaddr.addrlen", length);
    p.set("conn_handler.cb", this.connCallback.address);
    p.set("conn_handler.arg", listener);
    const status = u.ucp_listener_create(this.h.worker, u.addressOf(p.bytes), this.h.out.address());
    if (status !== UCS_OK) return this.h.done(id, status);
    const handle = this.h.out.pointer();
    this.listeners.set(listener, handle);
    // Report the port actually bound (port 0 asks the OS for a free one).
    const attr = u.struct("ucp_listener_attr_t");
    attr.set("field_mask", C.UCP_LISTENER_ATTR_FIELD_SOCKADDR);
    const q = u.ucp_listener_query(handle, u.addressOf(attr.bytes));
    const sa = attr.getBytes("sockaddr");
    this.h.done(id, q, q === UCS_OK ? (sa[2]! << 8) | sa[3]! : 0);
  }

  close(id: number, listener: number): void {
    const h = this.listeners.get(listener);
    if (h !== undefined) {
      this.h.u.ucp_listener_destroy(h);
      this.listeners.delete(listener);
    }
    this.h.done(id, UCS_OK);
  }

  reject(id: number, listener: number, connRequest: number): void {
    const h = this.listeners.get(listener);
    this.h.done(id, h === undefined ? UCS_ERR_NO_ELEM : this.h.u.ucp_listener_reject(h, connRequest));
  }

  /** From inside ucp_worker_progress: a client connects to `listener`. */
  private onConnectionRequest(listener: number, connRequest: number): void {
    const u = this.h.u;
    const attr = u.struct("ucp_conn_request_attr_t");
    attr.set("field_mask", C.UCP_CONN_REQUEST_ATTR_FIELD_CLIENT_ADDR);
    let ip = 0;
    let port = 0;
    if (u.ucp_conn_request_query(connRequest, u.addressOf(attr.bytes)) === UCS_OK) {
      const sa = attr.getBytes("client_address");
      const family = sa[0]! | (sa[1]! << 8);
      if (family === 2 /* AF_INET */) {
        port = (sa[2]! << 8) | sa[3]!;
        ip = ((sa[4]! << 24) | (sa[5]! << 16) | (sa[6]! << 8) | sa[7]!) >>> 0;
      }
    }
    this.h.emit({ kind: CompletionKind.ConnectionRequest, id: listener, status: UCS_OK, value: connRequest, tagLo: ip, tagHi: port, aux: 0 });
  }

  /** Shutdown: destroy every listener. */
  destroyAll(): void {
    for (const h of this.listeners.values()) this.h.u.ucp_listener_destroy(h);
    this.listeners.clear();
  }

  closeCallback(): void {
    this.connCallback.close();
  }
}
