/**
 * The engine's pooled threads (engine/thread-pool.ts): thread and hybrid workers created and
 * closed one after another reuse one thread instead of starting (and ending) one each. Each ended
 * thread leaked koffi's per-isolate state under Node, ~3 mappings and ~23 KiB of malloc a thread
 * (scripts/soak/koffi-thread-leak.mjs), which is what the mappings check below catches (issue 26).
 */
import { readdirSync, readFileSync } from "node:fs";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { Worker, type ProgressMode } from "../../src/index.ts";
import { runtime } from "../../src/ffi/index.ts";
import { idleThreads, threadsStarted } from "../../src/core/engine/thread-pool.ts";

const test = suite("core/thread-pool");

const mapCount = () => readFileSync("/proc/self/maps", "utf8").trim().split("\n").length;
const osThreads = () => readdirSync("/proc/self/task").length;

async function cycle(mode: ProgressMode): Promise<void> {
  const w = await Worker.create({ progressMode: mode });
  await w.address();
  await w.close();
}

test("thread and hybrid workers cycled one at a time start no thread after the first, and mappings stay flat", async () => {
  await cycle("thread");
  await cycle("hybrid");
  const started = threadsStarted();
  const maps = mapCount();
  const tasks = osThreads();
  const n = 8;
  for (let i = 0; i < n; i++) await cycle(i % 2 === 0 ? "thread" : "hybrid");
  assert.is(threadsStarted(), started, "a cycle started a thread of its own");
  assert.ok(idleThreads() >= 1);
  // The runtimes start and end threads of their own (Deno's blocking pool): a margin, not 0.
  assert.ok(osThreads() <= tasks + 2, `OS threads ${tasks} -> ${osThreads()} over ${n} cycles`);
  // A thread per worker: Node +31 mappings over these 8 cycles (koffi's stack, guard and heap per
  // ended thread), Deno +13, Bun +2; pooled: Node +5 to +7, Deno +2 to +9, Bun 0 (the runtime's
  // own heaps growing). The thread count above is what catches it on Deno and Bun.
  assert.ok(mapCount() - maps <= 2 * n, `${runtime}: mappings ${maps} -> ${mapCount()} over ${n} cycles`);
});

test("workers open at once get a thread each; closed, their threads serve the next ones", async () => {
  const a = await Worker.create({ progressMode: "thread" });
  const b = await Worker.create({ progressMode: "hybrid" });
  const started = threadsStarted();
  await Promise.all([a.close(), b.close()]);
  assert.ok(idleThreads() >= 2);
  const c = await Worker.create({ progressMode: "hybrid" });
  const d = await Worker.create({ progressMode: "thread" });
  try {
    assert.is(threadsStarted(), started, "reused, none started");
    // Each works on its own thread: a round trip through each.
    for (const w of [c, d]) {
      const ep = await w.connect(await w.address());
      const into = new Uint8Array(4);
      const r = w.recv(into, 5);
      await ep.send(new Uint8Array([1, 2, 3, 4]), 5);
      await r;
      assert.equal([...into], [1, 2, 3, 4]);
      await ep.close();
    }
  } finally {
    await Promise.all([c.close(), d.close()]);
  }
});

test.run();
