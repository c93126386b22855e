/**
 * The progress policy while a collective's step waits: poll and yield the core, then sleep
 * (hybrid mode: spinWhile; polling and blocking modes: pollWhile, at the end).
 *
 * Hybrid mode progresses UCX on the application thread for a short budget after the last event
 * (100 us on 2 cores) and then parks on UCX's event fd; a message that comes later costs a
 * wake-up (the fd watcher thread, then the event loop) before anything reads it. Inside a
 * collective that is every message whose sender was a little late, which on an oversubscribed
 * machine (4 or 8 ranks on 2 cores) is most of them. Open MPI's ranks instead poll and call
 * sched_yield() between polls (mpi_yield_when_idle): a waiting rank gives its core to whoever
 * needs it yet notices the message on its next turn, without a wake-up.
 *
 * So while a step has transfers outstanding, this loop progresses the worker, and when a round
 * finds nothing it yields the core (sched_yield) rather than parking; the event loop gets a turn
 * every YIELD_MS as in the engine's own loops. It stops when the step completes, or once
 * `budgetMs` has passed since the last event: the step then waits in the engine's sleeping
 * mode, so a collective whose peer is away for long (or an idle process) does not burn a core.
 * Outside collectives nothing changes: the worker sleeps as hybrid mode does.
 *
 * Only where this host runs more ranks than it has cores (context.ts): with a core per rank the
 * hybrid driver's own busy spin catches a near reply, and yielding lost to it. Measured
 * 2026-11-26 03:54-04:07 (2 cores, other engineers' load 8-17, alternating runs, median of a
 * back-to-back 8 B allreduce, spin vs none): 2 ranks 182/46, 369/299, 426/353, 459/264 us (worse
 * every time, also with a 100 us busy phase before yielding); 4 ranks 1,058/1,304, 2,398/2,161,
 * 4,033/2,822, 936/1,187 (a wash); 8 ranks 5,225/7,084, 7,902/10,104 (better; 8 ranks polling
 * busily for 100 us before yielding took 14 ms against 3.3).
 */
import type { Worker } from "../core/worker.ts";
import { ucx } from "../core/library.ts";
import { turnDue, yieldToEventLoop } from "../core/engine/event-loop.ts";
import type { ConfigTable } from "./config.ts";

/** Longest stretch without an event-loop turn (the hybrid driver's figure). */
const YIELD_MS = 0.05;

/** Table "progress", prefix UCX_TS_UCG_STEP_: the spin of a waiting step. */
export const STEP_SPIN_CONFIG: ConfigTable = {
  name: "progress",
  prefix: "UCX_TS_UCG_STEP_",
  fields: {
    SPIN_US: {
      default: 2000,
      min: 0,
      max: 1_000_000,
      doc: "blocking mode, and hybrid mode with more ranks on this host than cores: how long (us) a collective's waiting step polls and yields its core after the last event before it sleeps (0: sleep at once)",
    },
    BUSY_US: {
      default: 20,
      min: 0,
      max: 1_000_000,
      doc: "polling and blocking modes, with no more ranks on this host than cores: how long (us) a collective's step, once posted, polls back to back before it starts yielding its core (sched_yield) after an empty poll (0: yield from the first empty poll; oversubscribed hosts always do)",
    },
    SYNC_US: {
      default: 200,
      min: 0,
      max: 1_000_000,
      doc: "polling and blocking modes: how long (us) a collective's step, once posted, polls synchronously (no Promise, no microtask turn) for its messages before it awaits them (0: await at once)",
    },
  },
};

/**
 * Polls `worker` while `pending()` holds, for up to `budgetMs` after the last event; resolves
 * when the step is done or the budget is spent (the caller then awaits the step as usual).
 */
export async function spinWhile(worker: Worker, pending: () => boolean, budgetMs: number): Promise<void> {
  const yieldCore = ucx().sched_yield;
  let lastEvent = performance.now();
  while (pending() && !worker.closed) {
    if (worker.progress() > 0) {
      lastEvent = performance.now();
    } else {
      if (performance.now() - lastEvent > budgetMs) return;
      yieldCore();
    }
    // Completions settle as microtasks: let them run (and `pending()` see them) before polling again.
    await undefined;
    if (turnDue(YIELD_MS)) await yieldToEventLoop();
  }
}

/**
 * Empty polls between two progress calls of the watch worker (a power of two): its tcp endpoints
 * cost an epoll_wait per call, and a member's death need not be seen within microseconds. In
 * blocking mode's sleep each empty poll is a SLEEP_MS sleep: a death is seen within WATCH_EVERY ms
 * there, not sooner (the watch worker's socket does not wake this worker's ucp_worker_wait).
 */
const WATCH_EVERY = 16;

/** Blocking mode: the longest sleep in ucp_worker_wait before the event loop gets a turn (ms). */
const SLEEP_MS = 1;
/**
 * Blocking mode: the longest stretch of polling without an event-loop turn (ms). Longer than
 * hybrid's: no Atomics.waitAsync wake-up of this worker waits for the turn, only timers (a
 * collective's timeout) and I/O, and a turn (setImmediate) cost more than a 2-rank exchange.
 */
const POLL_TURN_MS = 1;

/**
 * The whole wait of a step in the polling and blocking progress modes, where nothing but this
 * loop progresses UCX while a collective runs: poll, and `sched_yield()` after an empty poll
 * (Open MPI's mpi_yield_when_idle), so a waiting rank gives its core to whoever needs it yet sees
 * a message on its next turn, without a wake-up. In blocking mode (`sleeps`), once `busyMs` has
 * passed since the last event it sleeps in ucp_worker_wait instead (woken by UCX's event fd, at
 * most SLEEP_MS at a time, the event loop getting a turn between sleeps), so a rank whose peers
 * are away for long holds no core; no fd watcher thread or Atomics.waitAsync task stands between
 * the event and this loop. Polling mode never sleeps (as Open MPI).
 */
export async function pollWhile(worker: Worker, pending: () => boolean, busyMs: number, sleeps: boolean, watch?: () => void): Promise<void> {
  const yieldCore = ucx().sched_yield;
  let lastEvent = performance.now();
  let empty = 0;
  while (pending() && !worker.closed) {
    if (worker.progress() > 0) {
      lastEvent = performance.now();
    } else if ((++empty & (WATCH_EVERY - 1)) === 0 && watch) {
      // The watch worker (channel.ts): a member's death fails this step from in there.
      watch();
    } else if (!sleeps || performance.now() - lastEvent <= busyMs) {
      yieldCore();
    } else if (worker.wait(SLEEP_MS) > 0) {
      lastEvent = performance.now();
    } else {
      // A whole sleep without an event: timers and I/O get their turn now.
      await yieldToEventLoop();
      continue;
    }
    // Completions settle as microtasks: let them run (and `pending()` see them) before polling again.
    await undefined;
    if (turnDue(POLL_TURN_MS)) await yieldToEventLoop();
  }
}

/**
 * Polling and blocking modes, right after a step is posted: poll synchronously while `pending()`
 * holds, for up to `budgetMs`, yielding the core (sched_yield) after an empty poll. A plan's
 * transfers complete through callbacks run inside `progress()` (channel.ts post/postSend), so
 * `pending()` sees a completion as soon as the poll that delivered it returns: a step whose
 * peer answers within microseconds completes here, with no Promise, microtask or event-loop
 * turn in between (the step then does not await at all). Short, because nothing else in this
 * process runs meanwhile (not even a microtask: another group's step waits its turn); past the
 * budget the step awaits through pollWhile, which lets them run.
 */
export function pollNow(worker: Worker, pending: () => boolean, budgetMs: number, busyMs = 0): void {
  const yieldCore = ucx().sched_yield;
  // The clock is read from the first empty poll on: a step whose message is there at once (most
  // of a 2-rank exchange's) never reads it (~0.1 us a read, 2026-11-27).
  let start = -1;
  while (pending() && !worker.closed) {
    if (worker.progress() > 0) continue;
    if (start < 0) start = performance.now();
    const waited = performance.now() - start;
    if (waited > budgetMs) return;
    // The first `busyMs` poll back to back: a sched_yield() is a system call, and a message that
    // lands during it is seen only after it returns (bench/ucg-rtt.ts: step vs spin).
    if (waited > busyMs) yieldCore();
  }
}
