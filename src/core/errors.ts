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
  /** libcudart is there but no GPU is usable (no device, or the driver refused). */
  | "UCX_TS_CUDA_UNAVAILABLE"
  /** A CUDA runtime call failed; `statusText` holds its cudaGetErrorString text. */
  | "UCX_TS_CUDA_ERROR"
  | "UCX_TS_INVALID_ARGUMENT"
  | "UCX_TS_CLOSED"
  /** The peer sent bytes that are not the wire format expected (a malformed multi-buffer header). */
  | "UCX_TS_PROTOCOL_ERROR"
  /** A configured limit refused the operation (a multi-buffer batch larger than maxBytes). */
  | "UCX_TS_LIMIT_EXCEEDED"
  /** This build or this host cannot do it (device-memory frames without GPU support). */
  | "UCX_TS_UNSUPPORTED"
  /** Sends that had already resolved never reached the peer (reported by `ep.close()`). */
  | "UCX_TS_DATA_LOST"
  /** The hello's authentication failed: a wrong secret, or one side has none (hello/auth.ts). */
  | "UCX_TS_AUTH_FAILED"
  /**
   * A hello could not pair its endpoints in UCX's sequence: the application created an endpoint by
   * worker address to the same peer while the handshake ran (hello/pairing.ts).
   */
  | "UCX_TS_PAIRING_CROSSED";

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

/** `error` with the reasons UCX logged for it appended to its message (log-capture.ts); same code and status. */
export function withUcxReasons(error: UcxError, reasons: readonly string[]): UcxError {
  if (reasons.length === 0) return error;
  return new UcxError(error.code, `${error.message}; UCX said: ${reasons.join("; ")}`, {
    status: error.status,
    statusText: error.statusText,
    cause: error.cause,
  });
}

/** A typed error for a bad argument, thrown before anything reaches UCX. */
export function invalidArgument(message: string): UcxError {
  return new UcxError("UCX_TS_INVALID_ARGUMENT", message);
}

/** The error for an operation on a closing or closed worker or endpoint (UCX_TS_CLOSED). */
export function closedError(what: "worker" | "endpoint"): UcxError {
  return new UcxError("UCX_TS_CLOSED", `the ${what} is closed`);
}

/**
 * The error for a connection to `host:port` that could not be made, in plain words, with the
 * UCS status as its `code`: what UCX reports for a refused or unreachable peer names the status
 * only ("Destination is unreachable"), not which of the two happened nor where.
 */
export function connectionError(
  status: number,
  host: string,
  port: number,
  describe?: (status: number) => string | null,
  cause?: unknown,
): UcxError {
  const name = statusName(status);
  const text = describe?.(status) ?? undefined;
  const where = `${host}:${port}`;
  // Measured on UCX 1.13.1 (tcp sockcm): ECONNREFUSED comes back as UCS_ERR_NOT_CONNECTED; a
  // peer that accepts the TCP connection and then drops it as UCS_ERR_CONNECTION_RESET.
  const words =
    name === "UCS_ERR_NOT_CONNECTED"
      ? `nothing is listening on ${where} (connection refused)`
      : name === "UCS_ERR_UNREACHABLE"
        ? `host unreachable: no route to ${where}`
        : name === "UCS_ERR_CONNECTION_RESET" || name === "UCS_ERR_REJECTED"
          ? `${where} closed the connection before it was set up (reset or rejected)`
          : name === "UCS_ERR_ENDPOINT_TIMEOUT" || name === "UCS_ERR_TIMED_OUT"
            ? `no answer from ${where} (the connection timed out)`
            : `cannot connect to ${where}`;
  return new UcxError(name, `${words}: ${name}${text ? ` (${text})` : ""}`, { status, statusText: text, cause });
}

/** The request methods without a Promise (recvRequest, sendRequest) take host memory only. */
export function unsupportedDevice(operation: string): UcxError {
  return new UcxError("UCX_TS_UNSUPPORTED", `${operation} takes host memory: use the Promise method (recv, send) for a DeviceBuffer`);
}

/**
 * `promise`, with a rejection's stack retaken where the caller awaits it. A receive's error is
 * made when its completion arrives, in the engine's callback: its stack shows only the engine.
 * Retaken in a reaction to the rejection, the stack holds the caller's async frames, at
 * ~0.05 us per receive, where capturing a stack at each call cost 2-3 us (Node 20). V8 (Node,
 * Deno) keeps those frames in a `.then` handler; JavaScriptCore (Bun) only after an `await`,
 * which costs an async function's frame and Promise more (0.16 against 0.10 us a Promise on
 * Node; between two processes in polling mode an 8 B round trip 0.1-0.15 us, 2026-12-07).
 * Which one this runtime has is probed once, at load (`thenKeepsFrames`).
 */
export function withCallerStack<T>(promise: Promise<T>): Promise<T> {
  return thenKeepsFrames ? promise.then(undefined, retakeStack) : retakeAfterAwait(promise);
}

function retakeStack(e: unknown): never {
  if (e instanceof Error && typeof Error.captureStackTrace === "function") Error.captureStackTrace(e, retakeStack);
  throw e;
}

async function retakeAfterAwait<T>(promise: Promise<T>): Promise<T> {
  try {
    return await promise;
  } catch (e) {
    if (e instanceof Error && typeof Error.captureStackTrace === "function") Error.captureStackTrace(e, retakeAfterAwait);
    throw e;
  }
}

/**
 * Does a `.then` rejection handler see the awaiting function's frames here? Settled a few
 * microtasks after this module loads (before any worker can exist: Worker.create awaits);
 * until then, and where it does not, the `await` form is used.
 */
let thenKeepsFrames = false;
void (async () => {
  let fail: (e: Error) => void = () => {};
  const rejected = new Promise<never>((_, reject) => (fail = reject)).then(undefined, retakeStack);
  async function ucxTsStackProbe(): Promise<void> {
    await rejected;
  }
  const probed = ucxTsStackProbe().catch((e: unknown) => {
    thenKeepsFrames = new RegExp(`\\basync ${ucxTsStackProbe.name}\\b`).test(String((e as Error).stack));
  });
  fail(new Error("stack probe"));
  await probed;
})();
