/**
 * Thread mode's notifier spin (engine/spin-policy.ts): the default budget is used while spins
 * catch completions, dropped after misses, probed again now and then; a chosen budget always.
 */
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { SpinPolicy } from "../../src/core/engine/spin-policy.ts";
import { HybridSpinPolicy } from "../../src/core/engine/hybrid-spin-policy.ts";

const test = suite("core/spin policy");

test("adaptive: spins while at least half the spins catch completions", () => {
  const p = new SpinPolicy(0.02, true);
  for (let i = 0; i < 100; i++) {
    assert.is(p.next(), 0.02);
    p.record(i % 2 === 0); // every other spin misses
  }
  assert.ok(p.spinning);
});

test("adaptive: misses stop the spin; every 32nd wait starts a trial of 3 spins; catches keep it on", () => {
  const p = new SpinPolicy(0.02, true);
  // Start at 4: four misses (-1 each) reach 0.
  for (let i = 0; i < 4; i++) {
    assert.ok(p.spinning, `miss ${i}`);
    assert.is(p.next(), 0.02);
    p.record(false);
  }
  assert.not.ok(p.spinning);
  // Off: 31 waits without a spin, then a trial of 3 spins (all missing here), then off again.
  const budgets: number[] = [];
  for (let i = 0; i < 31 + 3 + 31; i++) {
    const b = p.next();
    if (b > 0) p.record(false);
    budgets.push(b);
  }
  assert.equal(budgets.slice(0, 31), Array(31).fill(0));
  assert.equal(budgets.slice(31, 34), [0.02, 0.02, 0.02], "the trial");
  assert.equal(budgets.slice(34), Array(31).fill(0), "off again until the next trial");
  // A trial whose spins catch turns spinning back on for good.
  assert.is(p.next(), 0.02);
  p.record(true);
  for (let i = 0; i < 10; i++) {
    assert.is(p.next(), 0.02);
    p.record(true);
  }
  assert.ok(p.spinning);
});

test("a chosen budget is always used, whatever the outcomes; 0 never spins", () => {
  const chosen = new SpinPolicy(0.05, false);
  for (let i = 0; i < 50; i++) {
    assert.is(chosen.next(), 0.05);
    chosen.record(false);
  }
  const none = new SpinPolicy(0, true);
  assert.is(none.next(), 0);
  assert.not.ok(none.spinning);
});

test("hybrid: the spin grows to cover short gaps between events (with a margin, up to the bound), and falls back after a long one", () => {
  const p = new HybridSpinPolicy(0.1, 1);
  assert.is(p.spinMs, 0.1);
  p.eventAfter(0.05); // within the base budget: stays
  assert.is(p.spinMs, 0.1);
  p.eventAfter(0.3); // a reply 300 us after the request: the next spins cover it
  assert.is(p.spinMs, 0.3 * 1.5);
  p.eventAfter(0.9);
  assert.is(p.spinMs, 1);
  p.eventAfter(5); // idleness: back to the base
  assert.is(p.spinMs, 0.1);
  // On an oversubscribed host the bound is the busy one: a gap past it is idleness.
  let busy = false;
  const loadAware = new HybridSpinPolicy(0.1, 10, 1, () => busy);
  loadAware.eventAfter(3); // quiet host: a 3 ms gap (two wake-ups) is learnt
  assert.is(loadAware.spinMs, 3 * 1.5);
  busy = true;
  loadAware.eventAfter(0.9);
  assert.is(loadAware.spinMs, 1);
  loadAware.eventAfter(3); // busy host: the same gap resets to the base
  assert.is(loadAware.spinMs, 0.1);
  const fixed = new HybridSpinPolicy(0.1, 0.1); // a budget the user chose: never learnt
  fixed.eventAfter(0.3);
  assert.is(fixed.spinMs, 0.1);
});

test.run();
