/**
 * How often the driver loops that spin on microtasks while they wait for UCX (hybrid mode's
 * driver, thread mode's takeover) give the event loop a turn (engine/event-loop.ts): each turn
 * costs a spinning loop microseconds, so while something is awaited and no other loop of the
 * thread is parked on a turn, they come at most every ALONE_TURN_MS. Counted, not timed: the
 * turns a run took against the number its wall time allows (a slow run only allows more).
 */
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { Worker, type ProgressMode } from "../../src/index.ts";
import { ALONE_TURN_MS, eventLoopTurns, othersParked, parkedOn, SHARED_TURN_MS, turnIntervalMs } from "../../src/core/engine/event-loop.ts";

const test = suite("core/event-loop-turns");

test.before(async () => {
  // Workers of earlier suites are closed: none of their loops may still be parked (a parked loop
  // makes every other loop of the thread turn often). A park ends within its own timeout (1 s at
  // most); a closed thread-mode worker's notifier is woken at once (it lingered that second).
  const until = performance.now() + 1500;
  while (othersParked() && performance.now() < until) await new Promise((r) => setTimeout(r, 10));
  assert.not.ok(othersParked(), "a loop of a closed worker is still parked 1.5 s later");
});

test("a closed thread-mode worker leaves no loop parked", async () => {
  const a = await Worker.create({ progressMode: "thread", errorHandling: "none" });
  const ab = await a.connect(await a.address());
  for (let i = 0; i < 50; i++) {
    const r = a.recv(new Uint8Array(8), 1);
    await ab.send(new Uint8Array(8), 1);
    await r;
  }
  await new Promise((r) => setTimeout(r, 50)); // the notifier parks (Bun: always; else after its spin)
  await a.close();
  await new Promise((r) => setTimeout(r, 20));
  assert.not.ok(othersParked(), "the closed worker's notifier is still parked");
});

test("the turn interval: rare while awaited and alone, often while another loop is parked or nothing is awaited", async () => {
  assert.is(turnIntervalMs(true), ALONE_TURN_MS);
  assert.is(turnIntervalMs(false), SHARED_TURN_MS);
  let release!: () => void;
  const parked = parkedOn(new Promise<void>((r) => (release = r)));
  assert.is(turnIntervalMs(true), SHARED_TURN_MS, "another loop waits for a turn");
  release();
  await parked;
  assert.is(turnIntervalMs(true), ALONE_TURN_MS);
  assert.ok(SHARED_TURN_MS < ALONE_TURN_MS);
});

/**
 * `rounds` 8 B round trips (a ping, its echo), each step awaited, between two workers of this
 * thread (`two`) or of one worker to itself; the event-loop turns they took and their wall time.
 * Hybrid mode needs two: one worker to itself always has a message for its next progress call,
 * so its driver has no empty rounds (it yields only on those). Thread mode needs one: two
 * workers' notifiers take turns parking on Atomics.waitAsync while the other drives, and a parked
 * loop rightly brings the turns back to every SHARED_TURN_MS.
 */
async function roundTrips(mode: ProgressMode, two: boolean, rounds: number): Promise<{ turns: number; startingTurns: number; ms: number; workers: Worker[] }> {
  const a = await Worker.create({ progressMode: mode, errorHandling: "none" });
  const b = two ? await Worker.create({ progressMode: mode, errorHandling: "none" }) : a;
  const ab = await a.connect(await b.address());
  const ba = two ? await b.connect(await a.address()) : ab;
  const ping = new Uint8Array(8);
  const atB = new Uint8Array(8);
  const back = new Uint8Array(8);
  const once = async (i: number) => {
    ping[0] = i & 0xff;
    const rb = b.recv(atB, 1);
    const ra = a.recv(back, 2);
    await ab.send(ping, 1);
    await rb;
    await ba.send(atB, 2);
    await ra;
    assert.is(back[0], i & 0xff);
  };
  for (let i = 0; i < 500; i++) await once(i); // wire-up and compiled code
  const workers = two ? [a, b] : [a];
  const startingPolls = () => workers.reduce((n, w) => n + (w.hybridStats?.startingPolls ?? 0), 0);
  const turns0 = eventLoopTurns();
  const starting0 = startingPolls();
  const t0 = performance.now();
  for (let i = 0; i < rounds; i++) await once(i);
  const ms = performance.now() - t0;
  // Hybrid: while a new worker's fd watcher thread is still starting, its driver polls through
  // event-loop turns by design (hybrid-engine.ts, `startingPolls`); on a loaded machine that
  // window can outlast the warm-up (Bun, a full core/ run, 2026-12-07). Those turns are not the
  // spin's: they are counted apart.
  return { turns: eventLoopTurns() - turns0, startingTurns: startingPolls() - starting0, ms, workers };
}

for (const mode of ["hybrid", "thread"] as const)
  test(`${mode} mode: awaited round trips take an event-loop turn at most every ${ALONE_TURN_MS} ms`, async () => {
    const { turns, startingTurns, ms, workers } = await roundTrips(mode, mode === "hybrid", 4000);
    try {
      // Thread mode without takeover (Bun) parks instead of spinning: no turns of its own.
      if (mode === "thread" && workers[0]!.takeoverStats === null) return;
      // A turn every SHARED_TURN_MS would be up to ms / 0.05 (20x the bound: 700-1,100 turns
      // counted here with it); one more for a turn under way when the count started, one for
      // the end.
      assert.ok(turns - startingTurns <= ms / ALONE_TURN_MS + 2, `${turns} turns (${startingTurns} while a watcher started) in ${ms.toFixed(1)} ms`);
    } finally {
      for (const w of workers) await w.close();
    }
  });

test.run();
