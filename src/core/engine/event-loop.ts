/**
 * Turns of the event loop for the loops that progress UCX on the application thread (the
 * polling driver behind `settled()`, hybrid mode's driver). They spin on microtasks and give the
 * event loop a turn now and then, so timers, I/O and Atomics.waitAsync wake-ups run.
 *
 * Every such loop in the process shares one clock and one turn. With a turn each, two workers
 * in one process stalled each other: a loop awaiting its setImmediate does not resume while
 * another loop keeps the microtask queue busy, and that one may be spinning for a message only
 * the stalled worker can send (measured 2026-11-23: two polling workers in one process 4.3 ms a
 * round trip, 23 us when progressed by hand in one loop; two hybrid workers 118 us). Now
 * whichever loop finds the turn due starts it, the others see it pending and join it, and the
 * microtask queue empties at once.
 */
let lastTurn = performance.now();

/**
 * Microtask turns a driver loop (polling, hybrid, thread mode's takeover) gives the application
 * after a round that delivered completions, before it calls ucp_worker_progress again; in those
 * turns it only executes submissions and delivers (Engine.settle). The code a completion resumes
 * (an echo server's reply) runs a few microtasks later: `ep.recv` settles through an async
 * wrapper, `Promise.all` and `Promise.race` add one each. A loop that awaited one turn called
 * UCX first, and over tcp that is an epoll_wait system call (~1-3 us on this VM) between every
 * received message and the reply it caused, on both sides of a round trip (strace of two
 * polling peers, 2026-11-26: recvfrom, epoll_wait, sendto). Shared memory progress costs ~0.1 us,
 * so there the turns cost about what they save.
 */
export const SETTLE_TURNS = 6;
/**
 * The settling turns end early once the resumed code has posted a send or receive straight to
 * UCX (direct-tags.ts `posts` moved since `posts`) that UCX has not finished (one is in flight),
 * and a turn delivered nothing more: that post is what the turns waited for, and UCX should see
 * it now rather than after up to five more turns. Measured 2026-12-07 (quiet 2-core VM, two
 * processes): a hybrid driver's allocation per one-process 8 B round trip 3.3 -> 2.6 KB (each
 * turn is an await: a Promise and its reaction; `bench/profile.ts hybrid --allocation`, counts
 * that load does not move); 64 KiB windows of 16 (a serial `await ep.recv` receiver), Node:
 * +9-11 % in one series of four alternated pairs with a first form that ended the turns at any
 * post, hybrid -4 % / +2 % and polling +7 % / +5 % (medians) in two series of this form, inside
 * the rows' +-10 % run-to-run swing: no bandwidth gain is proven; 8 B round trips unchanged. A post
 * that finished in its call (an eager send) does not end them: a driver with nothing in flight
 * gives the event loop a turn every 50 us (turnIntervalMs), and two hybrid workers of one
 * process, each idle in turn, took ~500 turns in 4,000 round trips where they had taken none.
 * The hybrid driver and polling's settled() driver do this; thread mode's takeover takes no
 * direct calls.
 */
export function postedAndWaiting(direct: { readonly posts: number; readonly count: number } | undefined, posts: number): boolean {
  return direct !== undefined && direct.posts !== posts && direct.count > 0;
}
let pending: Promise<void> | undefined;

/**
 * Loops of this thread parked on a wake-up that only a turn of the event loop delivers
 * (`Atomics.waitAsync` settles as a task, not a microtask): another worker's notifier or hybrid
 * driver. While one is, a loop spinning on microtasks must give the event loop turns often, or
 * that worker's completion waits for the spinner's next turn (two hybrid workers in one process:
 * 300 us a round trip with 2 ms between turns). While none is, a turn is only for the
 * application's timers and I/O, and each one costs a spinning loop microseconds (thread mode's
 * takeover, two processes, Node, 2026-11-27: a turn every 50 us was 0.2-0.5 turns per 8 B round
 * trip, p90 12-20 us against 6.4-9.2 with a turn every 1-2 ms).
 */
let parked = 0;

/** Await `wait` (a park on Atomics.waitAsync or the like), counted as parked meanwhile (othersParked). */
export async function parkedOn<T>(wait: Promise<T>): Promise<T> {
  parked++;
  try {
    return await wait;
  } finally {
    parked--;
  }
}

/** Whether a loop of this thread is parked waiting for an event-loop turn (parkedOn). */
export function othersParked(): boolean {
  return parked > 0;
}

/**
 * How often a driver loop spinning on microtasks while it waits for UCX (hybrid's, thread mode's
 * takeover) gives the event loop a turn (ms): often while another loop of this thread is parked
 * on one (`parked` above) or the spinner awaits nothing (the application may be waiting for a
 * timer or I/O), else only as often as the application's timers and I/O need (polling's driver:
 * every 2 ms).
 */
export function turnIntervalMs(awaiting: boolean): number {
  return awaiting && parked === 0 ? ALONE_TURN_MS : SHARED_TURN_MS;
}
/** turnIntervalMs while something is awaited and no other loop of this thread is parked. */
export const ALONE_TURN_MS = 1;
/** turnIntervalMs otherwise. */
export const SHARED_TURN_MS = 0.05;

/** Turns of the event loop taken through yieldToEventLoop so far (counted for the tests and bench/profile.ts). */
export function eventLoopTurns(): number {
  return turns;
}
let turns = 0;

/** True when a loop that last yielded `intervalMs` ago should yield now (or a turn is under way). */
export function turnDue(intervalMs: number): boolean {
  return pending !== undefined || performance.now() - lastTurn > intervalMs;
}

/**
 * One turn of the event loop, shared by every caller until it comes: setImmediate where the
 * runtime has it (all three do today; setTimeout(0) costs a millisecond).
 */
export function yieldToEventLoop(): Promise<void> {
  return (pending ??= new Promise<void>((resolve) => {
    const g = globalThis as { setImmediate?: (f: () => void) => unknown };
    const done = () => {
      turns++;
      pending = undefined;
      lastTurn = performance.now();
      resolve();
    };
    if (g.setImmediate) g.setImmediate(done);
    else setTimeout(done, 0);
  }));
}
