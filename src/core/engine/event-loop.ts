/**
 * One turn of the event loop, for code that progresses UCX in a loop on the application thread
 * (the polling driver, hybrid mode): setImmediate where the runtime has it (all three do today;
 * setTimeout(0) costs a millisecond), so timers, I/O and Atomics.waitAsync wake-ups get a turn.
 */
export function yieldToEventLoop(): Promise<void> {
  const g = globalThis as { setImmediate?: (f: () => void) => unknown };
  return new Promise((resolve) => (g.setImmediate ? g.setImmediate(resolve) : setTimeout(resolve, 0)));
}
