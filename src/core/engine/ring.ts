/**
 * A single-producer, single-consumer ring of fixed-size records in a (Shared)ArrayBuffer: the
 * submission ring (application thread -> progress thread) and the completion ring (back).
 *
 * Positions are free-running int32 counters (`tail - head` is the fill level, wrap-safe in
 * int32 arithmetic); the slot of position p is `p & (capacity - 1)`. The producer writes a
 * record then publishes it with an atomic store of `tail`; the consumer reads then frees the
 * slot with an atomic store of `head`. A full ring refuses the write: callers queue and retry
 * (back-pressure), nothing is dropped or overwritten.
 *
 * Header words (Int32, before the slots) also carry the wake-up flags of the progress engine.
 */

export const HEADER_BYTES = 64;
const HEAD = 0;
const TAIL = 1;
const CAPACITY = 2;
const SLOT_BYTES = 3;
/** Set by the consumer thread before it sleeps in `ucp_worker_wait` (submission ring). */
export const CONSUMER_SLEEPING = 4;
/** Set by the producer while it waits for free slots (it waits on HEAD). */
export const PRODUCER_WAITING = 5;
/** Set by the application thread while it is parked waiting for completions (completion ring). */
export const APP_WAITING = 6;
/** Set when the process is exiting without the worker closed: the thread returns at once. */
export const PROCESS_EXITING = 7;
/** Set by the application thread while it awaits something (submission ring; thread-spin-policy.ts). */
export const APP_ACTIVE = 8;
/** Application-thread calls of `ucp_worker_signal` under way (submission ring; see WORKER_GOING). */
export const SIGNALERS = 9;
/**
 * Set by the progress thread before it destroys the worker: no new `ucp_worker_signal` may
 * start, and the thread waits for SIGNALERS to reach 0 before destroying.
 */
export const WORKER_GOING = 10;

export class Ring {
  readonly header: Int32Array;
  readonly f64: Float64Array;
  readonly u32: Uint32Array;
  readonly i32: Int32Array;
  /** The slots as bytes (inline payloads). */
  readonly u8: Uint8Array;
  readonly capacity: number;
  /** Slot size in 32-bit words. */
  readonly slotWords: number;
  private readonly mask: number;
  /**
   * The buffer is shared with another thread: positions are read and written with Atomics. A
   * ring of one thread (polling, blocking and hybrid modes, takeover's own) uses plain accesses:
   * an Atomics.load or store of an ArrayBuffer's Int32Array cost 20-28 ns here (Node 20, Bun;
   * 2026-11-26), against 1-4 ns plain, and one send+receive made about 16 of them.
   */
  private readonly atomic: boolean;
  /** Set while `consume` runs: a handler that progresses again must not re-read the same records. */
  private consuming = false;

  /** Allocate a ring of `capacity` (rounded up to a power of two) slots of `slotBytes`. */
  static create(capacity: number, slotBytes: number, shared: boolean): Ring {
    let cap = 2;
    while (cap < capacity) cap *= 2;
    const size = HEADER_BYTES + cap * slotBytes;
    const buffer = shared ? new SharedArrayBuffer(size) : new ArrayBuffer(size);
    const header = new Int32Array(buffer, 0, HEADER_BYTES / 4);
    header[CAPACITY] = cap;
    header[SLOT_BYTES] = slotBytes;
    return new Ring(buffer);
  }

  /** Attach to a ring made by `create` (on the other thread). */
  constructor(readonly buffer: ArrayBufferLike) {
    this.header = new Int32Array(buffer, 0, HEADER_BYTES / 4);
    this.capacity = this.header[CAPACITY]!;
    const slotBytes = this.header[SLOT_BYTES]!;
    if (slotBytes % 8 !== 0) throw new RangeError("ring slot size must be a multiple of 8 bytes");
    this.slotWords = slotBytes / 4;
    this.mask = this.capacity - 1;
    this.atomic = typeof SharedArrayBuffer !== "undefined" && buffer instanceof SharedArrayBuffer;
    const words = (this.capacity * slotBytes) / 4;
    this.f64 = new Float64Array(buffer, HEADER_BYTES, words / 2);
    this.u32 = new Uint32Array(buffer, HEADER_BYTES, words);
    this.i32 = new Int32Array(buffer, HEADER_BYTES, words);
    this.u8 = new Uint8Array(buffer, HEADER_BYTES, words * 4);
  }

  /** Records waiting to be consumed. */
  get size(): number {
    return (this.load(TAIL) - this.load(HEAD)) | 0;
  }

  /** Header word `i`, with an atomic read where another thread writes it. */
  private load(i: number): number {
    return this.atomic ? Atomics.load(this.header, i) : this.header[i]!;
  }

  private store(i: number, value: number): void {
    if (this.atomic) Atomics.store(this.header, i, value);
    else this.header[i] = value;
  }

  /**
   * Producer: the 32-bit word index of the next free slot, or -1 when the ring is full. Fill
   * the slot, then `publish()`.
   */
  reserve(): number {
    const tail = this.header[TAIL]!; // only the producer writes tail
    if (((tail - this.load(HEAD)) | 0) >= this.capacity) return -1;
    return (tail & this.mask) * this.slotWords;
  }

  /** Producer: make the reserved slot visible to the consumer. */
  publish(): void {
    this.store(TAIL, (this.header[TAIL]! + 1) | 0);
  }

  /**
   * Consumer: call `handle(wordIndex)` for every published record, then free their slots.
   * Returns how many were consumed.
   */
  consume(handle: (word: number) => void): number {
    return this.drain(handle);
  }

  /**
   * Consumer: like `consume`, but stops at the first record `handle` refuses (returns false);
   * that record stays at the head for the next consumer (thread mode with takeover: the
   * application thread executes the records it can and leaves the rest to the progress thread).
   */
  consumeWhile(handle: (word: number) => boolean): number {
    return this.drain(handle);
  }

  private drain(handle: (word: number) => boolean | void): number {
    // A handler may call back into progress (a completion settles a Promise whose code polls
    // the worker): the nested call returns at once and this loop goes on with the next record.
    if (this.consuming) return 0;
    this.consuming = true;
    let head = this.header[HEAD]!; // only the consumer writes head
    let n = 0;
    try {
      while (head !== this.load(TAIL)) {
        let taken = true;
        try {
          taken = handle((head & this.mask) * this.slotWords) !== false;
        } finally {
          // Free the slot even if the handler threw, so the record is never handled twice.
          if (taken) {
            head = (head + 1) | 0;
            n++;
            this.store(HEAD, head);
          }
        }
        if (!taken) break;
      }
    } finally {
      this.consuming = false;
    }
    if (n > 0 && this.atomic && Atomics.load(this.header, PRODUCER_WAITING) !== 0) Atomics.notify(this.header, HEAD);
    return n;
  }

  /** The head position, for `Atomics.waitAsync` on free space. */
  get headPosition(): number {
    return this.load(HEAD);
  }

  /** The tail position, for `Atomics.waitAsync` on new records. */
  get tailPosition(): number {
    return this.load(TAIL);
  }

  static readonly HEAD = HEAD;
  static readonly TAIL = TAIL;
}
