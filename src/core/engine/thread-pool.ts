/**
 * The engine's threads (thread mode's progress thread, hybrid mode's fd watcher), kept after a
 * worker closes and reused by the next worker, instead of one runtime thread started and ended
 * per worker.
 *
 * Why: under Node every ended worker_thread left memory behind that no close of ours can free.
 * koffi 3.3 allocates its per-isolate state (`InstanceData`: its type tables and, on a thread's
 * first FFI call, a 2 MiB call stack with a guard page and a 1 MiB heap, both mmapped) and never
 * frees it: it is not registered as Node-API instance data, so an isolate's teardown does not
 * delete it (older koffi did: `env.SetInstanceData`). Measured here, a bare worker_thread
 * create/end loop: flat without koffi; +18 KiB of malloc per thread with `require("koffi")`;
 * +23 KiB and 3 mappings (4 KiB guard, 2 MiB + 4 KiB stack, 1 MiB heap) once it makes one call
 * (scripts/soak/koffi-thread-leak.mjs). From TypeScript sources Node 20 also registers tsx in each
 * thread (ffi/thread.ts), ~30 KiB more per thread. Thread-mode Worker cycles grew ~40 KiB of
 * malloc and ~2.5 mappings each (issue 26); with the threads reused they stay flat.
 *
 * A thread runs one job at a time (engine-thread.ts): the job's messages and its end come back
 * on the thread's own port, so a job behaves as the thread did (`onMessage`, `ended` for its
 * "exit", `ref`/`unref`). A job that throws ends its thread (the runtime reports the error), so
 * no thread whose job failed half-way is reused. Idle threads are unref'd (they never keep a
 * process alive) and at most MAX_IDLE are kept; one more ended ends its thread. They are never
 * ended for being idle: each end leaks koffi's state again, and an idle thread costs about an
 * isolate's memory (a few MiB) and no CPU.
 */
import { entryBeside, startThread, type Thread } from "../../ffi/thread.ts";

export type JobKind = "progress" | "watch";

/** The message a thread posts when its job returned (engine-thread.ts). */
export const JOB_DONE = "ucx-ts:job-done";

/**
 * Idle threads kept: the workers a process usually opens at once (a few per process; more are
 * started when needed, and those past this bound end when their worker closes).
 */
const MAX_IDLE = 4;

interface PooledThread {
  readonly thread: Thread;
  job: ThreadJob | undefined;
  alive: boolean;
}

const idle: PooledThread[] = [];
let started = 0;

/** Runtime threads started for jobs in this process (tests: cycles must reuse them). */
export function threadsStarted(): number {
  return started;
}

/** Idle threads kept now. */
export function idleThreads(): number {
  return idle.length;
}

/** One job on a pooled thread: what the thread was to its engine while the job runs. */
export class ThreadJob {
  private messageHandler: ((m: unknown) => void) | undefined;
  private errorHandler: ((e: Error) => void) | undefined;
  private finished = false;
  private resolveEnded!: () => void;
  /** Resolves when the job returned, or its thread ended (an error, a terminate at exit). */
  readonly ended = new Promise<void>((resolve) => (this.resolveEnded = resolve));

  constructor(private readonly owner: PooledThread) {}

  /** The job's messages (the thread's, while this job runs). One handler; a new one replaces it. */
  onMessage(handler: (m: unknown) => void): void {
    this.messageHandler = handler;
  }

  /** An error the job did not catch; its thread has ended. */
  onError(handler: (e: Error) => void): void {
    this.errorHandler = handler;
  }

  get done(): boolean {
    return this.finished;
  }

  /** Keep the process alive while the job runs; nothing once it is done (the thread may serve another job). */
  ref(): void {
    if (!this.finished) this.owner.thread.ref();
  }

  unref(): void {
    if (!this.finished) this.owner.thread.unref();
  }

  /** @internal */
  deliver(m: unknown): void {
    this.messageHandler?.(m);
  }

  /** @internal */
  fail(e: Error): void {
    this.errorHandler?.(e);
  }

  /** @internal */
  end(): void {
    if (this.finished) return;
    this.finished = true;
    this.messageHandler = undefined;
    this.errorHandler = undefined;
    this.resolveEnded();
  }
}

/**
 * Run a job on an idle thread, or on a new one. `data` is structured-cloned (SharedArrayBuffers
 * shared), `transfer` moved, as `workerData` was. The job starts ref'd, as a new thread does (the
 * process waits for its first message); the engine unrefs it once started.
 */
export function runOnThread(kind: JobKind, data: unknown, transfer: Transferable[] = []): ThreadJob {
  const t = idle.pop() ?? spawn();
  const job = new ThreadJob(t);
  t.job = job;
  t.thread.ref();
  t.thread.postMessage({ kind, data }, transfer as never);
  return job;
}

function spawn(): PooledThread {
  const thread = startThread(entryBeside(import.meta.url, "engine-thread"), undefined);
  started++;
  const t: PooledThread = { thread, job: undefined, alive: true };
  thread.on("message", (m: unknown) => {
    if (m === JOB_DONE) {
      const job = t.job;
      t.job = undefined;
      job?.end();
      release(t);
    } else t.job?.deliver(m);
  });
  thread.on("error", (e: Error) => t.job?.fail(e));
  thread.on("exit", () => {
    t.alive = false;
    const i = idle.indexOf(t);
    if (i >= 0) idle.splice(i, 1);
    t.job?.end();
    t.job = undefined;
  });
  return t;
}

function release(t: PooledThread): void {
  if (!t.alive) return;
  t.thread.unref();
  if (idle.length < MAX_IDLE) idle.push(t);
  else void t.thread.terminate();
}
