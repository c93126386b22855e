/**
 * The default listener (ucx-ts's hello on the runtime's TCP server) and endpoint-scoped tags:
 * strangers' bytes, silent connections, refusals, concurrent connects between one pair, and
 * receives that take only their own peer's messages.
 */
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { connect, type Socket } from "node:net";
import { Worker, UcxError, USER_TAG_MASK, type Endpoint, type Listener } from "../../src/index.ts";
import { lastJson, runScript } from "../helpers/spawn.ts";
import { drive, pattern, samePattern } from "../helpers/workers.ts";

const MODES = ["thread", "polling"] as const;

for (const mode of MODES) {
  const test = suite(`core/listener hello (${mode})`);

  test("raw TCP clients (0 B to 1 MiB of random and 0xff bytes, 1,000 connect/close cycles) leave the listener alive and usable", async () => {
    const r = await runScript("test/helpers/hostile-listener.ts", [mode, "hello"], { timeoutMs: 90_000 });
    assert.is(r.signal, null, `the listener process died of ${r.signal}: ${r.stderr.slice(-2000)}`);
    assert.is(r.code, 0, r.stderr.slice(-2000));
    const out = lastJson(r.stdout) as { hostile: number; cycles: number; errors: Record<string, number>; echo: string; otherPorts: number };
    // UCX's tcp transport listens too (one port per interface): it got the same garbage.
    assert.ok(out.otherPorts >= 1, "no other listening port found: UCX's tcp transport was not exercised");
    assert.is(out.hostile, 10 * (1 + out.otherPorts));
    assert.is(out.cycles, 1000);
    assert.is(out.echo, "hello/olleh");
    // Every connection that brought no hello was reported, none accepted.
    const reported = Object.values(out.errors).reduce((a, b) => a + b, 0);
    assert.ok(reported >= 1000, `only ${reported} refused connections reported: ${JSON.stringify(out.errors)}`);
    assert.ok((out.errors["UCX_TS_PROTOCOL_ERROR"] ?? 0) >= 8, `garbage not reported as such: ${JSON.stringify(out.errors)}`);
  });

  test("silent connections: past the cap each new one closes the oldest at once, the rest close after the handshake timeout; a client then connects", async () => {
    const server = await Worker.create({ progressMode: mode });
    const client = await Worker.create({ progressMode: mode });
    const run = <T>(p: Promise<T>) => drive([server, client], p);
    const errors: UcxError[] = [];
    const sockets: Socket[] = [];
    try {
      const listener = await run(server.listen({ host: "127.0.0.1", port: 0, maxPendingHandshakes: 4, handshakeTimeoutMs: 400, onError: (e) => errors.push(e) }));
      const started = Date.now();
      const closedAfter = await run(
        Promise.all(
          Array.from({ length: 10 }, (_, i) => {
            return new Promise<number>((resolve) => {
              // One at a time in order: each of the last six evicts the oldest, the last four time out.
              setTimeout(() => {
                const s = connect({ host: "127.0.0.1", port: listener.port });
                sockets.push(s);
                s.on("error", () => {});
                s.on("close", () => resolve(Date.now() - started));
              }, i * 20);
            });
          }),
        ),
      );
      const early = closedAfter.filter((t) => t < 350).length;
      assert.is(early, 6, `closed at once: ${closedAfter.join(", ")} ms`);
      assert.ok(closedAfter.slice(0, 6).every((t) => t < 350), `evicted: ${closedAfter.slice(0, 6).join(", ")} ms`);
      assert.ok(closedAfter.slice(6).every((t) => t >= 350), `timeouts: ${closedAfter.slice(6).join(", ")} ms`);
      assert.is(errors.filter((e) => e.code === "UCX_TS_LIMIT_EXCEEDED").length, 6);
      assert.is(errors.filter((e) => e.code === "UCS_ERR_TIMED_OUT").length, 4);
      const [accepted, ep] = await run(Promise.all([listener.accept(), client.connect({ host: "127.0.0.1", port: listener.port })]));
      const into = new Uint8Array(64);
      await run(Promise.all([accepted.recv(into, 1), ep.send(pattern(64, 1), 1)]));
      assert.ok(samePattern(into, 1));
    } finally {
      for (const s of sockets) s.destroy();
      await run(Promise.all([server.close(), client.close()]));
    }
  });

  test("a peer-mode client against a 'none' listener is refused with a reason, on both sides; a matching client is accepted", async () => {
    const server = await Worker.create({ progressMode: mode });
    const client = await Worker.create({ progressMode: mode });
    const run = <T>(p: Promise<T>) => drive([server, client], p);
    try {
      const listener = await run(server.listen({ host: "127.0.0.1", port: 0, errorHandling: "none" }));
      const reported = new Promise<UcxError>((resolve) => (listener.onError = resolve));
      const err = await run(client.connect({ host: "127.0.0.1", port: listener.port }, { errorHandling: "peer" }).then(() => null, (e: unknown) => e));
      assert.instance(err, UcxError);
      assert.is((err as UcxError).code, "UCS_ERR_REJECTED");
      assert.match((err as UcxError).message, /error handling 'peer'/);
      const seen = await run(reported);
      assert.is(seen.code, "UCS_ERR_REJECTED");
      assert.match(seen.message, /'none'/);
      const [accepted, ep] = await run(Promise.all([listener.accept(), client.connect({ host: "127.0.0.1", port: listener.port }, { errorHandling: "none" })]));
      assert.is(accepted.errorHandling, "none");
      const into = new Uint8Array(8);
      await run(Promise.all([ep.recv(into, 2), accepted.send(pattern(8, 2), 2)]));
      assert.ok(samePattern(into, 2));
    } finally {
      await run(Promise.all([server.close(), client.close()]));
    }
  });

  test("connect errors are typed and prompt: a hello to a plain TCP server that closes, and to one that never answers", async () => {
    const client = await Worker.create({ progressMode: mode });
    const { createServer } = await import("node:net");
    const closing = createServer((s) => s.destroy());
    const silent = createServer(() => {});
    const port = (s: ReturnType<typeof createServer>) => new Promise<number>((r) => s.listen(0, "127.0.0.1", () => r((s.address() as { port: number }).port)));
    try {
      const [p1, p2] = [await port(closing), await port(silent)];
      const e1 = await drive([client], client.connect({ host: "127.0.0.1", port: p1 }).then(() => null, (e: unknown) => e));
      assert.instance(e1, UcxError);
      assert.is((e1 as UcxError).code, "UCS_ERR_CONNECTION_RESET");
      const started = Date.now();
      const e2 = await drive([client], client.connect({ host: "127.0.0.1", port: p2 }).then(() => null, (e: unknown) => e), 30_000);
      assert.instance(e2, UcxError);
      assert.is((e2 as UcxError).code, "UCS_ERR_TIMED_OUT");
      assert.ok(Date.now() - started < 15_000);
    } finally {
      closing.close();
      silent.close();
      await drive([client], client.close());
    }
  });

  test("two clients send the same tag to one server: each accepted endpoint's recv gets its own peer's message, 1,000 times interleaved", async () => {
    const server = await Worker.create({ progressMode: mode });
    const c1 = await Worker.create({ progressMode: mode });
    const c2 = await Worker.create({ progressMode: mode });
    const run = <T>(p: Promise<T>) => drive([server, c1, c2], p, 60_000);
    try {
      const listener = await run(server.listen({ host: "127.0.0.1", port: 0 }));
      const [a1, e1] = await run(Promise.all([listener.accept(), c1.connect({ host: "127.0.0.1", port: listener.port })]));
      const [a2, e2] = await run(Promise.all([listener.accept(), c2.connect({ host: "127.0.0.1", port: listener.port })]));
      assert.ok(a1.scope !== a2.scope && a1.scope! > 0 && a2.scope! > 0, `scopes ${a1.scope}, ${a2.scope}`);
      const b1 = new Uint8Array(32);
      const b2 = new Uint8Array(32);
      for (let i = 0; i < 1000; i++) {
        // The second client's message is sent first on odd rounds, so either may be first in UCX's queue.
        const [second, first] = i % 2 ? [e1, e2] : [e2, e1];
        const sends = [first.send(pattern(32, first === e1 ? 2 * i : 2 * i + 1), 42), second.send(pattern(32, second === e1 ? 2 * i : 2 * i + 1), 42)];
        const [r2, r1] = await run(Promise.all([a2.recv(b2, 42), a1.recv(b1, 42), ...sends]));
        assert.equal([r1, r2], [{ tag: 42, length: 32 }, { tag: 42, length: 32 }]);
        if (!samePattern(b1, 2 * i) || !samePattern(b2, 2 * i + 1)) assert.unreachable(`round ${i}: a receive got the other peer's message`);
      }
      // The other way: one tag to both clients, each gets its own.
      const [g1, g2] = [new Uint8Array(16), new Uint8Array(16)];
      await run(Promise.all([e1.recv(g1, 7), e2.recv(g2, 7), a2.send(pattern(16, 22), 7), a1.send(pattern(16, 11), 7)]));
      assert.ok(samePattern(g1, 11) && samePattern(g2, 22));
      // A mask on a scoped receive applies to the user's 48 bits; the peer's tag comes back without the scope.
      const m = new Uint8Array(4);
      const [got] = await run(Promise.all([a1.recv(m, 0, 0), e1.send(pattern(4, 3), 2 ** 48 - 1)]));
      assert.equal(got, { tag: 2 ** 48 - 1, length: 4 });
      // The worker-wide receive still sees a scoped message under USER_TAG_MASK.
      const w = new Uint8Array(4);
      const [wide] = await run(Promise.all([server.recv(w, 99, USER_TAG_MASK), e2.send(pattern(4, 4), 99)]));
      assert.is(Number(BigInt(wide.tag) & BigInt(USER_TAG_MASK)), 99);
      assert.ok(samePattern(w, 4));
      // A tag that needs the scope's bits is refused on a scoped endpoint.
      assert.throws(() => e1.send(new Uint8Array(1), 2 ** 48), (e: UcxError) => e.code === "UCX_TS_INVALID_ARGUMENT" && /48 bits/.test(e.message));
    } finally {
      await run(Promise.all([server.close(), c1.close(), c2.close()]));
    }
  });

  test("multi-buffer batches with the same tag from two clients land in their own endpoints' recvMulti", async () => {
    const server = await Worker.create({ progressMode: mode });
    const c1 = await Worker.create({ progressMode: mode });
    const c2 = await Worker.create({ progressMode: mode });
    const run = <T>(p: Promise<T>) => drive([server, c1, c2], p, 60_000);
    try {
      const listener = await run(server.listen({ host: "127.0.0.1", port: 0 }));
      const [a1, e1] = await run(Promise.all([listener.accept(), c1.connect({ host: "127.0.0.1", port: listener.port })]));
      const [a2, e2] = await run(Promise.all([listener.accept(), c2.connect({ host: "127.0.0.1", port: listener.port })]));
      for (let i = 0; i < 20; i++) {
        const [f2, f1] = await run(
          Promise.all([a2.recvMulti(5), a1.recvMulti(5), e2.sendMulti([pattern(3, i), pattern(70_000, i)], 5), e1.sendMulti([pattern(1, i)], 5)]),
        );
        assert.is(f1.length, 1);
        assert.is(f2.length, 2);
        assert.ok(samePattern(f1[0]!, i) && samePattern(f2[0]!, i) && samePattern(f2[1]!, i) && f2[1]!.length === 70_000);
      }
    } finally {
      await run(Promise.all([server.close(), c1.close(), c2.close()]));
    }
  });

  test("eight concurrent connects between the same two workers pair the right endpoints", async () => {
    const server = await Worker.create({ progressMode: mode });
    const client = await Worker.create({ progressMode: mode });
    const run = <T>(p: Promise<T>) => drive([server, client], p, 60_000);
    try {
      const accepted: Endpoint[] = [];
      const listener = await run(server.listen({ host: "127.0.0.1", port: 0, onConnection: (ep) => accepted.push(ep) }));
      const eps = await run(Promise.all(Array.from({ length: 8 }, (_, i) => client.connect({ host: i % 2 ? "localhost" : "127.0.0.1", port: listener.port }))));
      assert.is(accepted.length, 8);
      // The hello told each side its partner's scope; UCX joined endpoints by its own sequence
      // numbers. They agree only if both sides created them in the same order: check it with
      // active messages, which UCX routes by the endpoint it joined (not by tag), both ways.
      const partner = eps.map((e) => accepted.find((a) => a.peerScope === e.scope && a.scope === e.peerScope));
      assert.ok(partner.every((a) => a !== undefined), "every client endpoint has the accepted endpoint its hello named");
      const inbound = await run(Promise.all([...partner.map((a) => a!.amRecv()), ...eps.map((e, i) => e.amSend(new Uint8Array([i])))]));
      assert.equal(inbound.slice(0, 8).map((m) => (m as { data: Uint8Array }).data[0]), [0, 1, 2, 3, 4, 5, 6, 7]);
      const outbound = await run(Promise.all([...eps.map((e) => e.amRecv()), ...partner.map((a, i) => a!.amSend(new Uint8Array([10 + i])))]));
      assert.equal(outbound.slice(0, 8).map((m) => (m as { data: Uint8Array }).data[0]), [10, 11, 12, 13, 14, 15, 16, 17]);
      // And tags, by scope, both ways.
      const got = partner.map(() => new Float64Array(1));
      await run(Promise.all([...partner.map((a, i) => a!.recv(got[i]!, 1)), ...eps.map((e, i) => e.send(new Float64Array([i]), 1))]));
      assert.equal(got.map((g) => g[0]), [0, 1, 2, 3, 4, 5, 6, 7]);
      await run(listener.close());
    } finally {
      await run(Promise.all([server.close(), client.close()]));
    }
  });

  test("endpoints made by worker address that the other side never answered do not shift the hello's pairing (either side ahead, both error modes)", async () => {
    // UCX joins the n-th endpoint one worker creates to another with the n-th the other creates
    // back (hello/pairing.ts). One-sided connect(address) calls leave the counts unequal; without
    // the hello's fillers every later stream on a hello pair waited forever.
    const server = await Worker.create({ progressMode: mode });
    const client = await Worker.create({ progressMode: mode });
    const run = <T>(p: Promise<T>) => drive([server, client], p, 30_000);
    const streamsBothWays = async (a: Endpoint, b: Endpoint, seed: number) => {
      const there = new Uint8Array(4096);
      const back = new Uint8Array(100);
      await run(Promise.all([b.streamRecv(there), a.streamSend(pattern(4096, seed)), a.streamRecv(back), b.streamSend(pattern(100, seed + 1))]));
      assert.ok(samePattern(there, seed) && samePattern(back, seed + 1), `stream ${seed}`);
      // Active messages are routed by the endpoint UCX joined: they must come out of the partner.
      const [m] = await run(Promise.all([b.amRecv(), a.amSend(Uint8Array.of(seed))]));
      assert.is(m.data![0], seed);
    };
    try {
      const listener = await run(server.listen({ host: "127.0.0.1", port: 0 }));
      const serverAddress = await run(server.address());
      const clientAddress = await run(client.address());
      // The client ahead by two (modes none and peer).
      const oneSided = [await run(client.connect(serverAddress, { errorHandling: "none" })), await run(client.connect(serverAddress))];
      const [s1, c1] = await run(Promise.all([listener.accept(), client.connect({ host: "127.0.0.1", port: listener.port })]));
      await streamsBothWays(c1, s1, 1);
      // Then the listener's worker ahead by two (peer, none): the client fills this time.
      await run(server.connect(clientAddress));
      await run(server.connect(clientAddress, { errorHandling: "none" }));
      const [s2, c2] = await run(Promise.all([listener.accept(), client.connect({ host: "127.0.0.1", port: listener.port })]));
      await streamsBothWays(c2, s2, 3);
      await streamsBothWays(c1, s1, 5);
      // The one-sided endpoints still deliver (tags match at the worker).
      const into = new Uint8Array(2);
      await run(Promise.all([server.recv(into, 77), oneSided[0]!.send(Uint8Array.of(7, 8), 77)]));
      assert.equal([...into], [7, 8]);
      await run(listener.close());
    } finally {
      await run(Promise.all([server.close(), client.close()]));
    }
  });

  test("more than 64 unanswered endpoints by address: the side ahead refuses to fill them, with the reason, and no endpoint is made", async () => {
    const server = await Worker.create({ progressMode: mode });
    const client = await Worker.create({ progressMode: mode });
    const run = <T>(p: Promise<T>) => drive([server, client], p, 30_000);
    const errors: UcxError[] = [];
    try {
      const listener = await run(server.listen({ host: "127.0.0.1", port: 0, onError: (e) => errors.push(e) }));
      const serverAddress = await run(server.address());
      const clientAddress = await run(client.address());
      for (let i = 0; i < 65; i++) await run(client.connect(serverAddress, { errorHandling: "none" }));
      const ahead = await run(client.connect({ host: "127.0.0.1", port: listener.port }).then(() => null, (e: UcxError) => e));
      assert.is(ahead?.code, "UCX_TS_LIMIT_EXCEEDED");
      assert.match(ahead!.message, /65 endpoints made by worker address/);
      // The server answers 66 of them (one more than the client has): now the listener is ahead by one.
      for (let i = 0; i < 66; i++) await run(server.connect(clientAddress, { errorHandling: "none" }));
      const [s1, c1] = await run(Promise.all([listener.accept(), client.connect({ host: "127.0.0.1", port: listener.port })]));
      const into = new Uint8Array(3);
      await run(Promise.all([s1.streamRecv(into), c1.streamSend(Uint8Array.of(1, 2, 3))]));
      assert.equal([...into], [1, 2, 3]);
      // And ahead by 65 more: the listener refuses and says why.
      for (let i = 0; i < 65; i++) await run(server.connect(clientAddress, { errorHandling: "none" }));
      const behind = await run(client.connect({ host: "127.0.0.1", port: listener.port }).then(() => null, (e: UcxError) => e));
      assert.is(behind?.code, "UCS_ERR_REJECTED");
      assert.match(behind!.message, /65 endpoints made by worker address/);
      assert.ok(errors.some((e) => e.code === "UCX_TS_LIMIT_EXCEEDED"), errors.map((e) => e.code).join());
      await run(listener.close());
    } finally {
      await run(Promise.all([server.close(), client.close()]));
    }
  });

  test("ep.close() on one side: the other side's peer-mode endpoint reports its error and its pending receive rejects", async () => {
    const server = await Worker.create({ progressMode: mode });
    const client = await Worker.create({ progressMode: mode });
    const run = <T>(p: Promise<T>) => drive([server, client], p, 60_000);
    try {
      const listener = await run(server.listen({ host: "127.0.0.1", port: 0 }));
      const [accepted, ep] = await run(Promise.all([listener.accept(), client.connect({ host: "127.0.0.1", port: listener.port })]));
      await run(Promise.all([accepted.recv(new Uint8Array(1), 1), ep.send(new Uint8Array(1), 1)]));
      const failed = new Promise<UcxError>((resolve) => (accepted.onError = resolve));
      const pending = accepted.recv(new Uint8Array(8), 3).then(() => null, (e: unknown) => e);
      await run(ep.close());
      const error = await run(failed);
      assert.match(error.code, /^UCS_ERR_/);
      const r = await run(pending);
      assert.instance(r, UcxError);
      assert.is((r as UcxError).code, error.code);
    } finally {
      await run(Promise.all([server.close(), client.close()]));
    }
  });

  test.run();
}

const raw = suite("core/listener hello: raw endpoints");

raw("an endpoint made by worker address has no receive of its own: ep.recv and ep.recvMulti refuse and name worker.recv", async () => {
  const a = await Worker.create({ progressMode: "polling", errorHandling: "none" });
  const b = await Worker.create({ progressMode: "polling", errorHandling: "none" });
  const run = <T>(p: Promise<T>) => drive([a, b], p);
  try {
    const ab = await run(b.address().then((addr) => a.connect(addr)));
    assert.is(ab.scope, undefined);
    for (const call of [() => ab.recv(new Uint8Array(1), 1), () => ab.recvMulti(1)]) {
      assert.throws(call, (e: UcxError) => e instanceof UcxError && e.code === "UCX_TS_UNSUPPORTED" && /worker\.recv/.test(e.message));
    }
    // Its sends are UCX's plain 64-bit tags, taken by the worker-wide receive.
    const into = new Uint8Array(3);
    const [r] = await run(Promise.all([b.recv(into, 2n ** 63n + 5n), ab.send(pattern(3, 9), 2n ** 63n + 5n)]));
    assert.is(r.tag, 2n ** 63n + 5n);
    assert.ok(samePattern(into, 9));
  } finally {
    await run(Promise.all([a.close(), b.close()]));
  }
});

raw("listen() and connect() refuse an unknown protocol", async () => {
  const w = await Worker.create({ progressMode: "polling" });
  try {
    let listener: Listener | undefined;
    await drive([w], w.listen({ protocol: "tcp" as "ucx" }).then((l) => (listener = l), () => {}));
    assert.is(listener, undefined);
    const err = await drive([w], w.connect({ host: "127.0.0.1", port: 1, protocol: "tcp" as "ucx" }).then(() => null, (e: unknown) => e));
    assert.is((err as UcxError).code, "UCX_TS_INVALID_ARGUMENT");
  } finally {
    await drive([w], w.close());
  }
});

raw.run();
