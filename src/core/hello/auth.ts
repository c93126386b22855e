/**
 * Authentication in the hello (wire.ts): both sides prove they hold the same secret before either
 * creates its UCX endpoint. Challenge-response with HMAC-SHA-256 (node:crypto, which Node, Deno
 * and Bun all provide) over fresh nonces from both sides:
 *
 *   client   -> hello      { ..., nonceC, clientAddress }
 *   listener -> challenge  { count, nonceS, listenerAddress }   (the listener's identity)
 *   client   -> proof      { pairing, HMAC(secret, CLIENT_LABEL | transcript | pairing) }
 *   listener -> accept     { ..., HMAC(secret, LISTENER_LABEL | transcript | accept), listenerAddress }
 *
 * transcript = the hello's body (nonceC and the client's worker address in it) | the challenge's
 * body (the listener's pairing count, nonceS and worker address), each length-prefixed; the
 * pairing counts (pairing.ts) are covered as well. So:
 * - a proof answers one connection's pair of nonces: a recorded one is useless later (replay);
 * - the two directions carry different labels: a challenge reflected back to its sender, or a
 *   client's proof replayed as a listener's, does not verify (reflection);
 * - both worker addresses, which the endpoints are then created to, are under the MAC: a party
 *   without the secret cannot swap in its own address to receive either side's endpoint;
 * - comparisons are constant-time (timingSafeEqual).
 * What it does not do: encrypt, or protect the UCX traffic after the hello (README,
 * "Authenticated listeners").
 */
import { createHmac, randomBytes, timingSafeEqual } from "node:crypto";
import { invalidArgument } from "../errors.ts";
import { AUTH_BYTES } from "./wire.ts";

/** `auth` of `listen` and `connect`. */
export interface HelloAuthOptions {
  /**
   * The shared secret, at least MIN_SECRET_BYTES bytes (a string is taken as UTF-8). Anyone who
   * saw a handshake can test guesses of the secret against it offline, so it must be random,
   * not a password (e.g. `openssl rand -hex 32`).
   */
  readonly secret: string | Uint8Array;
}

export const MIN_SECRET_BYTES = 16;
/** A secret file or string of more than this is refused as a mistake. */
const MAX_SECRET_BYTES = 4096;

const CLIENT_LABEL = new TextEncoder().encode("ucx-ts hello 3: client proof\0");
const LISTENER_LABEL = new TextEncoder().encode("ucx-ts hello 3: listener proof\0");

/** The secret's bytes, checked: a typed UCX_TS_INVALID_ARGUMENT for anything unusable. */
export function secretBytes(auth: HelloAuthOptions | undefined): Uint8Array | undefined {
  if (auth === undefined) return undefined;
  if (auth === null || typeof auth !== "object") throw invalidArgument("auth must be an object { secret }");
  const s = auth.secret;
  const bytes = typeof s === "string" ? new TextEncoder().encode(s) : s instanceof Uint8Array ? s.slice() : undefined;
  if (bytes === undefined) throw invalidArgument("auth.secret must be a string or a Uint8Array");
  if (bytes.length < MIN_SECRET_BYTES) throw invalidArgument(`auth.secret has ${bytes.length} bytes; at least ${MIN_SECRET_BYTES} random bytes are needed`);
  if (bytes.length > MAX_SECRET_BYTES) throw invalidArgument(`auth.secret has ${bytes.length} bytes; at most ${MAX_SECRET_BYTES}`);
  return bytes;
}

export function freshNonce(): Uint8Array {
  return new Uint8Array(randomBytes(AUTH_BYTES));
}

function lengthPrefixed(bytes: Uint8Array): Uint8Array[] {
  const length = new Uint8Array(4);
  new DataView(length.buffer).setUint32(0, bytes.length, true);
  return [length, bytes];
}

function mac(secret: Uint8Array, parts: Uint8Array[]): Uint8Array {
  const h = createHmac("sha256", secret);
  for (const p of parts) h.update(p);
  return new Uint8Array(h.digest());
}

/** What both proofs cover: the client's hello body and the listener's challenge body. */
export interface Transcript {
  readonly helloBody: Uint8Array;
  /** The challenge's body: the listener's count, nonce and identity (wire.ts, challengeBody). */
  readonly challengeBody: Uint8Array;
  /** The listener's worker address, as the challenge named it (also inside challengeBody). */
  readonly listenerIdentity: Uint8Array;
}

function transcriptParts(t: Transcript): Uint8Array[] {
  return [...lengthPrefixed(t.helloBody), ...lengthPrefixed(t.challengeBody)];
}

/** `proofBody`: the proof's body without the proof (wire.ts, proofPairingBody): its counts are covered too. */
export function clientProof(secret: Uint8Array, t: Transcript, proofBody: Uint8Array): Uint8Array {
  return mac(secret, [CLIENT_LABEL, ...transcriptParts(t), ...lengthPrefixed(proofBody)]);
}

/** `acceptBody`: the accept's body with its proof field zeroed (wire.ts, greetingBody). */
export function listenerProof(secret: Uint8Array, t: Transcript, acceptBody: Uint8Array): Uint8Array {
  return mac(secret, [LISTENER_LABEL, ...transcriptParts(t), ...lengthPrefixed(acceptBody)]);
}

/** Constant-time equality of a received proof with the expected one. */
export function proofMatches(received: Uint8Array, expected: Uint8Array): boolean {
  return received.length === expected.length && timingSafeEqual(received, expected);
}

/**
 * `auth` where there is no hello: `connect(address)` and `listen({ protocol: "ucx" })`. A UCX
 * worker address lets whoever holds it create an endpoint to that worker and send to it; UCX 1.13
 * gives the receiving worker no hook to refuse the wire-up, and no endpoint object of its own
 * to answer a challenge on. A challenge-response after the fact (over AM on the new endpoint)
 * could only tell the connecting side who the peer is; it could never keep a stranger out of the
 * peer's worker, which is what `auth` promises. So the option is refused rather than pretended.
 */
export function authWithoutHello(): Error {
  return invalidArgument(
    "auth needs the hello: connect({ host, port }) to a listen() port. A worker address (or a UCX " +
      "listener) lets anyone holding it reach the worker, with no step where a secret could be checked",
  );
}
