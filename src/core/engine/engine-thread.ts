/**
 * Entry point of the engine's pooled threads (thread-pool.ts): waits for a job, runs it, says
 * when it returned, and waits for the next. A job is thread mode's progress loop
 * (progress-thread.ts) or hybrid mode's fd watcher (fd-watcher-thread.ts); one thread may run
 * either, one at a time, so UCX and koffi are loaded once per thread, not once per worker.
 *
 * A job that throws is not caught: the error ends the thread, as it did when each job had a
 * thread of its own, and the pool never hands that thread out again. The port's listener keeps
 * this thread's event loop alive between jobs; the application side unrefs the thread, so an
 * idle one never holds its process.
 */
import { parentPort } from "../../ffi/thread.ts";
import { JOB_DONE, type JobKind } from "./thread-pool.ts";
import { runProgressThread, type ThreadData } from "./progress-thread.ts";
import { watchFd, type WatchData } from "./fd-watcher-thread.ts";

const port = parentPort!;

async function runJob(kind: JobKind, data: unknown): Promise<void> {
  if (kind === "progress") await runProgressThread(data as ThreadData);
  else watchFd(data as WatchData);
  port.postMessage(JOB_DONE);
}

port.on("message", (m: { kind: JobKind; data: unknown }) => void runJob(m.kind, m.data));
