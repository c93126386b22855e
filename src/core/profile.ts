/**
 * The per-operation cost profile (issue 21: "find where each microsecond goes"), on only when the
 * process starts with UCX_TS_PROFILE=1. Off, every probe in the data path is one test of the
 * module constant `PROFILING` (no timestamps, no calls), and the FFI functions are not wrapped.
 *
 * On, the application thread's time is split into exclusive phases: a probe `enter(phase)` charges
 * the time since the last probe to the phase that was running and makes `phase` current; `leave()`
 * returns to the one before. Each FFI call is a phase of its own ("ffi"), counted per C function,
 * so the time of a phase never includes the C calls made inside it. `bench/profile.ts` reads the
 * totals; `npm run bench -- --profile` prints them per runtime and progress mode.
 *
 * Only the thread that runs the probes is seen: in thread mode without takeover the executor's
 * phases happen on the progress thread and show here as the time spent waiting for it.
 */
import { getEnv } from "../ffi/index.ts";

export const PROFILING = getEnv("UCX_TS_PROFILE") === "1";

/** The phases of one operation on the application thread, in the order it meets them. */
export const Phase = {
  /** Whatever no probe claims: the caller's loop, the await machinery, the progress driver. */
  Other: 0,
  /** The API call (ep.send, worker.recv): checks, protocol choice, request table, Promise made. */
  Api: 1,
  /** Writing the submission record into the ring. */
  Record: 2,
  /** The executor turning a record into its UCX call (JavaScript around the FFI call). */
  Execute: 3,
  /** One round of the executor's progress (JavaScript around ucp_worker_progress and checks). */
  Progress: 4,
  /** Writing completion records (executor side). */
  CompletionRecord: 5,
  /** Reading completion records and routing them (application side). */
  Deliver: 6,
  /** Settling the request's Promise (its settle function, resolve/reject). */
  Settle: 7,
  /** Waiting: the notifier parked or spinning for another thread, hybrid mode parked. */
  Wait: 8,
  /** Inside an FFI call: the runtime's call overhead and UCX itself. */
  Ffi: 9,
  /** JavaScript that UCX calls back from inside an FFI call (the AM handler, completion callbacks). */
  Callback: 10,
} as const;
export type Phase = (typeof Phase)[keyof typeof Phase];

export const PHASE_NAMES = ["other", "api", "record", "execute", "progress", "completionRecord", "deliver", "settle", "wait", "ffi", "callback"] as const;

const totals = new Float64Array(PHASE_NAMES.length);
const stack: Phase[] = [];
let current: Phase = Phase.Other;
let since = 0;

/** Calls and time (ms) per C function, while profiling. */
const calls = new Map<string, { count: number; ms: number }>();

/** Charge the time since the last probe to the current phase and make `phase` current. */
export function enter(phase: Phase): void {
  const now = performance.now();
  totals[current]! += now - since;
  since = now;
  stack.push(current);
  current = phase;
}

/** Charge the time since the last probe to the current phase and return to the one before. */
export function leave(): void {
  const now = performance.now();
  totals[current]! += now - since;
  since = now;
  current = stack.pop() ?? Phase.Other;
}

/** Start counting from now (after a warm-up). */
export function resetProfile(): void {
  totals.fill(0);
  for (const account of calls.values()) {
    account.count = 0;
    account.ms = 0;
  }
  stack.length = 0;
  current = Phase.Other;
  since = performance.now();
}

/**
 * Copy the running totals (ms per phase, in PHASE_NAMES order, then ms in each C function in
 * `functionNames()` order) into `into` at `offset`: cheap enough to take after every operation,
 * so that a tool can take medians per phase rather than means that one GC pause dominates.
 */
export function copyTotals(into: Float64Array, offset: number): void {
  const now = performance.now();
  totals[current]! += now - since;
  since = now;
  into.set(totals, offset);
  let i = offset + totals.length;
  for (const account of calls.values()) into[i++] = account.ms;
}

/** The C functions copyTotals() reports, in its order. */
export function functionNames(): string[] {
  return [...calls.keys()];
}

export interface ProfileSnapshot {
  /** Milliseconds per phase since resetProfile(). */
  readonly phases: Record<(typeof PHASE_NAMES)[number], number>;
  /** Calls and milliseconds per C function. */
  readonly calls: Record<string, { count: number; ms: number }>;
}

export function profileSnapshot(): ProfileSnapshot {
  // Close the running phase's account up to now without leaving it.
  const now = performance.now();
  totals[current]! += now - since;
  since = now;
  const phases = Object.fromEntries(PHASE_NAMES.map((n, i) => [n, totals[i]!])) as ProfileSnapshot["phases"];
  return { phases, calls: Object.fromEntries([...calls].map(([k, v]) => [k, { ...v }])) };
}

/**
 * Wrap every function of `functions` (a bound UCX table) so that each call is an Ffi phase counted
 * under its name. Called once, when the table is bound, only while profiling.
 */
export function profileFunctions<T extends object>(functions: T, names: readonly string[]): T {
  const wrapped: Record<string, unknown> = { ...(functions as Record<string, unknown>) };
  // Callbacks made here run as a Callback phase: the JavaScript UCX calls from inside a C call.
  const makeCallback = (functions as Record<string, unknown>).callback;
  if (typeof makeCallback === "function")
    wrapped.callback = (signature: unknown, fn: (...a: unknown[]) => unknown) =>
      makeCallback.call(functions, signature, (...args: unknown[]) => {
        enter(Phase.Callback);
        try {
          return fn(...args);
        } finally {
          leave();
        }
      });
  for (const name of names) {
    const fn = (functions as Record<string, unknown>)[name];
    if (typeof fn !== "function") continue;
    const account = { count: 0, ms: 0 };
    calls.set(name, account);
    wrapped[name] = (...args: unknown[]) => {
      // An Ffi phase like any other, so that a callback run inside the call (enter(Callback))
      // takes its time out of the call's, not twice.
      const t0 = performance.now();
      totals[current]! += t0 - since;
      since = t0;
      stack.push(current);
      current = Phase.Ffi;
      try {
        return (fn as (...a: unknown[]) => unknown)(...args);
      } finally {
        const t1 = performance.now();
        totals[current]! += t1 - since;
        since = t1;
        current = stack.pop() ?? Phase.Other;
        account.count++;
        account.ms += t1 - t0;
      }
    };
  }
  return wrapped as T;
}
