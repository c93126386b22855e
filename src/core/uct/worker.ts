/**
 * A UCT worker (`uct_worker_h`) and its progress.
 *
 * Threading, the one rule of this module: every UCT object is driven from the JavaScript thread
 * that created its worker. `progress()` runs `uct_worker_progress` on the calling thread, and
 * every callback UCT makes (AM handlers, completions, pending requests, pack and unpack) is made
 * from inside it or from inside an operation called on that same thread. There is no progress
 * thread and no ring here (unlike the UCP engine in ../engine): UCT is the raw hardware model,
 * polled by its user, and this keeps callbacks on the one thread every backend can take them on
 * (ffi-facts.md: koffi deadlocks, Bun kills the process, when C calls back from another thread).
 *
 * `uct_worker_progress` is a static inline in uct.h: `ucs_callbackq_dispatch(&worker->progress_q)`,
 * which calls each `fast_elems[i].cb(fast_elems[i].arg)` until a NULL cb. It is done here the
 * same way, over the worker's own memory (layouts `uct_worker_t` and `ucs_callbackq_elem_t`).
 * Interfaces put their progress functions in that queue when opened (`uct_iface_progress_enable`).
 *
 * The worker's async context (UCS_ASYNC_MODE_THREAD_SPINLOCK, as uct_hello_world.c uses) runs
 * UCT's own fd and timer handlers (tcp accepting connections) on UCX's async thread, or on this
 * one from `progress()` when they found the context busy; those never call JavaScript, because
 * AM handlers are registered without UCT_CB_FLAG_ASYNC.
 */
import { uctInlineCalls, UCX_CONSTANTS as C, type Pointer } from "../../ffi/index.ts";
import { UcxError } from "../errors.ts";
import { check, ucx } from "../library.ts";
import { OutSlots } from "../out-slots.ts";

type ProgressFn = (arg: Pointer) => number;

export interface UctProgressOptions {
  /** Give up after this many milliseconds with UcxError UCS_ERR_TIMED_OUT (default 10 s). */
  readonly timeoutMs?: number;
  /** What is being waited for, for the timeout's message. */
  readonly what?: string;
}

export class UctWorker {
  private closed = false;
  private readonly queue: DataView;
  private readonly progressFns = new Map<Pointer, ProgressFn>();
  private calls = 0;
  /** Interfaces opened on this worker, closed with it. */
  readonly interfaces: Set<{ close(): void }> = new Set();

  private constructor(
    /** The `uct_worker_h`. */
    readonly handle: Pointer,
    /** The `ucs_async_context_t *` the worker was made with. */
    readonly async: Pointer,
  ) {
    const elems = ucx().layouts.uct_worker_t.fields["progress_q.fast_elems"]!;
    this.queue = new DataView(ucx().view(handle + elems.offset, elems.count!)); // a u8 array: count is its bytes
  }

  static create(): UctWorker {
    const u = ucx();
    const out = new OutSlots(1);
    check(u.ucs_async_context_create(C.UCS_ASYNC_MODE_THREAD_SPINLOCK, out.address()), "ucs_async_context_create");
    const async = out.pointer();
    const status = u.uct_worker_create(async, C.UCS_THREAD_MODE_SINGLE, out.address());
    if (status !== 0) {
      u.ucs_async_context_destroy(async);
      check(status, "uct_worker_create");
    }
    return new UctWorker(out.pointer(), async);
  }

  get isClosed(): boolean {
    return this.closed;
  }

  /** `uct_worker_progress`: runs every progress callback of the worker's interfaces once. */
  progress(): number {
    if (this.closed) throw new UcxError("UCX_TS_CLOSED", "UCT worker is closed");
    const q = this.queue;
    const size = ucx().layouts.ucs_callbackq_elem_t.size;
    let count = 0;
    for (let i = 0; i <= C.UCS_CALLBACKQ_FAST_COUNT; i++) {
      const o = i * size;
      const cb = q.getUint32(o, true) + q.getUint32(o + 4, true) * 2 ** 32;
      if (cb === 0) break;
      const arg = q.getUint32(o + 8, true) + q.getUint32(o + 12, true) * 2 ** 32;
      let fn = this.progressFns.get(cb);
      if (!fn) {
        fn = ucx().functionAt(cb, uctInlineCalls.ucs_callback_t) as ProgressFn;
        this.progressFns.set(cb, fn);
      }
      count += fn(arg);
    }
    // ucs_async_check_miss, as ucp_worker_progress does it: an async event (a tcp connection
    // request) that found the context locked by this thread waits in a "missed" queue until
    // someone polls it. When idle, and every 16th call otherwise.
    if (count === 0 || (++this.calls & 15) === 0) ucx().__ucs_async_poll_missed(this.async);
    return count;
  }

  /**
   * Progress until `done()` is true: bursts of `progress()` on this thread, with a turn of the
   * event loop between bursts so timers and I/O (a peer process's pipe) still run.
   */
  async progressUntil(done: () => boolean, options: UctProgressOptions = {}): Promise<void> {
    const deadline = Date.now() + (options.timeoutMs ?? 10_000);
    while (!done()) {
      const burstEnd = performance.now() + 2;
      do {
        this.progress();
        if (done()) return;
      } while (performance.now() < burstEnd);
      if (Date.now() > deadline) {
        throw new UcxError("UCS_ERR_TIMED_OUT", `UCT progress: ${options.what ?? "condition"} not reached in ${options.timeoutMs ?? 10_000} ms`, {
          status: -20,
        });
      }
      await new Promise((r) => setTimeout(r, 0));
    }
  }

  /** Closes the worker's interfaces (and their endpoints), then the worker and its async context. */
  close(): void {
    if (this.closed) return;
    for (const i of [...this.interfaces]) i.close();
    this.closed = true;
    const u = ucx();
    u.uct_worker_destroy(this.handle);
    u.ucs_async_context_destroy(this.async);
  }
}
