/**
 * A closed hello endpoint's late messages (src/core/hello/scope-drain.ts): what its peer sent that
 * nobody received, before and just after the close, is taken out of UCX's unexpected queue;
 * before, each stayed there until the worker closed (a 64 KiB tcp segment apiece over tcp).
 */
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { Worker, type Endpoint } from "../../src/index.ts";
import { DRAIN_AGAIN_MS } from "../../src/core/hello/scope-drain.ts";
import { drive, helloEndpoints } from "../helpers/workers.ts";

const test = suite("core/scope-drain");

test("messages a peer sent to a closed endpoint's scope are dropped, before and after the close; the worker's other endpoints keep theirs", async () => {
  const a = await Worker.create({ progressMode: "polling", errorHandling: "peer" });
  const b = await Worker.create({ progressMode: "polling", errorHandling: "peer" });
  const run = <T>(p: Promise<T>, ms = 20_000) => drive([a, b], p, ms);
  try {
    const { ab, ba } = await helloEndpoints(a, b, run);
    const other = await helloEndpoints(a, b, run);
    const scope = (ba as Endpoint & { scope: number }).scope;
    const queued = () => run(b.probe(BigInt(scope) << 48n, 0xffffn << 48n));
    for (let i = 0; i < 3; i++) await run(ab.send(new Uint8Array(1000).fill(i), 9));
    await run(other.ab.send(Uint8Array.of(42), 9)); // for the endpoint that stays
    for (let tries = 0; !(await queued()) && tries < 1000; tries++) await run(new Promise((r) => setTimeout(r, 1)));
    assert.ok(await queued(), "the unreceived messages are in UCX's queue before the close");
    await run(ba.close());
    // Sent right after the close (before a learns of it through the hello's link).
    await run(ab.send(new Uint8Array(70_000), 9)).catch(() => {});
    await run(new Promise((r) => setTimeout(r, DRAIN_AGAIN_MS + 500)));
    assert.is(await queued(), null, "nothing of the closed endpoint's scope is left in UCX's queue");
    const into = new Uint8Array(1);
    await run(other.ba.recv(into, 9));
    assert.is(into[0], 42, "the other endpoint's message was left for it");
  } finally {
    await run(Promise.all([a.close(), b.close()]));
  }
});

test.run();
