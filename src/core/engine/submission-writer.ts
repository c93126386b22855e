/**
 * Writing submissions into the ring, with a FIFO backlog for when the ring is full: records
 * wait in order for free slots (back-pressure), and nothing overtakes them.
 */
import type { Submission } from "./engine.ts";
import { INLINE_OFFSET, SUB } from "./records.ts";
import type { Ring } from "./ring.ts";
import { enter, leave, Phase, PROFILING } from "../profile.ts";

export class SubmissionWriter {
  private readonly queue: Submission[] = [];

  constructor(private readonly ring: Ring) {}

  get backlog(): number {
    return this.queue.length;
  }

  /** Write `s`, or queue it behind earlier records when the ring is full. Returns true if written. */
  write(s: Submission): boolean {
    if (this.queue.length > 0 || !this.tryWrite(s)) {
      // A copy: `s` may be the draft the next operation fills (draftSubmission), and an inline
      // send has already resolved, so the caller may reuse its buffer.
      this.queue.push({ ...s, inline: s.inline?.slice() });
      return false;
    }
    return true;
  }

  /** Move queued records into freed slots. Returns how many moved. */
  flush(): number {
    let n = 0;
    while (this.queue.length > 0 && this.tryWrite(this.queue[0]!)) {
      this.queue.shift();
      n++;
    }
    return n;
  }

  private tryWrite(s: Submission): boolean {
    if (!PROFILING) return this.writeRecord(s);
    enter(Phase.Record);
    try {
      return this.writeRecord(s);
    } finally {
      leave();
    }
  }

  private writeRecord(s: Submission): boolean {
    const ring = this.ring;
    const w = ring.reserve();
    if (w < 0) return false;
    const u32 = ring.u32;
    const f = w >> 1;
    ring.f64[f + SUB.address] = s.address;
    ring.f64[f + SUB.length] = s.length;
    ring.f64[f + SUB.handle] = s.handle;
    u32[w + SUB.op] = s.op;
    u32[w + SUB.request] = s.request;
    u32[w + SUB.target] = s.target;
    u32[w + SUB.flags] = s.flags;
    u32[w + SUB.tagLo] = s.tagLo;
    u32[w + SUB.tagHi] = s.tagHi;
    u32[w + SUB.maskLo] = s.maskLo;
    u32[w + SUB.maskHi] = s.maskHi;
    if (s.inline) ring.u8.set(s.inline, w * 4 + INLINE_OFFSET);
    ring.publish();
    return true;
  }
}
