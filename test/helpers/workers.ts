/**
 * Pairs of workers in one process, for the in-process suites, and `drive`: awaiting a Promise
 * while progressing every worker that has no thread of its own (polling and blocking modes),
 * with a deadline so a hang fails the test instead of the suite.
 */
import { UcxError, Worker, type Endpoint, type ProgressMode, type WorkerOptions } from "../../src/index.ts";

export const MODES: readonly ProgressMode[] = ["thread", "polling", "blocking", "hybrid"];

export async function drive<T>(workers: readonly Worker[], promise: Promise<T>, timeoutMs = 20_000): Promise<T> {
  let done = false;
  const settled = promise.finally(() => (done = true));
  settled.catch(() => {});
  const deadline = Date.now() + timeoutMs;
  const manual = workers.filter((w) => (w.progressMode === "polling" || w.progressMode === "blocking") && !w.closed);
  let timer: ReturnType<typeof setTimeout> | undefined;
  try {
    if (manual.length === 0) {
      // Only here: where the loop below drives, it keeps the deadline itself, and a timer's
      // rejection nobody awaits would be reported as unhandled.
      const timeout = new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`not settled within ${timeoutMs} ms`)), timeoutMs);
      });
      return await Promise.race([settled, timeout]);
    }
    for (let i = 0; !done; i++) {
      if (Date.now() > deadline) throw new Error(`not settled within ${timeoutMs} ms`);
      for (const w of manual) if (!w.closed) w.progress();
      await undefined;
      if (i % 128 === 127) await new Promise((r) => setTimeout(r, 0));
    }
    return await settled;
  } finally {
    clearTimeout(timer);
  }
}

export interface Pair {
  a: Worker;
  b: Worker;
  /** a's endpoint to b (by b's worker address). */
  ab: Endpoint;
  /** Await `p` while progressing both workers. */
  run<T>(p: Promise<T>, timeoutMs?: number): Promise<T>;
  close(): Promise<void>;
}

export async function pair(mode: ProgressMode, options: WorkerOptions = {}): Promise<Pair> {
  const a = await Worker.create({ progressMode: mode, errorHandling: "none", ...options });
  const b = await Worker.create({ progressMode: mode, errorHandling: "none", ...options });
  const run = <T>(p: Promise<T>, timeoutMs?: number) => drive([a, b], p, timeoutMs);
  const ab = await run(b.address().then((addr) => a.connect(addr)));
  return {
    a,
    b,
    ab,
    run,
    close: async () => {
      await run(Promise.all([a.close(), b.close()]));
    },
  };
}

/**
 * Endpoints between `a` and `b` made through the hello (b listens, a connects), so that each has
 * a receive of its own (`ep.recv` on an endpoint made by worker address is refused).
 */
export async function helloEndpoints(a: Worker, b: Worker, run: <T>(p: Promise<T>) => Promise<T>): Promise<{ ab: Endpoint; ba: Endpoint }> {
  const listener = await run(b.listen({ host: "127.0.0.1", port: 0 }));
  const [ba, ab] = await run(Promise.all([listener.accept(), a.connect({ host: "127.0.0.1", port: listener.port })]));
  await run(listener.close());
  return { ab, ba };
}

/** Deterministic content: byte i of message `seed` is (i * 31 + seed) & 255. */
export function pattern(length: number, seed: number): Uint8Array {
  const out = new Uint8Array(length);
  for (let i = 0; i < length; i++) out[i] = (i * 31 + seed) & 255;
  return out;
}

export function samePattern(bytes: Uint8Array, seed: number): boolean {
  for (let i = 0; i < bytes.length; i++) if (bytes[i] !== ((i * 31 + seed) & 255)) return false;
  return true;
}

/**
 * The error an operation's Promise rejects with. Fails when the call throws synchronously instead
 * (a refusal that depends on the endpoint's state must reject, like any other failed operation)
 * or when it resolves. Given a Promise already made, it is marked handled at once: one that
 * rejects before it is awaited is not reported as an unhandled rejection.
 */
export async function rejection(pending: Promise<unknown> | (() => Promise<unknown>)): Promise<unknown> {
  let promise: Promise<unknown>;
  try {
    promise = typeof pending === "function" ? pending() : pending;
  } catch (e) {
    throw new Error(`threw synchronously instead of rejecting: ${String(e)}`);
  }
  try {
    await promise;
  } catch (e) {
    return e;
  }
  throw new Error("resolved where a rejection was expected");
}

/** `rejection`, and the reason must be a UcxError (anything else is rethrown as the test's failure). */
export async function ucxRejection(pending: Promise<unknown> | (() => Promise<unknown>)): Promise<UcxError> {
  const e = await rejection(pending);
  if (e instanceof UcxError) return e;
  throw e;
}
