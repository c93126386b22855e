/**
 * What every fuzz module (test/fuzz/*.ts) gets: a seeded PRNG (a failure names its seed and is
 * repeated with it), a time budget with a floor of inputs (a loaded machine must not make a run
 * vacuous), two workers joined both ways by worker address, and outcome counting.
 */
import { Worker, UcxError, type Endpoint } from "../../src/index.ts";
import { drive } from "../helpers/workers.ts";

export interface FuzzContext {
  readonly seed: number;
  /** Uniform in [0, 1). */
  readonly rand: () => number;
  /** Uniform integer in [0, n). */
  int(n: number): number;
  bytes(n: number): Uint8Array;
  pick<T>(items: readonly T[]): T;
  /** True while the module should try another input. */
  going(tried: number): boolean;
  readonly a: Worker;
  readonly b: Worker;
  /** a -> b and b -> a, raw endpoints (made by worker address). */
  readonly ab: Endpoint;
  readonly ba: Endpoint;
  run<T>(p: Promise<T>, timeoutMs?: number): Promise<T>;
}

export interface FuzzReport {
  inputs: number;
  outcomes: Record<string, number>;
  [detail: string]: unknown;
}

/** Seeded PRNG (mulberry32), the one the soak uses: a failure is repeated with the seed it printed. */
import { seededRandom } from "../../scripts/soak/random.ts";
export const seeded = seededRandom;

export async function makeContext(seed: number, budgetMs: number, minInputs: number, mode: "thread" | "polling"): Promise<FuzzContext & { close(): Promise<void> }> {
  const rand = seeded(seed);
  const int = (n: number) => Math.floor(rand() * n);
  const a = await Worker.create({ progressMode: mode, errorHandling: "peer" });
  const b = await Worker.create({ progressMode: mode, errorHandling: "peer", multi: { maxBytes: 1 << 20, maxHeaders: 8 }, am: { maxQueuedMessages: 64, maxQueuedBytes: 1 << 20 } });
  const run = <T>(p: Promise<T>, timeoutMs = 20_000) => drive([a, b], p, timeoutMs);
  const ab = await run(b.address().then((x) => a.connect(x)));
  const ba = await run(a.address().then((x) => b.connect(x)));
  let started = 0;
  return {
    seed,
    rand,
    int,
    bytes: (n) => Uint8Array.from({ length: n }, () => int(256)),
    pick: (items) => items[int(items.length)]!,
    going(tried) {
      if (tried === 0) started = Date.now();
      return tried < minInputs || Date.now() - started < budgetMs;
    },
    a,
    b,
    ab,
    ba,
    run,
    close: () => run(Promise.all([a.close(), b.close()])).then(() => {}),
  };
}

export function count(outcomes: Record<string, number>, key: string): void {
  outcomes[key] = (outcomes[key] ?? 0) + 1;
}

/** The code of the UcxError `p` rejects with, or "ok" with its value; anything else is thrown. */
export async function outcome<T>(p: Promise<T>): Promise<{ code: string; value?: T; error?: UcxError }> {
  try {
    return { code: "ok", value: await p };
  } catch (e) {
    if (e instanceof UcxError) return { code: e.code, error: e };
    throw e;
  }
}

export const hex = (b: Uint8Array) => Buffer.from(b.buffer, b.byteOffset, Math.min(b.byteLength, 256)).toString("hex");

/** `a` and `b` hold the same bytes. */
export function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  return a.length === b.length && a.every((v, i) => v === b[i]);
}
