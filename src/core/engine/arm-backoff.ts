/**
 * How a driver that wants to sleep treats `ucp_worker_arm`'s UCS_ERR_BUSY (hybrid mode's
 * driver, thread mode's progress thread). Shared by both; no imports, so the progress thread
 * loads nothing else for it.
 */
/**
 * After `ucp_worker_arm` said UCS_ERR_BUSY, progress (the spin) for this long before arming
 * again. UCX stays busy for as long as, for example, sends wait for room in the peer's
 * shared-memory FIFO, and each arm costs a few microseconds of system calls (it drains the
 * worker's event fd), where a round of progress costs a fraction of one: re-arming on every
 * round made a 256 x 8 B window's sender arm 1-2 times per message (Node, 6 us of arming per
 * message; issue 21, 2026-11-26).
 */
export const ARM_BUSY_BACKOFF_MS = 0.05;
