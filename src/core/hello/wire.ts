/**
 * The hello: the few bytes two ucx-ts workers exchange over a plain TCP connection before each
 * creates its UCX endpoint to the other's worker address. It replaces UCX's sockaddr connection
 * manager on the listening port, whose TCP parser aborts the process on bytes it does not expect
 * (UCX 1.13, tcp_sockcm_ep.c; ../../../shared/design/ffi-facts.md, "Hostile bytes").
 *
 * Every message, both ways, little-endian, nothing padded:
 *
 * | offset | field   | type                                                        |
 * |--------|---------|-------------------------------------------------------------|
 * | 0      | magic   | 4 bytes "UXTH"                                              |
 * | 4      | version | u8, HELLO_VERSION                                           |
 * | 5      | kind    | u8: 1 hello (client), 2 accept (server), 3 refuse (server)  |
 * | 6      | 0       | u16, reserved, must be 0                                    |
 * | 8      | length  | u32, bytes of body that follow (at most MAX_BODY)           |
 * | 12     | body    |                                                             |
 *
 * Body of hello and accept: error handling u8 (0 none, 1 peer), 0 u8, scope u16 (the receive
 * scope the sender allocated for this connection's endpoint, see ../scope.ts), then the sender's
 * worker address (the rest). Body of refuse: the reason, UTF-8.
 *
 * The header is read first, and the length checked against MAX_BODY before any body byte is
 * kept, so a peer cannot make the reader allocate more than HEADER_BYTES + MAX_BODY.
 */
import type { ErrorHandling } from "../endpoint.ts";

export const HELLO_MAGIC = [0x55, 0x58, 0x54, 0x48] as const; // "UXTH"
export const HELLO_VERSION = 1;
export const HEADER_BYTES = 12;
/** Worker addresses seen here are 100-600 bytes; 64 KiB leaves room for many devices. */
export const MAX_BODY = 64 * 1024;
/** A refusal's reason is cut to this many bytes. */
const MAX_REASON = 1024;

export const HelloKind = { Hello: 1, Accept: 2, Refuse: 3 } as const;
export type HelloKind = (typeof HelloKind)[keyof typeof HelloKind];

/** What a hello or an accept carries. */
export interface Greeting {
  readonly errorHandling: ErrorHandling;
  readonly scope: number;
  readonly address: Uint8Array;
}

export type HelloMessage = { kind: typeof HelloKind.Hello | typeof HelloKind.Accept; greeting: Greeting } | { kind: typeof HelloKind.Refuse; reason: string };

/** The bytes a peer sent that are not a hello of this version: the connection is dropped. */
export class HelloProtocolError extends Error {}

function frame(kind: HelloKind, body: Uint8Array): Uint8Array {
  const out = new Uint8Array(HEADER_BYTES + body.length);
  const view = new DataView(out.buffer);
  out.set(HELLO_MAGIC, 0);
  out[4] = HELLO_VERSION;
  out[5] = kind;
  view.setUint32(8, body.length, true);
  out.set(body, HEADER_BYTES);
  return out;
}

export function encodeGreeting(kind: typeof HelloKind.Hello | typeof HelloKind.Accept, g: Greeting): Uint8Array {
  if (g.address.length + 4 > MAX_BODY) throw new RangeError(`worker address of ${g.address.length} bytes exceeds the hello's limit`);
  const body = new Uint8Array(4 + g.address.length);
  body[0] = g.errorHandling === "peer" ? 1 : 0;
  new DataView(body.buffer).setUint16(2, g.scope, true);
  body.set(g.address, 4);
  return frame(kind, body);
}

export function encodeRefusal(reason: string): Uint8Array {
  return frame(HelloKind.Refuse, new TextEncoder().encode(reason).subarray(0, MAX_REASON));
}

/**
 * Collects one message from the chunks a socket delivers. `push` returns the message once it is
 * complete, undefined while bytes are missing, and throws HelloProtocolError as soon as the bytes
 * cannot be a hello (wrong magic or version, unknown kind, oversize length, bytes after the end).
 */
export class HelloReader {
  private readonly header = new Uint8Array(HEADER_BYTES);
  private headerFill = 0;
  private body: Uint8Array | undefined;
  private bodyFill = 0;
  private kind: HelloKind = HelloKind.Hello;
  private done = false;

  push(chunk: Uint8Array): HelloMessage | undefined {
    if (this.done) {
      if (chunk.length > 0) throw new HelloProtocolError("bytes after the end of the hello");
      return undefined;
    }
    let at = 0;
    if (this.body === undefined) {
      const take = Math.min(HEADER_BYTES - this.headerFill, chunk.length);
      this.header.set(chunk.subarray(0, take), this.headerFill);
      this.headerFill += take;
      at = take;
      // Check each header byte as soon as it is there: garbage is refused after its first byte.
      this.checkHeaderPrefix();
      if (this.headerFill < HEADER_BYTES) return undefined;
      const length = new DataView(this.header.buffer).getUint32(8, true);
      if (length > MAX_BODY) throw new HelloProtocolError(`hello body of ${length} bytes exceeds ${MAX_BODY}`);
      this.body = new Uint8Array(length);
    }
    const rest = chunk.subarray(at);
    if (this.bodyFill + rest.length > this.body.length) throw new HelloProtocolError("bytes after the end of the hello");
    this.body.set(rest, this.bodyFill);
    this.bodyFill += rest.length;
    if (this.bodyFill < this.body.length) return undefined;
    this.done = true;
    return this.decode(this.body);
  }

  private checkHeaderPrefix(): void {
    const h = this.header;
    for (let i = 0; i < Math.min(this.headerFill, 4); i++) {
      if (h[i] !== HELLO_MAGIC[i]) throw new HelloProtocolError("not a ucx-ts hello (wrong magic)");
    }
    if (this.headerFill > 4 && h[4] !== HELLO_VERSION) throw new HelloProtocolError(`hello version ${h[4]}, this side speaks ${HELLO_VERSION}`);
    if (this.headerFill > 5) {
      if (h[5] !== HelloKind.Hello && h[5] !== HelloKind.Accept && h[5] !== HelloKind.Refuse) throw new HelloProtocolError(`unknown hello kind ${h[5]}`);
      this.kind = h[5] as HelloKind;
    }
    if ((this.headerFill > 6 && h[6] !== 0) || (this.headerFill > 7 && h[7] !== 0)) throw new HelloProtocolError("reserved hello bits are set");
  }

  private decode(body: Uint8Array): HelloMessage {
    if (this.kind === HelloKind.Refuse) return { kind: HelloKind.Refuse, reason: new TextDecoder().decode(body.subarray(0, MAX_REASON)) };
    if (body.length < 5) throw new HelloProtocolError(`hello body of ${body.length} bytes carries no worker address`);
    if (body[0]! > 1 || body[1] !== 0) throw new HelloProtocolError(`unknown error-handling mode ${body[0]}`);
    const scope = new DataView(body.buffer, body.byteOffset).getUint16(2, true);
    return {
      kind: this.kind as typeof HelloKind.Hello | typeof HelloKind.Accept,
      greeting: { errorHandling: body[0] === 1 ? "peer" : "none", scope, address: body.slice(4) },
    };
  }
}
