/**
 * What an aborted operation rejects with. Every failure of ucx-ts is a `UcxError` (README,
 * "Errors"), and an abort is UCX's cancel: so a `UcxError` named `AbortError` (the name DOM and
 * Node give aborts), `code` UCS_ERR_CANCELED, and the signal's reason as `cause`: an
 * `AbortSignal.timeout()` shows there as a `TimeoutError` DOMException, `controller.abort(x)` as x.
 * The same for every receive that takes a signal (recv, recvMulti, amRecv, streamRecv, probe).
 */
import { UcxError } from "./errors.ts";

const UCS_ERR_CANCELED = -16;

export function abortError(signal: AbortSignal, operation: string): UcxError {
  const reason: unknown = signal.reason;
  const why = reason instanceof Error ? `${reason.name}: ${reason.message}` : reason === undefined ? "" : String(reason);
  const error = new UcxError("UCS_ERR_CANCELED", `${operation} aborted${why ? ` (${why})` : ""}`, {
    status: UCS_ERR_CANCELED,
    statusText: "Request canceled",
    cause: reason,
  });
  error.name = "AbortError";
  return error;
}
