/**
 * The one error type of ucx-ts. Every failure a user can meet is a `UcxError`: `code` is the
 * UCS status name when UCX reported the failure (`UCS_ERR_CANCELED`) and a `UCX_TS_*` name for
 * the library's own failures (UCX not installed, bad argument, closed object).
 */
import { UCS_STATUS, type UcsStatusName } from "../ffi/index.ts";

const NAME_BY_STATUS = new Map<number, string>(
  (Object.entries(UCS_STATUS) as [UcsStatusName, number][])
    // UCS_ERR_LAST and the FIRST_/LAST_ range markers are bounds, not statuses of their own.
    .filter(([name]) => !/_(FIRST|LAST)_/.test(name) && name !== "UCS_ERR_LAST")
    .map(([name, value]) => [value, name]),
);

/** The UCS name of a status: `UCS_ERR_NO_MEMORY`, or the range it falls in for link/endpoint failures. */
export function statusName(status: number): string {
  const exact = NAME_BY_STATUS.get(status);
  if (exact) return exact;
  if (status <= UCS_STATUS.UCS_ERR_FIRST_LINK_FAILURE && status >= UCS_STATUS.UCS_ERR_LAST_LINK_FAILURE) {
    return "UCS_ERR_LINK_FAILURE";
  }
  if (status <= UCS_STATUS.UCS_ERR_FIRST_ENDPOINT_FAILURE && status >= UCS_STATUS.UCS_ERR_LAST_ENDPOINT_FAILURE) {
    return "UCS_ERR_ENDPOINT_FAILURE";
  }
  return `UCS_STATUS_${status}`;
}

/** ucx-ts's own error codes, for failures that are not a UCS status. */
export type UcxTsErrorCode =
  | "UCX_TS_LIBRARY_NOT_FOUND"
  | "UCX_TS_CUDA_NOT_FOUND"
  | "UCX_TS_INVALID_ARGUMENT"
  | "UCX_TS_CLOSED"
  /** The peer sent bytes that are not the wire format expected (a malformed multi-buffer header). */
  | "UCX_TS_PROTOCOL_ERROR"
  /** A configured limit refused the operation (a multi-buffer batch larger than maxBytes). */
  | "UCX_TS_LIMIT_EXCEEDED"
  /** This build or this host cannot do it (device-memory frames without GPU support). */
  | "UCX_TS_UNSUPPORTED";

export interface UcxErrorOptions {
  readonly status?: number;
  readonly statusText?: string;
  readonly cause?: unknown;
  /** For UCS_ERR_MESSAGE_TRUNCATED: the size of the message that did not fit. */
  readonly incomingLength?: number;
}

export class UcxError extends Error {
  /** `UCS_ERR_*` name, or a `UCX_TS_*` code for ucx-ts's own failures. */
  readonly code: string;
  /** The numeric `ucs_status_t`, when UCX reported it. */
  readonly status: number | undefined;
  /** `ucs_status_string(status)`: UCX's own words for it. */
  readonly statusText: string | undefined;
  /** For UCS_ERR_MESSAGE_TRUNCATED: the size of the message that did not fit, when UCX tells. */
  readonly incomingLength: number | undefined;

  constructor(code: string, message: string, options: UcxErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = "UcxError";
    this.code = code;
    this.status = options.status;
    this.statusText = options.statusText;
    this.incomingLength = options.incomingLength;
  }

  /**
   * The error for a failed UCX call. `describe` turns a status into UCX's text; the core passes
   * `ucs_status_string` once the library is loaded.
   */
  static fromStatus(status: number, operation: string, describe?: (status: number) => string | null): UcxError {
    const name = statusName(status);
    const text = describe?.(status) ?? undefined;
    return new UcxError(name, `${operation} failed: ${name}${text ? ` (${text})` : ""}`, {
      status,
      statusText: text,
    });
  }
}

/** A typed error for a bad argument, thrown before anything reaches UCX. */
export function invalidArgument(message: string): UcxError {
  return new UcxError("UCX_TS_INVALID_ARGUMENT", message);
}
