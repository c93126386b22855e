/**
 * Hybrid mode's fd watcher, a job on a pooled engine thread (thread-pool.ts; hybrid-engine.ts
 * starts it). It never calls UCX: it sleeps until the application thread asks it to watch (it
 * has armed the worker, so UCX's event fd will turn readable on the next event), blocks in libc
 * `poll` on that fd, then bumps the EVENT word and wakes the application thread, which
 * progresses UCX itself. Words of `state`: WATCH (a request counter), EVENT (an event counter),
 * STOP, READY. It returns once STOP is set (within its poll timeout); the thread then waits for
 * its next job.
 */
import { ucx } from "../library.ts";
import { STATE } from "./hybrid-state.ts";

export interface WatchData {
  fd: number;
  state: SharedArrayBuffer;
}

export function watchFd({ fd, state }: WatchData): void {
  const s = new Int32Array(state);
  const u = ucx();
  const pollfd = new DataView(new ArrayBuffer(8));
  const pollfdAddress = u.addressOf(new Uint8Array(pollfd.buffer));
  pollfd.setInt32(0, fd, true);
  pollfd.setInt16(4, 1 /* POLLIN */, true);

  // Every watch request counts, those made before this thread ran included: the counter starts
  // at 0. Reading it here instead took the requests of the start-up as served, and their parks
  // ran to the 1 s timeout (a new worker's first round trips, issue 21, 2026-11-26).
  let served = 0;
  Atomics.store(s, STATE.READY, 1);
  while (Atomics.load(s, STATE.STOP) === 0) {
    // Sleep until a new watch request (or stop).
    if (Atomics.load(s, STATE.WATCH) === served) {
      Atomics.wait(s, STATE.WATCH, served, 1000);
      continue;
    }
    served = Atomics.load(s, STATE.WATCH);
    // Block on the fd; wake now and then to see a stop. Level-triggered: once readable it stays
    // so until the application progresses, so this thread reports once and waits for a new request.
    for (;;) {
      pollfd.setInt16(6, 0, true);
      const r = u.poll(pollfdAddress, 1, 200);
      if (r !== 0 || Atomics.load(s, STATE.STOP) !== 0) break;
    }
    Atomics.add(s, STATE.EVENT, 1);
    Atomics.notify(s, STATE.EVENT);
  }
}

