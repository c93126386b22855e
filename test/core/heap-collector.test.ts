/**
 * The engine threads' heap collections (engine/heap-collector.ts): the collector really frees an
 * unreachable object on this runtime (a WeakRef's target is gone after it), and a progress
 * thread about to sleep collects at most once per interval, and only after work.
 */
import { setTimeout as sleep } from "node:timers/promises";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { AtRestCollector, heapCollector } from "../../src/core/engine/heap-collector.ts";

const test = suite("core/heap collector");

test("heapCollector() frees an unreachable object on this runtime", async () => {
  const collect = heapCollector();
  // Made in another function so no stack slot of this one keeps it; a WeakRef's target is kept
  // until the current job ends, hence the turn of the event loop before collecting.
  const ref = ((): WeakRef<object> => new WeakRef({ payload: new Array(1000).fill(7) }))();
  let freed = false;
  for (let i = 0; i < 5 && !freed; i++) {
    await sleep(1);
    collect();
    freed = ref.deref() === undefined;
  }
  assert.ok(freed, "the object outlived five full collections");
});

test("at rest: collects once per interval, only after work, never before the interval", () => {
  let collections = 0;
  const c = new AtRestCollector(() => collections++, 0, 1000);
  assert.not.ok(c.rest(5000), "no work yet: nothing to collect");
  c.work();
  assert.not.ok(c.rest(500), "within the interval of the start");
  assert.ok(c.rest(1000));
  assert.is(collections, 1);
  c.work();
  assert.not.ok(c.rest(1999), "within the interval of the last collection");
  assert.ok(c.rest(2000));
  assert.not.ok(c.rest(9000), "no work since the last collection");
  assert.is(collections, 2);
});

test.run();
