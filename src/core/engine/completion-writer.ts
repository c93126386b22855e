/**
 * The executor's side of the completion ring: writes each completion as a record, keeping any
 * that do not fit (the application thread is slow to drain) in order until there is space.
 */
import type { Completion } from "./records.ts";
import { CompletionKind, DONE } from "./records.ts";
import type { Ring } from "./ring.ts";
import { enter, leave, Phase, PROFILING } from "../profile.ts";

export class CompletionWriter {
  private readonly queue: Completion[] = [];
  /** Records written since the last `takeWritten()`: the thread notifies when it is non-zero. */
  private written = 0;

  constructor(private readonly ring: Ring) {}

  write(c: Completion): void {
    if (PROFILING) enter(Phase.CompletionRecord);
    if (this.queue.length > 0 || !this.tryWrite(c)) this.queue.push({ ...c });
    if (PROFILING) leave();
  }

  /**
   * A request's completion, from its fields: no Completion object unless it must wait in the
   * queue (one per operation was most of the executor's garbage on the small-message path).
   */
  writeRequest(id: number, status: number, value: number, tagLo: number, tagHi: number): void {
    if (PROFILING) enter(Phase.CompletionRecord);
    if (this.queue.length > 0 || !this.tryWriteFields(CompletionKind.Request, id, status, value, tagLo, tagHi, 0)) {
      this.queue.push({ kind: CompletionKind.Request, id, status, value, tagLo, tagHi, aux: 0 });
    }
    if (PROFILING) leave();
  }

  flush(): void {
    while (this.queue.length > 0 && this.tryWrite(this.queue[0]!)) this.queue.shift();
  }

  get backlog(): number {
    return this.queue.length;
  }

  takeWritten(): number {
    const n = this.written;
    this.written = 0;
    return n;
  }

  private tryWrite(c: Completion): boolean {
    return this.tryWriteFields(c.kind, c.id, c.status, c.value, c.tagLo, c.tagHi, c.aux);
  }

  private tryWriteFields(kind: number, id: number, status: number, value: number, tagLo: number, tagHi: number, aux: number): boolean {
    const ring = this.ring;
    const w = ring.reserve();
    if (w < 0) return false;
    ring.f64[(w >> 1) + DONE.value] = value;
    ring.u32[w + DONE.kind] = kind;
    ring.u32[w + DONE.id] = id;
    ring.i32[w + DONE.status] = status;
    ring.u32[w + DONE.tagLo] = tagLo;
    ring.u32[w + DONE.tagHi] = tagHi;
    ring.u32[w + DONE.aux] = aux;
    ring.publish();
    this.written++;
    return true;
  }
}
