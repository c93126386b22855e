/**
 * Skipping with a reason. uvu's own `test.skip` only counts; a skipped test here always says
 * why (a runtime that cannot do something, a missing tool), so the reason shows in the log.
 */
import type { Test } from "uvu";

export function skipWithReason(suite: Test, name: string, reason: string): void {
  console.log(`  - skipped: ${name}: ${reason}`);
  suite.skip(name, () => {});
}
