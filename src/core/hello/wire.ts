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
 * | 4      | version | u8, HELLO_VERSION (3; 2 had no pairing counts, 1 no authentication)  |
 * | 5      | kind    | u8: 1 hello, 2 accept, 3 refuse, 4 challenge, 5 proof                |
 * | 6      | 0       | u16, reserved, must be 0                                             |
 * | 8      | length  | u32, bytes of body that follow (at most MAX_BODY)                    |
 * | 12     | body    |                                                                      |
 *
 * A pairing block (pairing.ts): count u32, then n u16 (at most MAX_PAIRING_GAP), 0 u16, then the
 * error-handling modes of n endpoints as a bitmap of ceil(n / 8) bytes (bit i & 7 of byte i >> 3
 * set: endpoint i handles errors "peer"; the bits past n are 0).
 *
 * Body of hello (client) and accept (listener): error handling u8 (0 none, 1 peer), flags u8
 * (GreetingFlag: bit 0 authenticated, bit 1 a pairing block follows; an accept has one, a hello
 * never), scope u16 (the receive scope the sender allocated for this connection's endpoint, see
 * scopes.ts), then the accept's pairing block (count: the number the listener's endpoint took in
 * UCX's sequence), then, with the auth flag only, 32 bytes (a hello's: the client's nonce; an
 * accept's: the listener's proof, auth.ts), then the sender's worker address (the rest).
 * Body of challenge (listener): flags u8 (bit 0: authenticated), 0 u8, 0 u16, count u32 (the
 * endpoints the listener's worker has made by address to the client's), with auth the listener's
 * nonce (32 bytes), then the listener's worker address: who it is (bound into both proofs).
 * Body of proof (client): flags u8 (bit 0: authenticated), 0 u8, 0 u16, a pairing block (count:
 * the client's endpoints so far to the listener's worker; modes: those numbered from the
 * challenge's count up), then with auth the client's proof, 32 bytes.
 * Body of refuse: a reason code u8 (RefuseCode), then the reason in words, UTF-8.
 *
 * Every connection: hello, challenge, proof, then accept or refuse (or a refusal of the hello at
 * once: authentication asked where there is none, or the other way round). Without auth the
 * challenge and the proof only carry the pairing counts; with auth (auth.ts) the listener creates
 * nothing before the proof checks out.
 *
 * The header is read first, and the length checked against MAX_BODY before any body byte is
 * kept, so a peer cannot make the reader allocate more than HEADER_BYTES + MAX_BODY.
 */
import type { ErrorHandling } from "../endpoint.ts";
import { MAX_PAIRING_GAP, type Pairing } from "./pairing.ts";

export const HELLO_MAGIC = [0x55, 0x58, 0x54, 0x48] as const; // "UXTH"
export const HELLO_VERSION = 3;
export const HEADER_BYTES = 12;
/** Worker addresses seen here are 100-600 bytes; 64 KiB leaves room for many devices. */
export const MAX_BODY = 64 * 1024;
/** A refusal's reason is cut to this many bytes. */
const MAX_REASON = 1024;

/** Nonces and proofs (HMAC-SHA-256) are this long. */
export const AUTH_BYTES = 32;

export const HelloKind = { Hello: 1, Accept: 2, Refuse: 3, Challenge: 4, Proof: 5 } as const;
export type HelloKind = (typeof HelloKind)[keyof typeof HelloKind];

export const GreetingFlag = { Auth: 1, Pairing: 2 } as const;

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
  /** An accept's: the number its endpoint took, and the modes the client's fillers need. */
  readonly pairing?: Pairing;
}

export type HelloMessage =
  | { kind: typeof HelloKind.Hello | typeof HelloKind.Accept; greeting: Greeting }
  | { kind: typeof HelloKind.Refuse; code: RefuseCode; reason: string }
  | { kind: typeof HelloKind.Challenge; count: number; nonce?: Uint8Array; identity: Uint8Array }
  | { kind: typeof HelloKind.Proof; pairing: Pairing; proof?: Uint8Array };

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

/** A pairing block (see above). */
function pairingBlock(p: Pairing): Uint8Array {
  if (p.modes.length > MAX_PAIRING_GAP) throw new RangeError(`${p.modes.length} modes exceed MAX_PAIRING_GAP`);
  if (!Number.isInteger(p.count) || p.count < 0 || p.count > 0xffffffff) throw new RangeError(`pairing count ${p.count}`);
  const out = new Uint8Array(8 + Math.ceil(p.modes.length / 8));
  const view = new DataView(out.buffer);
  view.setUint32(0, p.count, true);
  view.setUint16(4, p.modes.length, true);
  p.modes.forEach((mode, i) => {
    if (mode === "peer") out[8 + (i >> 3)]! |= 1 << (i & 7);
  });
  return out;
}

/** A pairing block at `at` of `body`: the pairing and the offset past it. */
function readPairing(body: Uint8Array, at: number): { pairing: Pairing; end: number } {
  if (body.length < at + 8) throw new HelloProtocolError("pairing block cut short");
  const view = new DataView(body.buffer, body.byteOffset);
  const count = view.getUint32(at, true);
  const n = view.getUint16(at + 4, true);
  if (n > MAX_PAIRING_GAP) throw new HelloProtocolError(`pairing block with ${n} modes, more than ${MAX_PAIRING_GAP}`);
  if (view.getUint16(at + 6, true) !== 0) throw new HelloProtocolError("reserved pairing bits are set");
  const end = at + 8 + Math.ceil(n / 8);
  if (body.length < end) throw new HelloProtocolError("pairing block cut short");
  const modes: ErrorHandling[] = [];
  for (let i = 0; i < n; i++) modes.push(body[at + 8 + (i >> 3)]! & (1 << (i & 7)) ? "peer" : "none");
  if (n & 7 && body[end - 1]! >> (n & 7)) throw new HelloProtocolError("pairing bits set past the last mode");
  return { pairing: { count, modes }, end };
}

/** A hello's or accept's body (what the proofs cover, auth.ts). */
export function greetingBody(g: Greeting): Uint8Array {
  if (g.auth !== undefined && g.auth.length !== AUTH_BYTES) throw new RangeError(`auth field of ${g.auth.length} bytes, not ${AUTH_BYTES}`);
  const authBytes = g.auth === undefined ? 0 : AUTH_BYTES;
  const pairing = g.pairing === undefined ? new Uint8Array(0) : pairingBlock(g.pairing);
  const fixed = 4 + pairing.length + authBytes;
  if (g.address.length + fixed > MAX_BODY) throw new RangeError(`worker address of ${g.address.length} bytes exceeds the hello's limit`);
  const body = new Uint8Array(fixed + g.address.length);
  body[0] = g.errorHandling === "peer" ? 1 : 0;
  body[1] = (g.auth === undefined ? 0 : GreetingFlag.Auth) | (g.pairing === undefined ? 0 : GreetingFlag.Pairing);
  new DataView(body.buffer).setUint16(2, g.scope, true);
  body.set(pairing, 4);
  if (g.auth) body.set(g.auth, 4 + pairing.length);
  body.set(g.address, fixed);
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

/** A challenge's body (the listener's part of the transcript, auth.ts). */
export function challengeBody(count: number, identity: Uint8Array, nonce?: Uint8Array): Uint8Array {
  if (nonce !== undefined && nonce.length !== AUTH_BYTES) throw new RangeError(`nonce of ${nonce.length} bytes`);
  if (identity.length === 0) throw new RangeError("a challenge names its listener");
  const nonceBytes = nonce === undefined ? 0 : AUTH_BYTES;
  const body = new Uint8Array(8 + nonceBytes + identity.length);
  body[0] = nonce === undefined ? 0 : GreetingFlag.Auth;
  new DataView(body.buffer).setUint32(4, count, true);
  if (nonce) body.set(nonce, 8);
  body.set(identity, 8 + nonceBytes);
  return body;
}

export function encodeChallenge(count: number, identity: Uint8Array, nonce?: Uint8Array): Uint8Array {
  return frame(HelloKind.Challenge, challengeBody(count, identity, nonce));
}

/** A proof's body without its proof (what the client's proof covers besides the transcript). */
export function proofPairingBody(pairing: Pairing, authenticated: boolean): Uint8Array {
  const block = pairingBlock(pairing);
  const body = new Uint8Array(4 + block.length);
  body[0] = authenticated ? GreetingFlag.Auth : 0;
  body.set(block, 4);
  return body;
}

export function encodeProof(pairing: Pairing, proof?: Uint8Array): Uint8Array {
  if (proof !== undefined && proof.length !== AUTH_BYTES) throw new RangeError(`proof of ${proof.length} bytes`);
  const head = proofPairingBody(pairing, proof !== undefined);
  const body = new Uint8Array(head.length + (proof?.length ?? 0));
  body.set(head, 0);
  if (proof) body.set(proof, head.length);
  return frame(HelloKind.Proof, body);
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
      case HelloKind.Challenge: {
        if (body.length < 8) throw new HelloProtocolError(`challenge of ${body.length} bytes`);
        const authenticated = checkFlagsWord(body, "challenge");
        const nonceBytes = authenticated ? AUTH_BYTES : 0;
        if (body.length <= 8 + nonceBytes) throw new HelloProtocolError(`challenge of ${body.length} bytes carries no listener identity`);
        return {
          kind: HelloKind.Challenge,
          count: new DataView(body.buffer, body.byteOffset).getUint32(4, true),
          ...(authenticated ? { nonce: body.slice(8, 8 + AUTH_BYTES) } : {}),
          identity: body.slice(8 + nonceBytes),
        };
      }
      case HelloKind.Proof: {
        if (body.length < 4) throw new HelloProtocolError(`proof of ${body.length} bytes`);
        const authenticated = checkFlagsWord(body, "proof");
        const { pairing, end } = readPairing(body, 4);
        if (body.length !== end + (authenticated ? AUTH_BYTES : 0)) throw new HelloProtocolError(`proof of ${body.length} bytes, not ${end + (authenticated ? AUTH_BYTES : 0)}`);
        return { kind: HelloKind.Proof, pairing, ...(authenticated ? { proof: body.slice(end) } : {}) };
      }
    }
    if (body.length < 4) throw new HelloProtocolError(`hello body of ${body.length} bytes carries no worker address`);
    if (body[0]! > 1) throw new HelloProtocolError(`unknown error-handling mode ${body[0]}`);
    if ((body[1]! & ~(GreetingFlag.Auth | GreetingFlag.Pairing)) !== 0) throw new HelloProtocolError(`unknown hello flags 0x${body[1]!.toString(16)}`);
    const hasPairing = (body[1]! & GreetingFlag.Pairing) !== 0;
    if (hasPairing !== (this.kind === HelloKind.Accept)) throw new HelloProtocolError(this.kind === HelloKind.Accept ? "an accept without its pairing block" : "a hello with a pairing block");
    const { pairing, end } = hasPairing ? readPairing(body, 4) : { pairing: undefined, end: 4 };
    const authBytes = body[1]! & GreetingFlag.Auth ? AUTH_BYTES : 0;
    if (body.length < end + 1 + authBytes) throw new HelloProtocolError(`hello body of ${body.length} bytes carries no worker address`);
    const scope = new DataView(body.buffer, body.byteOffset).getUint16(2, true);
    return {
      kind: this.kind as typeof HelloKind.Hello | typeof HelloKind.Accept,
      greeting: {
        errorHandling: body[0] === 1 ? "peer" : "none",
        scope,
        address: body.slice(end + authBytes),
        ...(authBytes ? { auth: body.slice(end, end + authBytes) } : {}),
        ...(pairing ? { pairing } : {}),
      },
    };
  }
}

/** A challenge's or proof's first word: flags (only Auth known), then zeros. True when authenticated. */
function checkFlagsWord(body: Uint8Array, what: string): boolean {
  if ((body[0]! & ~GreetingFlag.Auth) !== 0) throw new HelloProtocolError(`unknown ${what} flags 0x${body[0]!.toString(16)}`);
  if (body[1] !== 0 || body[2] !== 0 || body[3] !== 0) throw new HelloProtocolError(`reserved ${what} bits are set`);
  return body[0] === GreetingFlag.Auth;
}
