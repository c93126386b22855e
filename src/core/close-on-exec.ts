/**
 * Close-on-exec for the descriptors UCX opens. UCX 1.13 creates its sockets, epoll sets,
 * eventfds, pipes and timerfds without FD_CLOEXEC, and the runtimes' `spawn` closes only
 * descriptors of their own, so every child process started while a worker was open inherited
 * them. A connection UCX closed then stayed open in the child (the peer heard of no disconnect)
 * and in UCX's epoll set, and UCX 1.13 handled an event for a tcp endpoint it had freed: SIGSEGV
 * in `uct_tcp_iface_progress` (the soak under Deno, 2026-11-25).
 *
 * UCX offers no hook where it opens a descriptor, so the sweep looks afterwards: it lists
 * /proc/self/fd and sets FD_CLOEXEC on every descriptor above stderr that lacks it, except those
 * the process already had before UCX was first used here (inherited from the parent, or the
 * program's own: a make jobserver pipe, a socket-activation fd) which it leaves as they were.
 * The runtimes open all their own descriptors close-on-exec already, so what the sweep finds
 * is UCX's (or another native library's, which a child has no business inheriting either).
 *
 * When: right after each call that makes UCX open descriptors resolves (worker create, listen,
 * connect, accept, a UCT interface), before the application's code runs on; and, for the
 * connections UCX opens by itself later while it progresses (tcp connections it accepts or
 * makes during wireup), once a second while any worker is open. `markCloseOnExec()` is public:
 * a program that starts child processes while workers run calls it right before spawning to
 * close that last window. A sweep costs one directory listing and one fcntl per descriptor:
 * 0.13-0.54 ms for 33-62 descriptors on Node, Deno and Bun, measured at load average 16 on the
 * 2-core machine (readdir 45 us, fcntl through koffi 3 us there), so ~0.05% of a core at most.
 */
import { readdirSync, readlinkSync } from "node:fs";
import { setInterval, clearInterval } from "node:timers";
import { LIBC_CONSTANTS, openLibc, type Libc } from "../ffi/index.ts";

const { F_GETFD, F_SETFD, FD_CLOEXEC } = LIBC_CONSTANTS;
const FD_DIR = "/proc/self/fd";
/** The background sweep's period while a worker is open. */
const BACKGROUND_SWEEP_MS = 1000;

let libc: Libc | null | undefined;
/** Descriptors open before UCX was first used in this thread, by number, with what each was. */
let before: Map<number, string> | undefined;
let openWorkers = 0;
let timer: ReturnType<typeof setInterval> | undefined;

function target(fd: number): string | undefined {
  try {
    return readlinkSync(`${FD_DIR}/${fd}`);
  } catch {
    return undefined; // closed meanwhile
  }
}

function listDescriptors(): number[] {
  try {
    return readdirSync(FD_DIR).map(Number).filter((fd) => fd > 2);
  } catch {
    return []; // no /proc (a sandbox): nothing to sweep with
  }
}

/**
 * Note what was open before UCX: called before the first UCX context of this thread is made.
 * Only the first call counts (later ones would mistake UCX's descriptors for the program's).
 */
export function rememberDescriptorsBeforeUcx(): void {
  if (before) return;
  before = new Map();
  for (const fd of listDescriptors()) {
    const t = target(fd);
    if (t !== undefined) before.set(fd, t);
  }
}

function functions(): Libc | null {
  if (libc === undefined) {
    try {
      libc = openLibc();
    } catch {
      libc = null; // without libc there is no UCX either: nothing was opened
    }
  }
  return libc;
}

/**
 * Set FD_CLOEXEC on every descriptor above stderr that lacks it and was not open before UCX was
 * first used in this thread. Returns how many were marked. Call it right before starting a child
 * process while workers are open: UCX opens connections by itself while it progresses.
 */
export function markCloseOnExec(): number {
  const c = functions();
  if (!c) return 0;
  rememberDescriptorsBeforeUcx(); // a sweep before any worker: what is open now is the program's
  let marked = 0;
  for (const fd of listDescriptors()) {
    const flags = c.fcntl(fd, F_GETFD, 0);
    if (flags < 0 || (flags & FD_CLOEXEC) !== 0) continue; // closed meanwhile, or already marked
    const was = before!.get(fd);
    // The same number may since have been closed and reused by UCX: compare what it points to.
    if (was !== undefined && target(fd) === was) continue;
    if (c.fcntl(fd, F_SETFD, flags | FD_CLOEXEC) === 0) marked++;
  }
  return marked;
}

/** A worker opened (its descriptors are swept now and while it stays open). */
export function workerOpened(): void {
  markCloseOnExec();
  if (openWorkers++ === 0) {
    timer = setInterval(markCloseOnExec, BACKGROUND_SWEEP_MS);
    timer.unref(); // the sweep never keeps a process alive
  }
}

/** A worker closed: the background sweep stops with the last one. */
export function workerClosed(): void {
  if (openWorkers === 0) return;
  if (--openWorkers === 0 && timer) {
    clearInterval(timer);
    timer = undefined;
  }
}
