/**
 * Thread mode with takeover: what the progress thread and the application thread share so that
 * either of them may drive the one UCX worker (UCS_THREAD_MODE_SERIALIZED), one at a time.
 *
 * - The token says who may call UCX now:
 *     THREAD  the progress thread (its usual loop; the application waits for completion records);
 *     LENT    lent to the application thread, which is not inside UCX at this moment: it takes
 *             it (LENT -> APP) for each of its rounds, and the progress thread, parked in
 *             Atomics.waitAsync, takes it back (LENT -> THREAD) if the rounds stop coming;
 *     APP     the application thread is inside one of its rounds.
 *   Every hand-over is an Atomics operation, so whatever one holder wrote (the tables below,
 *   the ring's head) is seen by the next.
 * - Fast requests (tag and stream sends and receives) are kept in a table here, not in one
 *   thread's memory, and carry no completion callback: whichever thread holds the token checks
 *   them (ucp_request_check_status) and reports those done. A C callback made on one thread and
 *   fired by UCX on the other blocks on (koffi, Deno) or kills (Bun) the process; see
 *   Backend.callback.
 * - Endpoint and memory handles by id, direct-mapped: the application thread looks up the UCX
 *   handle of the endpoint (and the memory handle of a registered buffer) a record names; a
 *   miss only means the progress thread does that record.
 */

export const Token = { THREAD: 0, LENT: 1, APP: 2 } as const;

/** Header words (Int32). */
export const TOKEN = 0;
/** Set by the application thread: it wants the token (the thread lends it when it can). */
export const WANT_APP = 1;
/** Set by the progress thread: it needs the token back (a record only it can execute, an endpoint error). */
export const WANT_THREAD = 2;
/** Counted up by the application thread at each of its rounds: the thread takes the token back when it stops. */
export const HEARTBEAT = 3;
/** Fast requests in the table. */
const COUNT = 4;
/** Counted by the progress thread: times it lent the token, and times it took it back unasked. */
export const LENDS = 5;
export const TAKEN_BACK = 6;
const HEADER_WORDS = 16;

/** Kinds of fast request. */
export const FastKind = { Send: 1, TagRecv: 2, StreamRecv: 3 } as const;
export type FastKind = (typeof FastKind)[keyof typeof FastKind];

/** Direct-mapped entries (id, handle, failed status) for endpoints and for registered memory. */
const HANDLE_SLOTS = 256;
/** Float64 words per request record: request pointer, id, kind, endpoint id. */
const REQUEST_WORDS = 4;

export class TakeoverState {
  readonly header: Int32Array;
  /** Endpoint slots: f64 [id, handle, failed status] each. */
  private readonly endpoints: Float64Array;
  /** Memory slots: f64 [id, memh, unused] each. */
  private readonly memories: Float64Array;
  /** Request records, dense in [0, count): request, id, kind, endpoint. */
  private readonly requests: Float64Array;
  readonly capacity: number;

  static create(capacity: number): TakeoverState {
    const bytes = HEADER_WORDS * 4 + 2 * HANDLE_SLOTS * 3 * 8 + capacity * REQUEST_WORDS * 8;
    return new TakeoverState(new SharedArrayBuffer(bytes));
  }

  constructor(readonly buffer: SharedArrayBuffer) {
    this.header = new Int32Array(buffer, 0, HEADER_WORDS);
    let at = HEADER_WORDS * 4;
    this.endpoints = new Float64Array(buffer, at, HANDLE_SLOTS * 3);
    at += HANDLE_SLOTS * 3 * 8;
    this.memories = new Float64Array(buffer, at, HANDLE_SLOTS * 3);
    at += HANDLE_SLOTS * 3 * 8;
    this.requests = new Float64Array(buffer, at);
    this.capacity = this.requests.length / REQUEST_WORDS;
  }

  // --- the token --------------------------------------------------------------------------

  get token(): number {
    return Atomics.load(this.header, TOKEN);
  }

  /** LENT -> to; true when this caller made the change. */
  takeLent(to: number): boolean {
    return Atomics.compareExchange(this.header, TOKEN, Token.LENT, to) === Token.LENT;
  }

  /** Set the token, and wake a progress thread parked on it. */
  setToken(value: number): void {
    Atomics.store(this.header, TOKEN, value);
    Atomics.notify(this.header, TOKEN);
  }

  // --- endpoints and memory (written by the progress thread only) ---------------------------

  setEndpoint(id: number, handle: number): void {
    setSlot(this.endpoints, id, handle);
  }

  /** The endpoint failed: the application thread leaves its records to the progress thread. */
  failEndpoint(id: number, status: number): void {
    const i = (id % HANDLE_SLOTS) * 3;
    if (this.endpoints[i] === id) this.endpoints[i + 2] = status;
  }

  dropEndpoint(id: number): void {
    dropSlot(this.endpoints, id);
  }

  /** The UCX handle of endpoint `id`, or 0 (unknown here, or failed). */
  endpoint(id: number): number {
    const i = (id % HANDLE_SLOTS) * 3;
    return this.endpoints[i] === id && this.endpoints[i + 2] === 0 ? this.endpoints[i + 1]! : 0;
  }

  setMemory(id: number, memh: number): void {
    setSlot(this.memories, id, memh);
  }

  dropMemory(id: number): void {
    dropSlot(this.memories, id);
  }

  /** The memory handle of registration `id`, or 0 (unknown here). */
  memory(id: number): number {
    const i = (id % HANDLE_SLOTS) * 3;
    return this.memories[i] === id ? this.memories[i + 1]! : 0;
  }

  // --- fast requests (touched only by the token's holder) ---------------------------------

  get count(): number {
    return this.header[COUNT]!;
  }

  /** Add a request; false when the table is full (the caller keeps it itself). */
  add(request: number, id: number, kind: FastKind, endpoint: number): boolean {
    const n = this.header[COUNT]!;
    if (n >= this.capacity) return false;
    const r = this.requests;
    const at = n * REQUEST_WORDS;
    r[at] = request;
    r[at + 1] = id;
    r[at + 2] = kind;
    r[at + 3] = endpoint;
    this.header[COUNT] = n + 1;
    return true;
  }

  requestAt(i: number): number {
    return this.requests[i * REQUEST_WORDS]!;
  }
  idAt(i: number): number {
    return this.requests[i * REQUEST_WORDS + 1]!;
  }
  kindAt(i: number): FastKind {
    return this.requests[i * REQUEST_WORDS + 2]! as FastKind;
  }
  endpointAt(i: number): number {
    return this.requests[i * REQUEST_WORDS + 3]!;
  }

  /** Remove record `i`: the last one takes its place (order does not matter). */
  removeAt(i: number): void {
    const n = this.header[COUNT]! - 1;
    if (i !== n) this.requests.copyWithin(i * REQUEST_WORDS, n * REQUEST_WORDS, (n + 1) * REQUEST_WORDS);
    this.header[COUNT] = n;
  }

  /** The index of request `id`, or -1. */
  indexOf(id: number): number {
    const r = this.requests;
    for (let i = 0, n = this.header[COUNT]!; i < n; i++) if (r[i * REQUEST_WORDS + 1] === id) return i;
    return -1;
  }
}

function setSlot(slots: Float64Array, id: number, handle: number): void {
  const i = (id % HANDLE_SLOTS) * 3;
  // A newer id takes the slot; the older one becomes a miss (its records go to the thread).
  slots[i] = id;
  slots[i + 1] = handle;
  slots[i + 2] = 0;
}

function dropSlot(slots: Float64Array, id: number): void {
  const i = (id % HANDLE_SLOTS) * 3;
  if (slots[i] === id) {
    slots[i] = 0;
    slots[i + 1] = 0;
    slots[i + 2] = 0;
  }
}
