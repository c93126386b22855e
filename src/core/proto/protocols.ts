/**
 * The protocols ucx-ts can use to move a send's bytes from the application thread to UCX, each
 * defined apart from the engine that selects among them (selection.ts): which operations and
 * buffer types it serves, its size range, and its default cost in each progress mode.
 *
 * - `inline`: the bytes are copied into the submission record itself (ring slot), so nothing of
 *   the caller's needs to stay alive: the send resolves as soon as it is submitted. Small sizes
 *   only (the slot's room).
 * - `bounce`: the bytes are copied into a chunk of a bounce pool that the executor registered
 *   with UCX once (ucp_mem_map; the send passes its memory handle); the send resolves as soon as
 *   it is submitted, and the chunk returns to the pool when UCX is done with it.
 * - `zcopy`: the caller's buffer goes to UCX by address, held until UCX reports completion; the
 *   send resolves then. Every size.
 * - `zcopy-reg`: as zcopy, with the buffer registered with UCX through a registration cache
 *   (registration-cache.ts) and its memory handle passed: pays where registering per send is
 *   expensive (RDMA without UCX's own cache) and the same buffers are sent again.
 *
 * A send that resolved before UCX finished with it (inline, bounce) and then fails makes its
 * endpoint fail with that error; `ep.flush()`, `ep.close()` and `worker.close()` wait for such
 * sends, as a socket's end() waits for written data.
 */
import type { ProgressMode } from "../engine/engine.ts";
import type { Cost } from "./cost.ts";

export const SEND_PROTOCOLS = ["inline", "bounce", "zcopy", "zcopy-reg"] as const;
export type SendProtocol = (typeof SEND_PROTOCOLS)[number];

/** Operations whose protocol is selected per message. */
export const OPERATIONS = ["tag-send", "stream-send"] as const;
export type Operation = (typeof OPERATIONS)[number];

/**
 * A buffer type, as in UCX protocols v2: memory type, layout, scatter-gather count. Only host
 * contiguous memory exists today; device memory (the GPU issue) adds its own protocols here.
 */
export interface BufferType {
  readonly memory: "host";
  readonly layout: "contig";
}
export const HOST_CONTIG: BufferType = { memory: "host", layout: "contig" };
export function bufferTypeKey(t: BufferType): string {
  return `${t.memory}/${t.layout}`;
}

export interface ProtocolDefinition<P extends string> {
  readonly name: P;
  readonly operations: readonly Operation[];
  readonly bufferTypes: readonly BufferType[];
  readonly description: string;
  /** Inclusive size range, given the worker's limits (slot room, bounce chunk size). */
  range(limits: ProtocolLimits): { minSize: number; maxSize: number } | undefined;
}

/** What bounds the protocols' ranges in one worker. */
export interface ProtocolLimits {
  /** Bytes of payload a submission record can carry (inline's maximum). */
  readonly inlineCapacity: number;
  /** Bytes of one bounce-pool chunk (bounce's maximum); 0 when the pool is off. */
  readonly bounceChunkSize: number;
  /** The registration cache's largest registration; 0 turns zcopy-reg off. */
  readonly maxRegistration: number;
}

export const SEND_PROTOCOL_DEFINITIONS: readonly ProtocolDefinition<SendProtocol>[] = [
  {
    name: "inline",
    operations: OPERATIONS,
    bufferTypes: [HOST_CONTIG],
    description: "copied into the submission record; resolves on submission",
    range: (l) => (l.inlineCapacity > 0 ? { minSize: 0, maxSize: l.inlineCapacity } : undefined),
  },
  {
    name: "bounce",
    operations: OPERATIONS,
    bufferTypes: [HOST_CONTIG],
    description: "copied into a registered bounce chunk; resolves on submission",
    range: (l) => (l.bounceChunkSize > 0 ? { minSize: 0, maxSize: l.bounceChunkSize } : undefined),
  },
  {
    name: "zcopy",
    operations: OPERATIONS,
    bufferTypes: [HOST_CONTIG],
    description: "buffer passed by address and held; resolves when UCX is done",
    range: () => ({ minSize: 0, maxSize: Number.MAX_SAFE_INTEGER }),
  },
  {
    name: "zcopy-reg",
    operations: OPERATIONS,
    bufferTypes: [HOST_CONTIG],
    description: "as zcopy, the buffer registered once through the registration cache",
    // Sends of at least one byte: a registration covers the sent buffer's whole ArrayBuffer, up
    // to the cache's largest registration (a bigger buffer goes plain zcopy at run time).
    range: (l) => (l.maxRegistration > 0 ? { minSize: 1, maxSize: Number.MAX_SAFE_INTEGER } : undefined),
  },
];

/**
 * Default costs by progress mode: `ucx-ts calibrate` on the 2-core development VM (2026-11-23,
 * Node 20, UCX 1.13.1, two workers in one process over shared memory, rounded; a noisy slope
 * of the flat inline line set to 0). There, copying pays only in thread mode and only for
 * small sizes (inline up to 192 B, bounce up to ~10 KiB); in polling and blocking modes
 * zero-copy wins everywhere. zcopy-reg (a later run) measured the same slope as zcopy and 0-4 us
 * more per message: its handle buys nothing over shared memory, where UCX registers nothing. A calibration file or configuration replaces them (calibration.ts, config.ts).
 */
const POLLING_COSTS: Record<SendProtocol, Cost> = {
  inline: { c: 5.2, m: 0 },
  bounce: { c: 5.4, m: 0.000175 },
  zcopy: { c: 4.6, m: 0.000113 },
  "zcopy-reg": { c: 8.0, m: 0.000113 },
};

export const DEFAULT_COSTS: Record<ProgressMode, Record<SendProtocol, Cost>> = {
  thread: {
    inline: { c: 7.8, m: 0 },
    bounce: { c: 8.3, m: 0.00035 },
    zcopy: { c: 10.4, m: 0.000146 },
    "zcopy-reg": { c: 10.9, m: 0.000146 },
  },
  polling: POLLING_COSTS,
  // The same executor on the application thread as polling: its lines until calibrated.
  hybrid: POLLING_COSTS,
  blocking: {
    inline: { c: 6.3, m: 0 },
    bounce: { c: 5.9, m: 0.00024 },
    zcopy: { c: 4.6, m: 0.000114 },
    "zcopy-reg": { c: 8.0, m: 0.000114 },
  },
};
