/**
 * What an active message carries besides its data, from `ep.amSend`'s options: UCXX's AM header
 * (header.ts) wrapping the user header on AM id 0, or, with `amId`, the user header as UCX's own.
 */
import type { AmSendProtocol } from "./send-protocol.ts";
import { asBytes, type BufferLike } from "../buffers.ts";
import { invalidArgument } from "../errors.ts";
import { encodeAmHeader, RESERVED_OWNER } from "./header.ts";

export interface AmSendOptions {
  /** The user header (UCXX's userHeader), delivered with the message. */
  readonly header?: BufferLike;
  /** Address a UCXX receiver callback on the peer (`onAmCallback(owner, id)`). */
  readonly callback?: { readonly owner: string; readonly id: number | bigint };
  /**
   * Send as a plain UCX active message with this id, `header` as UCX's header, instead of
   * UCXX's format. 0 is UCXX's id: a raw message there is what UCX's own examples send.
   */
  readonly amId?: number;
  /**
   * UCX's protocol for the data (send-protocol.ts): "auto" (the default) eager up to 64 KiB
   * (UCX_TS_AM_EAGER_MAX), UCX's choice above; "eager" or "rndv" always; "ucx" UCX's choice by
   * its own thresholds (UCX_RNDV_THRESH) at every size. The receiver gets the message the same way.
   */
  readonly protocol?: AmSendProtocol;
}

/**
 * The plain header of host and CUDA data (no callback, no user header), encoded once: UCX only
 * reads a send's header, so every such send can share these bytes, which also spares a fresh
 * 14-byte array per message (and moving it off the JavaScript heap for its address).
 */
const PLAIN_HEADERS = new Map<number, Uint8Array>();

/** No user header: one empty array for every send without one (UCX only reads it). */
const NO_HEADER = new Uint8Array(0);

/** The AM id and the header bytes UCX is given for a send with `options` (checked). */
/** `memoryType` goes in UCXX's header (0 host, 1 CUDA). */
export function amSendHeader(options: AmSendOptions, memoryType = 0): { amId: number; header: Uint8Array } {
  const user = options.header === undefined ? NO_HEADER : asBytes(options.header, "header");
  if (options.amId !== undefined) {
    if (!Number.isInteger(options.amId) || options.amId < 0 || options.amId > 0xffff) {
      throw invalidArgument(`amId must be an integer from 0 to 65535, got ${options.amId}`);
    }
    if (options.callback) throw invalidArgument("amSend: a receiver callback goes with UCXX's AM id 0, not with amId");
    return { amId: options.amId, header: user };
  }
  const cb = options.callback;
  if (!cb && user.length === 0 && (memoryType === 0 || memoryType === 1)) {
    let plain = PLAIN_HEADERS.get(memoryType);
    if (!plain) PLAIN_HEADERS.set(memoryType, (plain = encodeAmHeader({ memoryType, memoryTypePolicy: 0, userHeader: user })));
    return { amId: 0, header: plain };
  }
  if (cb && cb.owner === RESERVED_OWNER) throw invalidArgument(`the receiver-callback owner '${RESERVED_OWNER}' is reserved by UCXX`);
  try {
    const header = encodeAmHeader({
      memoryType,
      callback: cb ? { owner: cb.owner, id: BigInt.asUintN(64, BigInt(cb.id)) } : undefined,
      memoryTypePolicy: 0,
      userHeader: user,
    });
    return { amId: 0, header };
  } catch (e) {
    throw invalidArgument(`amSend: ${(e as Error).message}`);
  }
}
