/**
 * Thread mode's progress-thread spin (engine/thread-spin-policy.ts): learnt from the gaps that
 * sleeps measured, only while the application awaits something, at most cores - 1 threads of a
 * process past their minimum, reset by a preemption; a chosen budget always as is.
 * Times are milliseconds on a made-up clock.
 */
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { COOLDOWN_SLEEPS, SpinSlots, ThreadSpinPolicy } from "../../src/core/engine/thread-spin-policy.ts";

const test = suite("core/thread spin policy");

/** Spin rounds 0.001 ms apart from `from` until the policy says sleep; returns when it did. */
function spinUntilSleep(p: ThreadSpinPolicy, from: number, active: boolean, limit = 1000): number {
  for (let t = from; t < from + limit; t += 0.001) if (!p.idle(t, active)) return t;
  throw new Error("never slept");
}

test("a sleep's gap within the maximum becomes the budget (with headroom); a longer one resets it", () => {
  const p = new ThreadSpinPolicy(0.005, 10, true, SpinSlots.create(1), 0);
  p.worked(0, true);
  assert.ok(spinUntilSleep(p, 0.001, true) < 0.0065, "the minimum before anything is learnt");
  p.woke(0.3);
  p.worked(0.3, true); // work 0.3 ms after the last: a 0.3 ms spin would have caught it
  assert.ok(Math.abs(p.budgetMs - 0.375) < 1e-9, `budget ${p.budgetMs}`);
  const slept = spinUntilSleep(p, 0.301, true);
  assert.ok(slept > 0.67 && slept < 0.68, `spun until ${slept}`);
  // Caught within the budget: no sleep, budget kept.
  p.worked(0.5, true);
  assert.ok(p.idle(0.6, true) && p.idle(0.601, true));
  p.worked(0.65, true);
  // A gap over the maximum (sparse traffic): back to the minimum.
  spinUntilSleep(p, 0.651, true);
  p.woke(50);
  p.worked(50, true);
  assert.is(p.budgetMs, 0.005);
  // Capped at the maximum.
  spinUntilSleep(p, 50.001, true);
  p.woke(59);
  p.worked(59, true);
  assert.is(p.budgetMs, 10);
});

test("the learnt budget applies only while the application awaits something, or did at the last work", () => {
  const p = new ThreadSpinPolicy(0.005, 10, true, SpinSlots.create(1), 0);
  p.worked(0, true);
  spinUntilSleep(p, 0.001, true);
  p.woke(1);
  p.worked(1, true); // budget 1.25
  assert.ok(p.idle(1.5, false), "active at the last work: the spin carries over a moment of nothing awaited");
  p.worked(2, false);
  assert.not.ok(p.idle(2.01, false), "nothing awaited at the last work nor now: the minimum");
  p.worked(3, false);
  assert.ok(p.idle(3.5, true), "awaited now");
});

test("spinning past the minimum takes one of the process's slots; without one the thread sleeps", () => {
  const slots = SpinSlots.create(1);
  const a = new ThreadSpinPolicy(0.005, 10, true, slots, 0);
  const b = new ThreadSpinPolicy(0.005, 10, true, slots, 0);
  for (const p of [a, b]) {
    p.worked(0, true);
    spinUntilSleep(p, 0.001, true);
    p.woke(1);
    p.worked(1, true); // both learn 1.25 ms
  }
  assert.ok(a.idle(1.1, true), "a takes the slot");
  assert.is(slots.inUse, 1);
  assert.not.ok(b.idle(1.1, true), "b finds none and sleeps");
  a.worked(1.2, true); // work: a gives its slot back
  assert.is(slots.inUse, 0);
  assert.ok(b.idle(1.3, true), "now b may");
  assert.is(slots.inUse, 1);
  b.releaseSlot();
  assert.is(slots.inUse, 0);
  assert.not.ok(slots.tryAcquire() && slots.tryAcquire(), "never more than the maximum");
});

test("a preempted spin round resets the budget and stops learning for a while", () => {
  const p = new ThreadSpinPolicy(0.005, 10, true, SpinSlots.create(1), 0);
  p.worked(0, true);
  spinUntilSleep(p, 0.001, true);
  p.woke(1);
  p.worked(1, true);
  assert.ok(p.idle(1.001, true));
  assert.not.ok(p.idle(2.5, true), "a 1.5 ms round: the thread lost its core; sleep");
  assert.is(p.budgetMs, 0.005);
  for (let i = 0; i < COOLDOWN_SLEEPS; i++) {
    p.woke(10 + i);
    p.worked(10 + i + 0.5, true);
    assert.is(p.budgetMs, 0.005, `cooldown sleep ${i}`);
    spinUntilSleep(p, 10 + i + 0.501, true);
  }
  const last = 10 + COOLDOWN_SLEEPS - 1 + 0.5; // the last work of the cooldown
  p.woke(last + 0.4);
  p.worked(last + 0.5, true);
  assert.ok(Math.abs(p.budgetMs - 0.625) < 1e-9, "learning again");
});

test("after a sleep the thread spins the minimum again before sleeping, even long after its last work", () => {
  const p = new ThreadSpinPolicy(0.005, 10, true, SpinSlots.create(1), 0);
  p.worked(0, false);
  spinUntilSleep(p, 0.001, false);
  p.woke(50); // woken by an event that has not turned into work yet
  assert.ok(p.idle(50.001, false) && p.idle(50.004, false), "the event gets a few rounds");
  assert.not.ok(p.idle(50.006, false));
});

test("a chosen budget is used as is: nothing learnt, no slot taken", () => {
  const slots = SpinSlots.create(1);
  const p = new ThreadSpinPolicy(0.05, 10, false, slots, 0);
  p.worked(0, true);
  const slept = spinUntilSleep(p, 0.001, true);
  assert.ok(slept >= 0.05 && slept < 0.052);
  p.woke(1);
  p.worked(1, true);
  assert.is(p.budgetMs, 0.05);
  assert.not.ok(p.idle(1.06, true));
  assert.is(slots.inUse, 0);
});

test.run();
