/**
 * The hello: the few bytes two ucx-ts workers exchange over a plain TCP connection before each
 * creates its UCX endpoint to the other's worker address. It replaces UCX's sockaddr connection
 * manager on the listening port, whose TCP parser aborts the process on bytes it does not expect
 * (UCX 1.13, tcp_sockcm_ep.c; ../../../shared/design/ffi-facts.md, "Hostile bytes").
 *
 * Every message, both ways, little-endian, nothing padded:
 *
 * | offset | field   | type                                                                 |
 * |--------|---------|----------------------------------------------------------------------|
 * | 0      | magic   | 4 bytes "UXTH"                                                       |
 * | 4      | version | u8, HELLO_VERSION (2: version 1 had no authentication)               |
 * | 5      | kind    | u8: 1 hello, 2 accept, 3 refuse, 4 challenge, 5 proof                |
 * | 6      | 0       | u16, reserved, must be 0                                             |
 * | 8      | length  | u32, bytes of body that follow (at most MAX_BODY)                    |
 * | 12     | body    |                                                                      |
 *
 * Body of hello (client) and accept (listener): error handling u8 (0 none, 1 peer), flags u8
 * (bit 0: authenticated, GreetingFlag.Auth), scope u16 (the receive scope the sender allocated for
 * this connection's endpoint, see scopes.ts), then, with the auth flag only, 32 bytes (a hello's:
 * the client's nonce; an accept's: the listener's proof, auth.ts), then the sender's worker
 * address (the rest).
 * Body of challenge (listener, auth only): the listener's nonce (32 bytes), then the listener's
 * worker address: its identity, bound into both proofs.
 * Body of proof (client, auth only): the client's proof, 32 bytes.
 * Body of refuse: a reason code u8 (RefuseCode), then the reason in words, UTF-8.
 *
 * Without auth: hello, then accept or refuse. With auth (auth.ts): hello, challenge, proof, then
 * accept or refuse; the listener creates nothing before the proof checks out.
 *
 * The header is read first, and the length checked against MAX_BODY before any body byte is
 * kept, so a peer cannot make the reader allocate more than HEADER_BYTES + MAX_BODY.
 */
import type { ErrorHandling } from "../endpoint.ts";

export const HELLO_MAGIC = [0x55, 0x58, 0x54, 0x48] as const; // "UXTH"
export const HELLO_VERSION = 2;
export const HEADER_BYTES = 12;
/** Worker addresses seen here are 100-600 bytes; 64 KiB leaves room for many devices. */
export const MAX_BODY = 64 * 1024;
/** A refusal's reason is cut to this many bytes. */
const MAX_REASON = 1024;

/** Nonces and proofs (HMAC-SHA-256) are this long. */
export const AUTH_BYTES = 32;

export const HelloKind = { Hello: 1, Accept: 2, Refuse: 3, Challenge: 4, Proof: 5 } as const;
export type HelloKind = (typeof HelloKind)[keyof typeof HelloKind];

export const GreetingFlag = { Auth: 1 } as const;

/** Why a listener refused: the client turns the auth ones into UCX_TS_AUTH_FAILED. */
export const RefuseCode = { Other: 0, AuthRequired: 1, AuthNotOffered: 2, AuthFailed: 3 } as const;
export type RefuseCode = (typeof RefuseCode)[keyof typeof RefuseCode];

/** What a hello or an accept carries. */
export interface Greeting {
  readonly errorHandling: ErrorHandling;
  readonly scope: number;
  readonly address: Uint8Array;
  /** Authenticated connections: a hello's nonce, an accept's proof (AUTH_BYTES). */
  readonly auth?: Uint8Array;
}

export type HelloMessage =
  | { kind: typeof HelloKind.Hello | typeof HelloKind.Accept; greeting: Greeting }
  | { kind: typeof HelloKind.Refuse; code: RefuseCode; reason: string }
  | { kind: typeof HelloKind.Challenge; nonce: Uint8Array; identity: Uint8Array }
  | { kind: typeof HelloKind.Proof; proof: Uint8Array };

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

/** A hello's or accept's body (what the proofs cover, auth.ts). */
export function greetingBody(g: Greeting): Uint8Array {
  if (g.auth !== undefined && g.auth.length !== AUTH_BYTES) throw new RangeError(`auth field of ${g.auth.length} bytes, not ${AUTH_BYTES}`);
  const authBytes = g.auth === undefined ? 0 : AUTH_BYTES;
  if (g.address.length + 4 + authBytes > MAX_BODY) throw new RangeError(`worker address of ${g.address.length} bytes exceeds the hello's limit`);
  const body = new Uint8Array(4 + authBytes + g.address.length);
  body[0] = g.errorHandling === "peer" ? 1 : 0;
  body[1] = g.auth === undefined ? 0 : GreetingFlag.Auth;
  new DataView(body.buffer).setUint16(2, g.scope, true);
  if (g.auth) body.set(g.auth, 4);
  body.set(g.address, 4 + authBytes);
  return body;
}

export function encodeGreeting(kind: typeof HelloKind.Hello | typeof HelloKind.Accept, g: Greeting): Uint8Array {
  return frame(kind, greetingBody(g));
}

export function encodeRefusal(reason: string, code: RefuseCode = RefuseCode.Other): Uint8Array {
  const text = new TextEncoder().encode(reason).subarray(0, MAX_REASON);
  const body = new Uint8Array(1 + text.length);
  body[0] = code;
  body.set(text, 1);
  return frame(HelloKind.Refuse, body);
}

export function encodeChallenge(nonce: Uint8Array, identity: Uint8Array): Uint8Array {
  if (nonce.length !== AUTH_BYTES) throw new RangeError(`nonce of ${nonce.length} bytes`);
  const body = new Uint8Array(AUTH_BYTES + identity.length);
  body.set(nonce, 0);
  body.set(identity, AUTH_BYTES);
  return frame(HelloKind.Challenge, body);
}

export function encodeProof(proof: Uint8Array): Uint8Array {
  if (proof.length !== AUTH_BYTES) throw new RangeError(`proof of ${proof.length} bytes`);
  return frame(HelloKind.Proof, proof);
}

/**
 * Collects one message from the chunks a socket delivers. `push` returns the message once it is
 * complete, undefined while bytes are missing, and throws HelloProtocolError as soon as the bytes
 * cannot be a hello (wrong magic or version, unknown kind, oversize length, bytes after the end).
 * `next()` makes it ready for the following message of an authenticated handshake; no side
 * sends before it has the other's answer, so bytes past a message are an error, never kept.
 */
export class HelloReader {
  private readonly header = new Uint8Array(HEADER_BYTES);
  private headerFill = 0;
  private body: Uint8Array | undefined;
  private bodyFill = 0;
  private kind: HelloKind = HelloKind.Hello;
  private done = false;

  /** Ready for the next message (after one was returned). */
  next(): void {
    this.headerFill = 0;
    this.body = undefined;
    this.bodyFill = 0;
    this.done = false;
  }

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
      if (h[5]! < HelloKind.Hello || h[5]! > HelloKind.Proof) throw new HelloProtocolError(`unknown hello kind ${h[5]}`);
      this.kind = h[5] as HelloKind;
    }
    if ((this.headerFill > 6 && h[6] !== 0) || (this.headerFill > 7 && h[7] !== 0)) throw new HelloProtocolError("reserved hello bits are set");
  }

  private decode(body: Uint8Array): HelloMessage {
    switch (this.kind) {
      case HelloKind.Refuse: {
        if (body.length < 1) throw new HelloProtocolError("refusal without a reason code");
        const code = body[0]! <= RefuseCode.AuthFailed ? (body[0] as RefuseCode) : RefuseCode.Other;
        return { kind: HelloKind.Refuse, code, reason: new TextDecoder().decode(body.subarray(1, 1 + MAX_REASON)) };
      }
      case HelloKind.Challenge:
        if (body.length <= AUTH_BYTES) throw new HelloProtocolError(`challenge of ${body.length} bytes carries no listener identity`);
        return { kind: HelloKind.Challenge, nonce: body.slice(0, AUTH_BYTES), identity: body.slice(AUTH_BYTES) };
      case HelloKind.Proof:
        if (body.length !== AUTH_BYTES) throw new HelloProtocolError(`proof of ${body.length} bytes, not ${AUTH_BYTES}`);
        return { kind: HelloKind.Proof, proof: body.slice() };
    }
    if (body.length < 4) throw new HelloProtocolError(`hello body of ${body.length} bytes carries no worker address`);
    if (body[0]! > 1) throw new HelloProtocolError(`unknown error-handling mode ${body[0]}`);
    if ((body[1]! & ~GreetingFlag.Auth) !== 0) throw new HelloProtocolError(`unknown hello flags 0x${body[1]!.toString(16)}`);
    const authBytes = body[1]! & GreetingFlag.Auth ? AUTH_BYTES : 0;
    if (body.length < 5 + authBytes) throw new HelloProtocolError(`hello body of ${body.length} bytes carries no worker address`);
    const scope = new DataView(body.buffer, body.byteOffset).getUint16(2, true);
    return {
      kind: this.kind as typeof HelloKind.Hello | typeof HelloKind.Accept,
      greeting: {
        errorHandling: body[0] === 1 ? "peer" : "none",
        scope,
        address: body.slice(4 + authBytes),
        ...(authBytes ? { auth: body.slice(4, 4 + authBytes) } : {}),
      },
    };
  }
}
