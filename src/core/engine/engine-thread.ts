/**
 * Entry point of the engine's pooled threads (thread-pool.ts): waits for a job, runs it, says
 * when it returned, and waits for the next. A job is thread mode's progress loop
 * (progress-thread.ts) or hybrid mode's fd watcher (fd-watcher-thread.ts); one thread may run
 * either, one at a time, so UCX and koffi are loaded once per thread, not once per worker.
 *
 * After a progress job the thread collects its heap (why: below; during one, progress-thread.ts
 * collects at rest: heap-collector.ts).
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
import { heapCollector } from "./heap-collector.ts";

const port = parentPort!;
const collect = heapCollector();

async function runJob(kind: JobKind, data: unknown): Promise<void> {
  if (kind === "progress") await runProgressThread(data as ThreadData);
  else watchFd(data as WatchData);
}

port.on("message", (m: { kind: JobKind; data: unknown }) => {
  void runJob(m.kind, m.data).then(() => {
    port.postMessage(JOB_DONE);
    // Here the job's data is out of reach (runJob has returned). A progress job held its
    // worker's rings and bounce pool, SharedArrayBuffers of ~2.5 MiB that are freed only once
    // this thread's isolate lets go of them too, and an idle isolate collects seldom: thread-mode
    // cycles swung between 10 and 150 MiB of malloc in use (a sawtooth with V8's
    // external-memory limit) until this collection was added. 4-26 ms of this thread's time
    // (Bun, Node, Deno from sources), after the worker's close has been told it may return: a
    // next job waits for it, the close does not.
    if (m.kind === "progress") collect();
  });
});
