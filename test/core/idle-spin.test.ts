/**
 * The idle spin of the loops that progress UCX on the application thread (engine/idle-spin.ts):
 * while a loop waits for its peer it calls UCX in place, IDLE_SPIN_MS at a time, instead of
 * awaiting (and allocating) after every empty round. Counted, not timed.
 */
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { Worker } from "../../src/index.ts";
import { IDLE_SPIN_MS, spinIdle, startSpinning, stopSpinning } from "../../src/core/engine/idle-spin.ts";
import { pattern, samePattern } from "../helpers/workers.ts";

const test = suite("core/idle-spin");

test("a spin progresses every registered loop, ends at the first that does something, and ends when its time is up", () => {
  let aCalls = 0;
  let bCalls = 0;
  let bWorkAt = -1;
  const a = () => (aCalls++, 0);
  const b = () => (++bCalls === bWorkAt ? 1 : 0);
  startSpinning(a);
  startSpinning(b);
  try {
    bWorkAt = 1000;
    assert.ok(spinIdle(1000), "b's work ends the spin");
    assert.is(bCalls, 1000);
    assert.ok(aCalls >= 999 && aCalls <= 1000, `a was progressed alongside b (${aCalls} calls)`);
    bWorkAt = -1;
    const t0 = performance.now();
    assert.not.ok(spinIdle(2), "nothing happened");
    const ms = performance.now() - t0;
    assert.ok(ms >= 2, `ended after ${ms.toFixed(3)} ms, not before its time`);
    stopSpinning(b);
    stopSpinning(b); // a second stop does nothing
    const before = bCalls;
    spinIdle(0.2);
    assert.is(bCalls, before, "a stopped loop is not progressed");
  } finally {
    stopSpinning(a);
    stopSpinning(b);
  }
});

test("a hybrid worker waiting for a message yields once per idle spin, not once per empty round", async () => {
  // A spin budget the worker uses as it is (not learnt): it spins for all of it, then parks.
  const SPIN_MS = 20;
  const WAIT_MS = 30;
  const a = await Worker.create({ progressMode: "hybrid", errorHandling: "none", spinMicroseconds: SPIN_MS * 1000 });
  try {
    const self = await a.connect(await a.address());
    const into = new Uint8Array(256);
    for (let i = 0; i < 20; i++) {
      const r = a.recv(into, 1);
      await self.send(pattern(256, i), 1);
      await r;
    }
    const yields = () => a.hybridStats!.yields; // a copy each time
    const received = a.recv(into, 1);
    const yields0 = yields();
    // The message is sent WAIT_MS from now: meanwhile the driver spins its whole budget.
    await new Promise<void>((resolve) => setTimeout(resolve, WAIT_MS));
    const waited = yields() - yields0;
    await self.send(pattern(256, 99), 1);
    await received;
    assert.ok(samePattern(into, 99));
    // One yield per IDLE_SPIN_MS of spin at most (a slow machine spins fewer), plus the settling
    // turns of the last message and the empty rounds before the spin. Awaiting after every empty
    // round (the driver before 2026-12-07) counted one per ~0.3-1 us: tens of thousands here.
    const bound = SPIN_MS / IDLE_SPIN_MS + 100;
    assert.ok(waited <= bound, `${waited} yields while waiting ${WAIT_MS} ms (at most ${bound})`);
  } finally {
    await a.close();
  }
});

test.run();
