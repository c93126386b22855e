/**
 * One operation's request without a Promise of its own, as UCXX's `Request` (`isCompleted()`,
 * `checkError()`) and UCX's C requests are: for code that drives progress itself and wants the
 * completion the moment `worker.progress()` (polling) or `worker.wait()` (blocking) delivers it,
 * with no Promise to settle and no microtask to resume it:
 *
 *   const r = ep.recvRequest(into, 2);
 *   ep.sendRequest(out, 1);
 *   while (!r.done) worker.progress();
 *   const { length } = r.result();
 *
 * A Promise costs a round trip more than the UCX calls of a small message do (issue 21's Promise
 * floor: bench/ffi-floor-peer.ts), so this is the latency path; `promise` gives one on demand.
 * In thread and hybrid modes `done` turns true when the engine delivers the completion, on the
 * event loop: await `promise` there.
 */
import { UcxError } from "./errors.ts";

/** What a request's `cancel()` asks (the worker's request path). */
export interface RequestCanceller {
  cancel(id: number): void;
}

export class UcxRequest<T> {
  #done = false;
  #value: T | undefined = undefined;
  #error: UcxError | undefined = undefined;
  #promise: Promise<T> | undefined = undefined;
  #resolve: ((value: T) => void) | undefined = undefined;
  #reject: ((reason: unknown) => void) | undefined = undefined;
  #canceller: RequestCanceller | undefined;
  #id = 0;

  /** @internal Made by the worker and its endpoints (recvRequest, sendRequest). */
  constructor(canceller?: RequestCanceller) {
    this.#canceller = canceller;
  }

  /** @internal A request that failed before it reached UCX (a closed endpoint or worker). */
  static failed<T>(error: unknown): UcxRequest<T> {
    const r = new UcxRequest<T>();
    r.fail(error);
    return r;
  }

  /** Has it completed, successfully or not? (Its buffer is UCX's until then.) */
  get done(): boolean {
    return this.#done;
  }

  /** Why it failed, once it has; undefined while in flight or after a success. */
  get error(): UcxError | undefined {
    return this.#error;
  }

  /**
   * Its result: what the matching Promise method resolves with (a receive's `{ tag, length }`).
   * Throws its error if it failed, and UCS_INPROGRESS while it is in flight.
   */
  result(): T {
    if (this.#error !== undefined) throw this.#error;
    if (!this.#done) throw new UcxError("UCS_INPROGRESS", "the request has not completed yet: progress the worker until request.done", { status: 1 });
    return this.#value as T;
  }

  /**
   * A Promise of its result, made on first use (in polling mode, await it through
   * `worker.settled()`, which drives progress meanwhile, as for any other Promise).
   */
  get promise(): Promise<T> {
    if (this.#promise === undefined) {
      if (this.#error !== undefined) this.#promise = Promise.reject(this.#error);
      else if (this.#done) this.#promise = Promise.resolve(this.#value as T);
      else
        this.#promise = new Promise<T>((resolve, reject) => {
          this.#resolve = resolve;
          this.#reject = reject;
        });
    }
    return this.#promise;
  }

  /**
   * Ask UCX to cancel it (a receive): it then completes with UCS_ERR_CANCELED, unless its
   * message won the race (then it succeeds: nothing is lost). A send cannot be cancelled.
   */
  cancel(): void {
    if (!this.#done && this.#id !== 0) this.#canceller?.cancel(this.#id);
  }

  /** @internal The id its cancel names (set once it is submitted). */
  attach(id: number): void {
    this.#id = id;
  }

  /** @internal It completed with `value`. */
  succeed(value: T): void {
    if (this.#done) return;
    this.#done = true;
    this.#value = value;
    this.#resolve?.(value);
  }

  /**
   * @internal The worker's close failed it: a Promise made for it that nobody awaits must not
   * end the process as an unhandled rejection (awaited, it still throws).
   */
  quiet(): void {
    this.#promise?.catch(() => {});
  }

  /** @internal It failed with `error` (a UcxError; anything else is wrapped). */
  fail(error: unknown): void {
    if (this.#done) return;
    this.#done = true;
    this.#error = error instanceof UcxError ? error : new UcxError("UCX_TS_CLOSED", String((error as Error)?.message ?? error), { cause: error });
    this.#reject?.(this.#error);
  }
}
