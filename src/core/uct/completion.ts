/**
 * `uct_completion_t` as a JavaScript object: a counter and a callback, in the seed's words
 * (003_2944ca982e48c11c.txt, "Operation handle allocation"): "The user should initialize the
 * struct with a counter and a callback. UCT decrements the counter in case of a completion, and
 * calls the callback whenever it reaches 0. The same pointer can be passed to multiple
 * communication functions."
 *
 * So: set `count` to the number of operations that will return UCS_INPROGRESS with this
 * completion (an operation that returns UCS_OK never touches it), then progress the worker.
 * Because UCT decrements it only during `progress()` on this same thread, the count may also be
 * set after the operations returned (to how many said UCS_INPROGRESS), before progressing.
 * The callback runs inside `UctWorker.progress()`, on the thread that owns the worker.
 *
 * The struct lives in JavaScript memory held by this object; a completion with a non-zero count
 * is kept in a table so that neither it nor its struct can be collected while UCT may write it.
 */
import { UCS_STATUS, type Pointer } from "../../ffi/index.ts";
import { UcxError } from "../errors.ts";
import { describeStatus, ucx } from "../library.ts";
import { nativeCallbacks } from "./native-callbacks.ts";

const COUNT = 8; // uct_completion_t.count (layout table)
const STATUS = 12; // uct_completion_t.status

export class UctCompletion {
  /** The `uct_completion_t` handed to UCT. */
  readonly address: Pointer;
  private readonly bytes: Uint8Array;
  private readonly view: DataView;
  private fired = 0;
  private waiters: Array<() => void> = [];
  /** Buffers of the operations in flight on this completion, held until it fires. */
  private held: unknown[] = [];

  /** @param onComplete called (during progress) each time the count reaches zero, with the status. */
  constructor(private readonly onComplete?: (status: number) => void) {
    const u = ucx();
    this.bytes = new Uint8Array(new ArrayBuffer(u.struct("uct_completion_t").layout.size));
    this.view = new DataView(this.bytes.buffer);
    this.address = u.addressOf(this.bytes);
    this.view.setBigUint64(0, BigInt(nativeCallbacks().completion), true); // .func
    this.view.setInt8(STATUS, UCS_STATUS.UCS_OK);
  }

  /** Operations still to complete before the callback fires. */
  get count(): number {
    return this.view.getInt32(COUNT, true);
  }

  set count(n: number) {
    if (!Number.isInteger(n) || n < 0) throw new UcxError("UCX_TS_INVALID_ARGUMENT", `completion count must be an integer >= 0, got ${n}`);
    this.view.setInt32(COUNT, n, true);
    if (n > 0) nativeCallbacks().completions.set(this.address, this);
    else nativeCallbacks().completions.delete(this.address);
  }

  /** UCS_OK, or the first error an operation reported (`uct_completion_update_status`). */
  get status(): number {
    return this.view.getInt8(STATUS);
  }

  /** How many times the count has reached zero. */
  get completions(): number {
    return this.fired;
  }

  /** Ready for a new round: status back to UCS_OK (the count is set by the caller). */
  reset(): this {
    this.view.setInt8(STATUS, UCS_STATUS.UCS_OK);
    return this;
  }

  /** Resolves the next time the count reaches zero (someone must progress the worker). */
  next(): Promise<number> {
    return new Promise((resolve) => this.waiters.push(() => resolve(this.status)));
  }

  /** The error for a failed completion status, for callers that want to throw it. */
  error(operation: string): UcxError | undefined {
    const s = this.status;
    return s === UCS_STATUS.UCS_OK ? undefined : UcxError.fromStatus(s, operation, describeStatus);
  }

  /** Keep `what` (an operation's buffers) referenced until the count next reaches zero. */
  holdUntilFired(what: unknown): void {
    this.held.push(what);
  }

  /** Called by the native completion callback. */
  fire(): void {
    nativeCallbacks().completions.delete(this.address);
    this.held = [];
    this.fired++;
    const waiters = this.waiters;
    this.waiters = [];
    this.onComplete?.(this.status);
    for (const w of waiters) w();
  }
}
