/**
 * Polling and blocking modes: the executor runs on the application thread. Submissions still go
 * through a ring and completions come back through one (plain ArrayBuffers here), so both modes
 * run the same record code as the threaded engine, minus the thread.
 */
import type { CompletionHandler, Engine, EngineOptions, ProgressMode, Submission } from "./engine.ts";
import { CompletionWriter } from "./completion-writer.ts";
import type { DirectTags } from "./direct-tags.ts";
import type { RequestHandles } from "./request-handles.ts";
import type { AmAtomics } from "./am-atomics.ts";
import { Executor, type CompletionSink } from "./executor.ts";
import type { Payload } from "./payload.ts";
import { COMPLETION_BYTES, SUBMISSION_BYTES, type Completion } from "./records.ts";
import { Ring } from "./ring.ts";
import { SubmissionWriter } from "./submission-writer.ts";

const UCS_OK = 0;

/**
 * Move `buffer`'s memory into a new ArrayBuffer and detach `buffer` (no copy): the application's
 * views of it read nothing from then on. `ArrayBuffer.prototype.transfer` where the runtime has it
 * (Deno, Bun, Node 21+), else structuredClone's transfer (Node 20). Per 64 KiB buffer, measured
 * 2026-11-26: Deno 0.57 us against 12.4 us for structuredClone, Bun 1.9 against 2.9, Node 20's
 * structuredClone 3.0: one AM release each.
 */
const moveBuffer: (buffer: ArrayBuffer) => ArrayBuffer =
  typeof (ArrayBuffer.prototype as { transfer?: unknown }).transfer === "function"
    ? (buffer) => (buffer as unknown as { transfer(): ArrayBuffer }).transfer()
    : (buffer) => structuredClone(buffer, { transfer: [buffer] });

export class InlineEngine implements Engine, CompletionSink {
  private readonly submissions: Ring;
  private readonly completions: Ring;
  private readonly writer: SubmissionWriter;
  private readonly completionWriter: CompletionWriter;
  private readonly executor: Executor;
  private stopped = false;
  private readonly payloads = new Map<number, Payload>();

  constructor(
    readonly mode: Exclude<ProgressMode, "thread" | "hybrid">,
    options: EngineOptions,
    private readonly onCompletion: CompletionHandler,
  ) {
    this.submissions = Ring.create(options.ringSize, SUBMISSION_BYTES, false);
    this.completions = Ring.create(options.ringSize * 2, COMPLETION_BYTES, false);
    this.writer = new SubmissionWriter(this.submissions);
    this.completionWriter = new CompletionWriter(this.completions);
    this.executor = new Executor(
      { ...options, direct: options.directTags !== false },
      this,
      (p) => {
        if (!Array.isArray(p)) this.payloads.set(p.id, p);
        else for (const one of p) this.payloads.set(one.id, one);
      },
    );
  }

  /** Tag sends and receives straight to UCX (direct-tags.ts): the executor runs on this thread. */
  get direct(): DirectTags | undefined {
    return this.executor.direct;
  }

  get requestHandles(): RequestHandles {
    return this.executor.handles;
  }

  get amAtomics(): AmAtomics | undefined {
    return this.executor.amAtomics;
  }

  /**
   * May a direct call go to UCX now? Only after every record already in the ring: they are
   * executed here first, so a direct send or receive never overtakes an earlier one (UCX's
   * per-sender order and its receive matching in posting order). Not while the ring is being
   * consumed (a completion handler's call): the caller then takes the ring's path.
   */
  directOpen(): boolean {
    if (this.stopped) return false;
    if (this.submissions.size === 0 && this.writer.backlog === 0) return true;
    this.executeQueued();
    return this.submissions.size === 0 && this.writer.backlog === 0;
  }

  takePayload(id: number): Payload | undefined {
    const p = this.payloads.get(id);
    this.payloads.delete(id);
    return p;
  }

  reuseActiveMessageBuffer(buffer: ArrayBuffer): void {
    if (this.stopped) return;
    // Same thread: the memory moves to a new ArrayBuffer and the old one is detached.
    this.executor.reuseActiveMessageBuffer(moveBuffer(buffer));
  }

  get backlog(): number {
    return this.writer.backlog;
  }

  /** ucp_worker_arm: UCS_OK when UCX has nothing pending and its event fd may be waited on. */
  arm(): number {
    return this.executor.arm();
  }

  /** UCX's event fd for this worker (hybrid mode's watcher polls it). */
  eventFd(): number {
    return this.executor.eventFd();
  }

  submit(s: Submission, now = false): boolean {
    this.writer.write(s);
    // Execute the ring's records (this one and any before it, in order) without progressing
    // UCX or delivering completions: no user code runs inside submit. Nested in a completion
    // handler, the ring is busy and the record waits for the next progress().
    if (!now || this.stopped) return false;
    this.inPlaceId = s.request;
    this.inPlaceDone = false;
    try {
      this.submissions.consume(this.executeRecord);
    } finally {
      this.inPlaceId = 0;
    }
    return this.inPlaceDone;
  }

  /** The request submit() executes now (0: none), and whether it completed in place. */
  private inPlaceId = 0;
  private inPlaceDone = false;
  inPlaceValue = 0;

  // The executor's completions (CompletionSink): into the ring, but for the request being
  // submitted now when it succeeds in place with nothing before it to deliver. A send that UCX
  // finished inside its posting call then settles in submit() itself: no completion record, no
  // round of progress and no microtask turn of the driver before the caller's `await` goes on
  // (an 8 B send's Promise, two processes, polling: see docs/benchmarks.md, `--profile`).

  write(c: Completion): void {
    this.completionWriter.write(c);
  }

  writeRequest(id: number, status: number, value: number, tagLo: number, tagHi: number): void {
    if (id === this.inPlaceId && status === UCS_OK && this.completions.size === 0 && this.completionWriter.backlog === 0) {
      this.inPlaceDone = true;
      this.inPlaceValue = value;
      return;
    }
    this.completionWriter.writeRequest(id, status, value, tagLo, tagHi);
  }

  /** The ring handlers, made once: a closure made per call was garbage on every idle round. */
  private readonly executeRecord = (w: number): void => this.executor.execute(this.submissions, w);
  private readonly deliverRecord = (w: number): void => this.onCompletion(this.completions, w);

  /** Work done: records executed, UCX events, and completions delivered (settled Promises). */
  progress(): number {
    if (this.stopped) return 0;
    const n = this.executeQueued() + this.executor.progress();
    // Deliveries count: a completion written before this round (a send done inside its
    // submit) is delivered here with no UCX event, and its Promise's reactions must get a turn.
    return n + this.deliver();
  }

  /** The submissions and deliveries of progress(), without UCX's progress (Engine.settle). */
  settle(): number {
    if (this.stopped) return 0;
    return this.executeQueued() + this.deliver();
  }

  /** Feed the executor until the backlog is empty: a tiny ring must not stall a long queue. */
  private executeQueued(): number {
    let n = 0;
    do {
      n += this.submissions.consume(this.executeRecord);
    } while (this.writer.flush() > 0);
    return n;
  }

  private deliver(): number {
    // Loop while records keep coming (the backlog refills the ring). A nested call from inside
    // a completion handler consumes nothing (the ring is busy) and returns: the outer loop
    // delivers the rest.
    let delivered = 0;
    for (let d; (d = this.completions.consume(this.deliverRecord)) > 0; delivered += d) this.completionWriter.flush();
    this.completionWriter.flush();
    return delivered;
  }

  wait(timeoutMs = -1): number {
    const deadline = timeoutMs < 0 ? Infinity : performance.now() + timeoutMs;
    while (!this.stopped) {
      const n = this.progress();
      if (n > 0 || this.submissions.size > 0 || this.writer.backlog > 0) return n;
      // Sleep only when UCX says nothing is pending (arm: UCS_OK); UCS_ERR_BUSY means events
      // wait to be progressed, so progress and try again.
      if (this.executor.arm() === UCS_OK) {
        const left = deadline === Infinity ? -1 : Math.max(0, Math.ceil(deadline - performance.now()));
        this.executor.waitFd(left);
        return this.progress();
      }
      if (performance.now() >= deadline) return 0;
    }
    return 0;
  }

  setActive(): void {
    // Nothing runs by itself in these modes: the application drives progress.
  }

  async stop(): Promise<void> {
    if (this.stopped) return;
    this.progress(); // submit what is queued, so it is cancelled rather than lost
    this.executor.destroy();
    this.deliver();
    this.stopped = true;
  }
}
