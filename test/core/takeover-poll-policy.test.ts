/**
 * Takeover's poll window (engine/takeover-poll-policy.ts): how long the application thread keeps
 * driving UCX after its last completion. Pure logic, no UCX.
 */
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { TakeoverPollPolicy } from "../../src/core/engine/takeover-poll-policy.ts";

const test = suite("core/takeover-poll-policy");

test("starts at the base window; short gaps leave it there", () => {
  const p = new TakeoverPollPolicy(1, 10);
  assert.is(p.windowMs, 1);
  for (const gap of [0.01, 0.2, 0.5]) p.completionAfter(gap);
  assert.is(p.windowMs, 1);
});

test("a late completion within the bound widens the window to cover it with a margin, up to the bound", () => {
  const p = new TakeoverPollPolicy(1, 10);
  p.completionAfter(3);
  assert.is(p.windowMs, 4.5);
  p.completionAfter(0.01); // a send completing right after the reply: no shrink
  assert.is(p.windowMs, 4.5);
  p.completionAfter(8);
  assert.is(p.windowMs, 10);
});

test("a gap beyond the bound is idleness: back to the base window", () => {
  const p = new TakeoverPollPolicy(1, 10);
  p.completionAfter(5);
  assert.is(p.windowMs, 7.5);
  p.completionAfter(11);
  assert.is(p.windowMs, 1);
  p.completionAfter(Infinity); // the first completion ever
  assert.is(p.windowMs, 1);
});

test("a bound at the base learns nothing", () => {
  const p = new TakeoverPollPolicy(1, 1);
  p.completionAfter(0.9);
  assert.is(p.windowMs, 1);
});

test.run();
