/**
 * Thread mode's notifier spin (engine/spin-policy.ts): the default budget is used while spins
 * catch completions, dropped after misses, probed again now and then; a chosen budget always.
 */
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { SpinPolicy } from "../../src/core/engine/spin-policy.ts";

const test = suite("core/spin policy");

test("adaptive: spins while spins catch completions", () => {
  const p = new SpinPolicy(0.02, true);
  for (let i = 0; i < 100; i++) {
    assert.is(p.next(), 0.02);
    p.record(true);
  }
  assert.ok(p.spinning);
});

test("adaptive: misses stop the spin, every 32nd wait probes, catches bring it back", () => {
  const p = new SpinPolicy(0.02, true);
  // Start at 4: two misses (-2 each) reach 0.
  assert.is(p.next(), 0.02);
  p.record(false);
  assert.is(p.next(), 0.02);
  p.record(false);
  assert.not.ok(p.spinning);
  const budgets = Array.from({ length: 64 }, () => {
    const b = p.next();
    if (b > 0) p.record(false); // the probe misses too
    return b;
  });
  assert.equal(budgets.filter((b) => b > 0).length, 2, "one probe in 32 waits");
  assert.is(budgets[31], 0.02);
  assert.is(budgets[63], 0.02);
  // A probe that catches turns spinning back on.
  for (let i = 0; i < 31; i++) assert.is(p.next(), 0);
  assert.is(p.next(), 0.02);
  p.record(true);
  assert.ok(p.spinning);
  assert.is(p.next(), 0.02);
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

test.run();
