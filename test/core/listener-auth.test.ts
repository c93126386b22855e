/**
 * Authenticated listeners (hello/auth.ts): matching secrets connect; a wrong secret, a missing
 * one on either side, a replayed handshake, a reflected proof, a late or silent prover are closed
 * with UCX_TS_AUTH_FAILED or UCS_ERR_TIMED_OUT, and never reach onConnection or create an
 * endpoint; a flood of silent connections does not keep an honest client out.
 */
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { connect, createServer, type Socket } from "node:net";
import { Worker, UcxError, type Endpoint, type Listener } from "../../src/index.ts";
import { encodeChallenge, encodeGreeting, encodeProof, HelloKind, type HelloMessage, HelloReader } from "../../src/core/hello/wire.ts";
import { drive, pattern, samePattern } from "../helpers/workers.ts";

const test = suite("core/listener auth");
const SECRET = "a test secret of 32 bytes, fixed";
const host = "127.0.0.1";

/** The server worker's live endpoints (to show that a refused peer created none). */
const endpointCount = (w: Worker) => w.endpointCount;

interface Setup {
  server: Worker;
  client: Worker;
  listener: Listener;
  accepted: Endpoint[];
  errors: UcxError[];
  run<T>(p: Promise<T>, timeoutMs?: number): Promise<T>;
  close(): Promise<void>;
}

async function setup(listen: Parameters<Worker["listen"]>[0] = {}): Promise<Setup> {
  const server = await Worker.create({ progressMode: "polling" });
  const client = await Worker.create({ progressMode: "polling" });
  const run = <T>(p: Promise<T>, timeoutMs?: number) => drive([server, client], p, timeoutMs);
  const accepted: Endpoint[] = [];
  const errors: UcxError[] = [];
  const listener = await run(server.listen({ host, port: 0, auth: { secret: SECRET }, onConnection: (ep) => accepted.push(ep), onError: (e) => errors.push(e), ...listen }));
  return { server, client, listener, accepted, errors, run, close: () => run(Promise.all([server.close(), client.close()])).then(() => {}) };
}

const failure = (p: Promise<unknown>) => p.then(() => null, (e: unknown) => e as UcxError);

/** A raw TCP peer speaking the hello by hand: each message the other side sends, in order. */
function rawPeer(socket: Socket) {
  const reader = new HelloReader();
  const messages: HelloMessage[] = [];
  const waiters: ((m: HelloMessage | "closed") => void)[] = [];
  let closed = false;
  socket.on("error", () => {});
  socket.on("data", (chunk: Uint8Array) => {
    const m = reader.push(chunk);
    if (!m) return;
    reader.next();
    const w = waiters.shift();
    if (w) w(m);
    else messages.push(m);
  });
  socket.on("close", () => {
    closed = true;
    for (const w of waiters.splice(0)) w("closed");
  });
  return {
    next: (): Promise<HelloMessage | "closed"> =>
      messages.length ? Promise.resolve(messages.shift()!) : closed ? Promise.resolve("closed") : new Promise((r) => waiters.push(r)),
    closed: () => (closed ? Promise.resolve() : new Promise<void>((r) => socket.on("close", () => r()))),
  };
}

function tcp(port: number): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const s = connect({ host, port }, () => resolve(s));
    s.once("error", reject);
  });
}

test("matching secrets connect and exchange data both ways; nothing is reported", async () => {
  const t = await setup();
  try {
    const ep = await t.run(t.client.connect({ host, port: t.listener.port }, { auth: { secret: new TextEncoder().encode(SECRET) } }));
    assert.is(t.accepted.length, 1);
    const [a, b] = [new Uint8Array(1000), new Uint8Array(1000)];
    await t.run(Promise.all([t.accepted[0]!.recv(a, 1), ep.send(pattern(1000, 1), 1), ep.recv(b, 2), t.accepted[0]!.send(pattern(1000, 2), 2)]));
    assert.ok(samePattern(a, 1) && samePattern(b, 2));
    assert.equal(t.errors, []);
  } finally {
    await t.close();
  }
});

test("a wrong secret, no secret, or a secret against a plain listener: UCX_TS_AUTH_FAILED on both sides, no endpoint made", async () => {
  const t = await setup();
  const plain = await t.run(t.server.listen({ host, port: 0, onConnection: (ep) => t.accepted.push(ep), onError: (e) => t.errors.push(e) }));
  try {
    const before = endpointCount(t.server);
    const wrong = await t.run(failure(t.client.connect({ host, port: t.listener.port }, { auth: { secret: SECRET.replace("a", "A") } })));
    assert.is(wrong?.code, "UCX_TS_AUTH_FAILED");
    assert.match(wrong!.message, /authentication failed/);
    const none = await t.run(failure(t.client.connect({ host, port: t.listener.port })));
    assert.is(none?.code, "UCX_TS_AUTH_FAILED");
    assert.match(none!.message, /requires authentication/);
    const unasked = await t.run(failure(t.client.connect({ host, port: plain.port }, { auth: { secret: SECRET } })));
    assert.is(unasked?.code, "UCX_TS_AUTH_FAILED");
    assert.match(unasked!.message, /does not authenticate/);
    await t.run(new Promise((r) => setTimeout(r, 50)));
    assert.equal(
      t.errors.map((e) => e.code),
      ["UCX_TS_AUTH_FAILED", "UCX_TS_AUTH_FAILED", "UCX_TS_AUTH_FAILED"],
    );
    assert.match(t.errors[0]!.message, /proof does not match/);
    assert.is(t.accepted.length, 0, "a refused peer reached onConnection");
    assert.is(endpointCount(t.server), before, "a refused peer made an endpoint");
    assert.is(endpointCount(t.client), 0);
    // Bad options are refused before anything is sent.
    for (const auth of [{ secret: "short" }, { secret: 7 }, null]) {
      const e = await t.run(failure(t.client.connect({ host, port: t.listener.port }, { auth: auth as never })));
      assert.is(e?.code, "UCX_TS_INVALID_ARGUMENT", JSON.stringify(auth));
    }
    // By worker address there is no hello to authenticate in: refused, saying why.
    const byAddress = await t.run(failure(t.server.address().then((addr) => t.client.connect(addr, { auth: { secret: SECRET } }))));
    assert.is(byAddress?.code, "UCX_TS_INVALID_ARGUMENT");
    assert.match(byAddress!.message, /auth needs the hello/);
    const ucxListener = await t.run(failure(t.server.listen({ protocol: "ucx", auth: { secret: SECRET } })));
    assert.is(ucxListener?.code, "UCX_TS_INVALID_ARGUMENT");
    // And the right secret still gets in.
    await t.run(t.client.connect({ host, port: t.listener.port }, { auth: { secret: SECRET } }));
    assert.is(t.accepted.length, 1);
  } finally {
    await t.run(plain.close());
    await t.close();
  }
});

test("a recorded handshake replayed, a silent prover and a late prover are closed; none surfaces", async () => {
  const t = await setup({ handshakeTimeoutMs: 300 });
  // A proxy between an honest client and the listener records what the client sends.
  const recorded: Uint8Array[] = [];
  const proxy = createServer((inbound) => {
    const outbound = connect({ host, port: t.listener.port });
    inbound.on("data", (c: Uint8Array) => {
      recorded.push(new Uint8Array(c));
      outbound.write(c);
    });
    outbound.on("data", (c) => inbound.write(c));
    for (const s of [inbound, outbound]) s.on("error", () => {});
    inbound.on("close", () => outbound.destroy());
    outbound.on("close", () => inbound.destroy());
  });
  const proxyPort = await new Promise<number>((r) => proxy.listen(0, host, () => r((proxy.address() as { port: number }).port)));
  try {
    await t.run(t.client.connect({ host, port: proxyPort }, { auth: { secret: SECRET } }));
    assert.is(t.accepted.length, 1);
    assert.is(recorded.length, 2, "the client sent its hello and its proof");
    // Replay: the listener's fresh nonce makes the old proof wrong.
    const s1 = await tcp(t.listener.port);
    const r1 = rawPeer(s1);
    s1.write(recorded[0]!);
    const challenge = await t.run(r1.next());
    assert.ok(challenge !== "closed" && challenge.kind === HelloKind.Challenge);
    s1.write(recorded[1]!);
    const refusal = await t.run(r1.next());
    assert.ok(refusal !== "closed" && refusal.kind === HelloKind.Refuse, "a replayed proof was not refused");
    await t.run(r1.closed());
    // Silent after the challenge, and a proof after the deadline.
    const s2 = await tcp(t.listener.port);
    const r2 = rawPeer(s2);
    s2.write(recorded[0]!);
    const s3 = await tcp(t.listener.port);
    const r3 = rawPeer(s3);
    s3.write(recorded[0]!);
    assert.is(((await t.run(r2.next())) as HelloMessage).kind, HelloKind.Challenge);
    assert.is(((await t.run(r3.next())) as HelloMessage).kind, HelloKind.Challenge);
    await t.run(new Promise((r) => setTimeout(r, 400)));
    s3.write(encodeProof({ count: 0, modes: [] }, new Uint8Array(32)));
    await t.run(Promise.all([r2.closed(), r3.closed()]));
    await t.run(new Promise((r) => setTimeout(r, 50)));
    const codes = t.errors.map((e) => e.code).sort();
    // The replay refused, the silent one and the late one timed out.
    assert.equal(codes.filter((c) => c === "UCX_TS_AUTH_FAILED").length, 1, codes.join());
    assert.ok(codes.filter((c) => c === "UCS_ERR_TIMED_OUT").length >= 2, codes.join());
    assert.is(t.accepted.length, 1, "a replayed or late handshake reached onConnection");
    for (const s of [s1, s2, s3]) s.destroy();
  } finally {
    proxy.close();
    await t.close();
  }
});

test("a fake listener that reflects the client's nonce and proof back is refused by the client before any endpoint", async () => {
  const client = await Worker.create({ progressMode: "polling" });
  const sockets: Socket[] = [];
  const fake = createServer((s) => {
    sockets.push(s);
    const peer = rawPeer(s);
    void (async () => {
      const hello = await peer.next();
      if (hello === "closed" || hello.kind !== HelloKind.Hello) return;
      const g = hello.greeting;
      // Challenge the client with its own nonce and address, then hand its proof back as ours.
      s.write(encodeChallenge(0, g.address, g.auth!));
      const proof = await peer.next();
      if (proof === "closed" || proof.kind !== HelloKind.Proof) return;
      s.write(encodeGreeting(HelloKind.Accept, { errorHandling: g.errorHandling, scope: 9, address: g.address, auth: proof.proof, pairing: { count: 0, modes: [] } }));
    })();
  });
  const port = await new Promise<number>((r) => fake.listen(0, host, () => r((fake.address() as { port: number }).port)));
  try {
    const e = await drive([client], failure(client.connect({ host, port }, { auth: { secret: SECRET } })));
    assert.is(e?.code, "UCX_TS_AUTH_FAILED");
    assert.match(e!.message, /listener's proof does not match/);
    assert.is(endpointCount(client), 0);
  } finally {
    for (const s of sockets) s.destroy();
    fake.close();
    await drive([client], client.close());
  }
});

test("a flood of silent connections (25x the cap) does not keep honest authenticated clients out", async () => {
  const t = await setup({ maxPendingHandshakes: 8, handshakeTimeoutMs: 5000 });
  const flood: Socket[] = [];
  try {
    const silent = () =>
      new Promise<void>((resolve) => {
        const s = connect({ host, port: t.listener.port }, () => resolve());
        s.on("error", () => resolve());
        flood.push(s);
      });
    const times: number[] = [];
    for (let i = 0; i < 5; i++) {
      // 40 silent connections, all connected, then an honest client while they are pending.
      await t.run(Promise.all(Array.from({ length: 40 }, silent)));
      const started = Date.now();
      await t.run(t.client.connect({ host, port: t.listener.port }, { auth: { secret: SECRET } }), 10_000);
      times.push(Date.now() - started);
    }
    assert.is(t.accepted.length, 5);
    assert.ok(Math.max(...times) < 3000, `honest connects took ${times.join(", ")} ms`);
    assert.ok(t.errors.filter((e) => e.code === "UCX_TS_LIMIT_EXCEEDED").length >= flood.length - 8 - 5, `${t.errors.length} errors for ${flood.length} silent connections`);
  } finally {
    for (const s of flood) s.destroy();
    await t.close();
  }
});

test.run();
