/**
 * Turnaround marks (issue 21: where the time of a round trip goes between two processes), on only
 * when the process starts with UCX_TS_TURNAROUND=1. Off, each mark in the data path is one test of
 * the module constant `TURNAROUND`.
 *
 * The per-operation profile (profile.ts) splits the application thread's time into phases, but
 * over everything the thread does: between two processes most of that is waiting, and it cannot
 * say which part of a round trip lies on the critical path. These marks follow one message
 * through this side instead, each a timestamp in a ring:
 *
 *   arrived   UCX reported a receive complete (its callback, inside ucp_worker_progress; or
 *             takeover's check of a fast request)
 *   finished  the receive's Promise resolved (the request's settle)
 *   resumed   the application's code after its `await` runs again (marked by the caller, e.g.
 *             bench/p2p-peer.ts, through markResumed)
 *   posted    the next send is handed to UCX (just before ucp_tag_send_nbx)
 *
 * In a ping-pong each side's share of a round trip is arrived -> posted (its turnaround); posted
 * -> the next arrived ("away") is the wire both ways plus the peer's turnaround. Marks are paired
 * by time, not by count: a stage is measured from each mark of its first kind to the next mark
 * of its second kind before the first kind's next mark, so a round that lacks a mark (a receive
 * the progress thread completed, unseen here) only drops out of the stages that need it.
 *
 * Only this thread's marks are seen: in thread mode the progress thread's callbacks mark nothing
 * (with takeover the application thread's fast checks do). Each mark costs a performance.now()
 * (~30-90 ns here), so the stages read a little long.
 */
import { getEnv } from "../ffi/index.ts";

export const TURNAROUND = getEnv("UCX_TS_TURNAROUND") === "1";

export const Mark = { Arrived: 0, Finished: 1, Resumed: 2, Posted: 3 } as const;
export type Mark = (typeof Mark)[keyof typeof Mark];
const MARK_NAMES = ["arrived", "finished", "resumed", "posted"] as const;

/** Marks kept per kind: the last 2^17 (a ring: long runs keep their end). */
const SLOTS = 1 << 17;
const times = MARK_NAMES.map(() => new Float64Array(TURNAROUND ? SLOTS : 0));
const counts = new Float64Array(MARK_NAMES.length);

/** Record `kind` now (call only where TURNAROUND is true). */
export function mark(kind: Mark): void {
  times[kind]![counts[kind]! % SLOTS] = performance.now();
  counts[kind]!++;
}

/** The caller's code has resumed after awaiting a receive (see the head of this file). */
export function markResumed(): void {
  if (TURNAROUND) mark(Mark.Resumed);
}

/** Forget every mark (after a warm-up). */
export function resetTurnaround(): void {
  counts.fill(0);
}

/** The marks of `kind` still in the ring, oldest first. */
function marksOf(kind: Mark): Float64Array {
  const n = counts[kind]!;
  if (n <= SLOTS) return times[kind]!.subarray(0, n);
  const at = n % SLOTS;
  const out = new Float64Array(SLOTS);
  out.set(times[kind]!.subarray(at), 0);
  out.set(times[kind]!.subarray(0, at), SLOTS - at);
  return out;
}

/**
 * For each mark in `from`, the time to the first mark in `to` after it and before the next mark
 * in `from` (us), as median and p90 with the number of pairs; undefined where none paired.
 */
export function stage(from: Float64Array, to: Float64Array): { median: number; p90: number; pairs: number } | undefined {
  const gaps: number[] = [];
  let j = 0;
  for (let i = 0; i < from.length; i++) {
    const t = from[i]!;
    const next = i + 1 < from.length ? from[i + 1]! : Infinity;
    while (j < to.length && to[j]! < t) j++;
    if (j < to.length && to[j]! < next) gaps.push((to[j]! - t) * 1000);
  }
  if (gaps.length === 0) return undefined;
  gaps.sort((a, b) => a - b);
  const at = (q: number) => Math.round(gaps[Math.min(gaps.length - 1, Math.floor(q * gaps.length))]! * 1000) / 1000;
  return { median: at(0.5), p90: at(0.9), pairs: gaps.length };
}

export type TurnaroundStage = NonNullable<ReturnType<typeof stage>>;

/**
 * The stages over the marks since the last reset: `turnaround` (arrived -> posted, this side's
 * share of a round trip), its parts `arrivedToFinished`, `finishedToResumed`, `resumedToPosted`,
 * and `away` (posted -> arrived). Stages with no pairs are left out; `marks` counts each kind.
 */
export function turnaroundSnapshot(): { marks: Record<string, number>; stages: Record<string, TurnaroundStage> } {
  const m = MARK_NAMES.map((_, k) => marksOf(k as Mark));
  const [arrived, finished, resumed, posted] = m as [Float64Array, Float64Array, Float64Array, Float64Array];
  const stages: Record<string, TurnaroundStage> = {};
  const put = (name: string, s: TurnaroundStage | undefined) => {
    if (s) stages[name] = s;
  };
  put("turnaround", stage(arrived, posted));
  put("arrivedToFinished", stage(arrived, finished));
  put("finishedToResumed", stage(finished, resumed));
  put("resumedToPosted", stage(resumed, posted));
  put("away", stage(posted, arrived));
  return { marks: Object.fromEntries(MARK_NAMES.map((name, k) => [name, counts[k]!])), stages };
}
