/**
 * Full collections of an engine thread's own JavaScript heap. An engine thread (engine-thread.ts)
 * is an isolate of its own, and an isolate that allocates a little per operation collects its
 * old generation seldom: garbage piles up there for many minutes (the full-mix soak, 2026-11-26:
 * the progress thread's heap rose to 11 MB over 7 minutes before V8 compacted it, and RSS read
 * +42.9 MiB per 100k operations without a collection against -1.2 with one every minute). The
 * thread collects after each job (engine-thread.ts) and, while a worker lives, at rest
 * (`AtRestCollector`): when it is about to sleep, at most once per interval, and only if it
 * worked since the last one.
 */
import v8 from "node:v8";
import vm from "node:vm";

/**
 * A full collection of this thread's heap: the runtime's `gc` where the process exposes it
 * (--expose-gc), Bun's `Bun.gc`, or V8's, reached through a context made while the flag is on
 * for that moment only (Node, Deno); nothing where none of these works.
 */
export function heapCollector(): () => void {
  const g = globalThis as { gc?: () => void; Bun?: { gc(full: boolean): void } };
  if (g.gc) return g.gc;
  const bun = g.Bun;
  if (bun) return () => bun.gc(true);
  try {
    v8.setFlagsFromString("--expose-gc");
    const gc = vm.runInNewContext("gc") as () => void;
    return typeof gc === "function" ? gc : () => {};
  } catch {
    return () => {};
  } finally {
    try {
      v8.setFlagsFromString("--no-expose-gc");
    } catch {
      // the flag stays as it was where it could not be set either
    }
  }
}

/**
 * How often, at most, a busy-then-idle progress thread collects. A collection takes 4-26 ms of
 * the thread (measured after jobs: Bun, Node, Deno); it runs only as the thread goes to sleep,
 * so an operation waits for it only if it arrives in that moment: at most one such delay per
 * interval. 30 s keeps the thread's heap within a few MB of live data under any traffic.
 */
export const AT_REST_INTERVAL_MS = 30_000;

/** Decides when a progress thread about to sleep collects its heap (see the module comment). */
export class AtRestCollector {
  private last: number;
  private worked = false;

  constructor(
    private readonly collect: () => void,
    now: number,
    private readonly intervalMs = AT_REST_INTERVAL_MS,
  ) {
    this.last = now;
  }

  /** The thread did work (allocated) since it last slept. */
  work(): void {
    this.worked = true;
  }

  /** The thread is about to sleep: collect if it is time. True when it collected. */
  rest(now: number): boolean {
    if (!this.worked || now - this.last < this.intervalMs) return false;
    this.collect();
    this.worked = false;
    this.last = now;
    return true;
  }
}
