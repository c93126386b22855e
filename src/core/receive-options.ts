/**
 * What a receive takes and gives back, shared by the worker-wide receives (worker.ts) and an
 * endpoint's own (endpoint.ts): kept below both so that neither imports the other for them.
 */
import { invalidArgument } from "./errors.ts";
import type { Tag } from "./tag.ts";

export interface RecvResult {
  /** The sender's tag (a Number when it fits in 53 bits, else a BigInt). */
  readonly tag: Tag;
  /** Bytes received. */
  readonly length: number;
}

export interface RecvOptions {
  /**
   * Cancels the receive, unless a message completed it first: its Promise rejects with a
   * `UcxError` named `AbortError`, code UCS_ERR_CANCELED, `cause` the signal's reason (a
   * `TimeoutError` DOMException for `AbortSignal.timeout()`).
   */
  readonly signal?: AbortSignal;
}

/** What a multi-buffer receive will accept from a peer's headers (see README, "Multi-buffer"). */
export interface MultiLimits {
  /** Most bytes, all frames together, one batch may make the receiver allocate (default 4 GiB). */
  readonly maxBytes?: number;
  /** Most headers in one batch's chain, 100 frames each (default 1,000: 100,000 frames). */
  readonly maxHeaders?: number;
}

export interface MultiRecvOptions extends RecvOptions, MultiLimits {
  /** Tag bits that must match (default: all). The batch's later messages use the sender's exact tag. */
  readonly mask?: Tag;
  /**
   * Frames the sender marked device memory: `"device"` puts them on the GPU (DeviceBuffers; needs
   * CUDA here), `"host"` (default) hands them over in host memory, as UCXX's fallback policy does.
   */
  readonly deviceFrames?: "host" | "device";
}

export const DEFAULT_MULTI_LIMITS: Required<MultiLimits> = { maxBytes: 4 * 2 ** 30, maxHeaders: 1000 };

/** `limits` checked, with what they leave out taken from `base`. */
export function checkLimits(limits: MultiLimits, base: Required<MultiLimits>): Required<MultiLimits> {
  const maxBytes = limits.maxBytes ?? base.maxBytes;
  const maxHeaders = limits.maxHeaders ?? base.maxHeaders;
  if (!Number.isSafeInteger(maxBytes) || maxBytes < 0) throw invalidArgument(`maxBytes must be a byte count, got ${maxBytes}`);
  if (!Number.isInteger(maxHeaders) || maxHeaders < 1 || maxHeaders > 0xffffffff) {
    throw invalidArgument(`maxHeaders must be an integer from 1 to 2^32-1, got ${maxHeaders}`);
  }
  return { maxBytes, maxHeaders };
}
