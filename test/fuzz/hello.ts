/**
 * The hello (src/core/hello/wire.ts, server.ts, auth.ts). Two parts:
 * - the reader alone: valid messages of every kind, mutated (cut, extended, bit flips, lengths up
 *   to 2^32-1) and fed in random chunks: a HelloProtocolError or a message that re-encodes to
 *   the bytes sent, and never a body buffer beyond MAX_BODY;
 * - a real authenticated listener, from raw TCP connections: hellos mutated, proofs made with
 *   another secret, with the listener's label (a reflection), random, one bit off, cut, followed
 *   by garbage, or never sent. Every one is closed and reported as a UcxError, none reaches
 *   onConnection; honest authenticated clients connect in between, and afterwards.
 */
import { connect, type Socket } from "node:net";
import { type Endpoint, type UcxError } from "../../src/index.ts";
import { clientProof, listenerProof } from "../../src/core/hello/auth.ts";
import type { Pairing } from "../../src/core/hello/pairing.ts";
import { MAX_PAIRING_GAP } from "../../src/core/hello/pairing.ts";
import {
  challengeBody,
  encodeChallenge,
  encodeGreeting,
  encodeProof,
  encodeRefusal,
  greetingBody,
  HelloKind,
  HelloProtocolError,
  HelloReader,
  MAX_BODY,
  proofPairingBody,
  type HelloMessage,
} from "../../src/core/hello/wire.ts";
import { count, type FuzzContext, type FuzzReport, hex, sameBytes } from "./context.ts";

const SECRET = new TextEncoder().encode("fuzzing secret, 32 bytes long...");
const OTHER = new TextEncoder().encode("another secret, 32 bytes long...");

function reencode(m: HelloMessage): Uint8Array | undefined {
  switch (m.kind) {
    case HelloKind.Hello:
    case HelloKind.Accept:
      return encodeGreeting(m.kind, m.greeting);
    case HelloKind.Challenge:
      return encodeChallenge(m.count, m.identity, m.nonce);
    case HelloKind.Proof:
      return encodeProof(m.pairing, m.proof);
    default:
      return undefined; // a refusal's reason is cut and its code normalised: not byte-exact
  }
}

function readerPart(ctx: FuzzContext, address: Uint8Array, outcomes: Record<string, number>): number {
  const pairing = () => ({ count: ctx.int(2 ** 32), modes: Array.from({ length: ctx.int(MAX_PAIRING_GAP + 1) }, () => ctx.pick(["none", "peer"] as const)) });
  const valid = [
    () => encodeGreeting(HelloKind.Hello, { errorHandling: "peer", scope: 1 + ctx.int(65535), address }),
    () => encodeGreeting(HelloKind.Hello, { errorHandling: "none", scope: 1, address, auth: ctx.bytes(32) }),
    () => encodeGreeting(HelloKind.Accept, { errorHandling: "peer", scope: 2, address, auth: ctx.bytes(32), pairing: pairing() }),
    () => encodeGreeting(HelloKind.Accept, { errorHandling: "none", scope: 3, address, pairing: pairing() }),
    () => encodeChallenge(ctx.int(2 ** 32), address, ctx.bytes(32)),
    () => encodeChallenge(ctx.int(2 ** 32), address),
    () => encodeProof(pairing(), ctx.bytes(32)),
    () => encodeProof(pairing()),
    () => encodeRefusal("no", ctx.int(4) as 0),
  ];
  let n = 0;
  const started = Date.now();
  while (n < 300 || Date.now() - started < 100) {
    let bytes = ctx.pick(valid)();
    const how = n++ % 5;
    if (how === 1) bytes = bytes.slice(0, ctx.int(bytes.length));
    else if (how === 2) bytes = Uint8Array.from([...bytes, ...ctx.bytes(1 + ctx.int(8))]);
    else if (how === 3) for (let f = 1 + ctx.int(3); f > 0; f--) bytes[ctx.int(bytes.length)]! ^= 1 << ctx.int(8);
    else if (how === 4) new DataView(bytes.buffer).setUint32(8, ctx.pick([MAX_BODY, MAX_BODY + 1, 0xffffffff, ctx.int(2 ** 32)]), true);
    const reader = new HelloReader();
    let message: HelloMessage | undefined;
    let at = 0;
    try {
      while (at < bytes.length && !message) {
        const step = 1 + ctx.int(64);
        message = reader.push(bytes.subarray(at, at + step));
        at += step;
        const body = (reader as unknown as { body?: Uint8Array }).body;
        if (body && body.length > MAX_BODY) throw new Error(`the reader allocated ${body.length} bytes; ${hex(bytes)}`);
      }
      if (message) {
        const again = reencode(message);
        if (again && !sameBytes(again, bytes.subarray(0, again.length))) throw new Error(`a decoded hello does not re-encode to its bytes: ${hex(bytes)}`);
        count(outcomes, "reader: message");
      } else count(outcomes, "reader: incomplete");
    } catch (e) {
      if (!(e instanceof HelloProtocolError)) throw e;
      count(outcomes, "reader: HelloProtocolError");
    }
  }
  return n;
}

type ProofKind = "other secret" | "listener label" | "random" | "one bit off" | "cut" | "garbage after" | "silent" | "mutated hello" | "bogus pairing";
const PROOFS: readonly ProofKind[] = ["other secret", "listener label", "random", "one bit off", "cut", "garbage after", "silent", "mutated hello", "bogus pairing"];

/** One raw connection; resolves when the listener has closed it, saying whether it ever accepted. */
function hostileClient(ctx: FuzzContext, port: number, address: Uint8Array, kind: ProofKind): Promise<{ accepted: boolean }> {
  return new Promise((resolve) => {
    const socket: Socket = connect({ host: "127.0.0.1", port });
    const reader = new HelloReader();
    let accepted = false;
    const greeting = { errorHandling: "peer" as const, scope: 1 + ctx.int(1000), address, auth: ctx.bytes(32) };
    let hello = encodeGreeting(HelloKind.Hello, greeting);
    if (kind === "mutated hello") {
      hello = hello.slice();
      for (let f = 1 + ctx.int(3); f > 0; f--) hello[ctx.int(hello.length)]! ^= 1 << ctx.int(8);
    }
    socket.on("error", () => {});
    socket.on("close", () => resolve({ accepted }));
    socket.on("connect", () => {
      // Random chunking: the listener must reassemble.
      const cut = ctx.int(hello.length);
      socket.write(hello.subarray(0, cut));
      socket.write(hello.subarray(cut));
    });
    socket.on("data", (chunk: Uint8Array) => {
      let m;
      try {
        m = reader.push(chunk);
      } catch {
        return socket.destroy();
      }
      if (!m) return;
      reader.next();
      if (m.kind === HelloKind.Accept) accepted = true;
      if (m.kind !== HelloKind.Challenge) return;
      if (!m.nonce) return socket.destroy(); // an authenticated listener always sends one
      const t = { helloBody: greetingBody(greeting), challengeBody: challengeBody(m.count, m.identity, m.nonce), listenerIdentity: m.identity };
      // Honest counts: this address's worker made no endpoints to the listener's.
      const honestPairing = { count: 0, modes: [] };
      const signed = (pairing: Pairing, secret = SECRET) => clientProof(secret, t, proofPairingBody(pairing, true));
      const right = signed(honestPairing);
      let proof: Uint8Array;
      switch (kind) {
        case "other secret":
          proof = encodeProof(honestPairing, signed(honestPairing, OTHER));
          break;
        case "listener label":
          proof = encodeProof(honestPairing, listenerProof(SECRET, t, proofPairingBody(honestPairing, true)));
          break;
        case "one bit off":
          right[ctx.int(32)]! ^= 1 << ctx.int(8);
          proof = encodeProof(honestPairing, right);
          break;
        case "cut": {
          const whole = encodeProof(honestPairing, right);
          proof = whole.subarray(0, 12 + ctx.int(whole.length - 12));
          break;
        }
        case "garbage after":
          proof = Uint8Array.from([...encodeProof(honestPairing, right), ...ctx.bytes(1 + ctx.int(8))]);
          break;
        case "bogus pairing": {
          // Signed with the secret, but claiming endpoints it cannot give the modes of, or more
          // than a hello fills: the listener must refuse to make them, not create fillers.
          const gap = 1 + ctx.int(MAX_PAIRING_GAP * 2);
          const bogus = { count: m.count + gap, modes: Array.from({ length: ctx.int(Math.min(gap, MAX_PAIRING_GAP + 1)) }, () => "none" as const) };
          proof = encodeProof(bogus, signed(bogus));
          break;
        }
        case "silent":
          return;
        default:
          proof = encodeProof(honestPairing, ctx.bytes(32));
      }
      socket.write(proof);
      // A cut proof leaves the listener waiting: its deadline closes the connection.
    });
  });
}

export async function fuzzHello(ctx: FuzzContext): Promise<FuzzReport> {
  const outcomes: Record<string, number> = {};
  const address = await ctx.run(ctx.a.address());
  const readerInputs = readerPart(ctx, address, outcomes);
  const accepted: Endpoint[] = [];
  const errors: UcxError[] = [];
  const listener = await ctx.run(
    ctx.b.listen({ host: "127.0.0.1", port: 0, auth: { secret: SECRET }, handshakeTimeoutMs: 300, onConnection: (ep) => accepted.push(ep), onError: (e) => errors.push(e) }),
  );
  let inputs = 0;
  let honest = 0;
  const pending: Promise<{ accepted: boolean }>[] = [];
  try {
    while (ctx.going(inputs)) {
      const kind = PROOFS[inputs++ % PROOFS.length]!;
      const client = hostileClient(ctx, listener.port, address, kind);
      // The slow ones (silent, cut) run alongside; the others one after another.
      if (kind === "silent" || kind === "cut") pending.push(client);
      else if ((await ctx.run(client, 5000)).accepted) throw new Error(`the listener accepted a ${kind} client (seed ${ctx.seed})`);
      count(outcomes, `listener: ${kind}`);
      if (inputs % 25 === 0) {
        const ep = await ctx.run(ctx.a.connect({ host: "127.0.0.1", port: listener.port }, { auth: { secret: SECRET } }));
        honest++;
        await ctx.run(ep.close({ force: true }));
      }
    }
    for (const r of await ctx.run(Promise.all(pending), 10_000)) if (r.accepted) throw new Error(`the listener accepted a silent or cut client (seed ${ctx.seed})`);
    const ep = await ctx.run(ctx.a.connect({ host: "127.0.0.1", port: listener.port }, { auth: { secret: SECRET } }));
    honest++;
    const into = new Uint8Array(3);
    await ctx.run(Promise.all([accepted[accepted.length - 1]!.recv(into, 5), ep.send(Uint8Array.of(1, 2, 3), 5)]));
    if (into.join() !== "1,2,3") throw new Error("the honest client after the fuzz could not send");
    if (accepted.length !== honest) throw new Error(`${accepted.length} connections accepted, ${honest} honest ones made`);
    for (const e of errors) count(outcomes, `reported: ${e.code}`);
    if (errors.length < inputs) throw new Error(`${inputs} hostile connections, only ${errors.length} reported`);
  } finally {
    await ctx.run(listener.close());
  }
  return { inputs: inputs + readerInputs, outcomes, honest };
}
