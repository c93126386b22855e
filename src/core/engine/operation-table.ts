/**
 * The executor's table of operations: for each submission record's `Op`, the handler that reads
 * the record's fields and runs it, in the module of its family. The executor owns the table and
 * calls through it; the families never see the executor (they get an OpHost, op-host.ts).
 */
import type { ActiveMessages } from "./active-messages.ts";
import type { BatchOperations } from "./batch-operations.ts";
import type { EndpointOperations } from "./endpoint-operations.ts";
import type { ListenerOperations } from "./listener-operations.ts";
import { CLOSE_FLAG_FORCE, MULTI_FLAG_IF_QUEUED, Op, SUB } from "./records.ts";
import type { RemoteMemory } from "./remote-memory.ts";
import type { Ring } from "./ring.ts";
import type { TagOperations } from "./tag-operations.ts";

/** Runs one record: `w` its word index in `ring`; id, target, address and length already read. */
export type OperationHandler = (ring: Ring, w: number, id: number, target: number, address: number, length: number) => void;

export interface OperationFamilies {
  readonly tags: TagOperations;
  readonly endpoints: EndpointOperations;
  readonly listeners: ListenerOperations;
  readonly batches: BatchOperations;
  readonly rma: RemoteMemory;
  /** Absent without the "am" feature: AM operations then fail with UCS_ERR_INVALID_PARAM. */
  readonly am: ActiveMessages | undefined;
  /** The executor's own: cancel, the worker fence, publishing a registration to takeover. */
  cancel(target: number): void;
  fence(id: number): void;
  shareMemory(memory: number): void;
  done(id: number, status: number, value?: number): void;
}

const UCS_ERR_INVALID_PARAM = -5;

/** The handlers by Op; an Op without one is refused with UCS_ERR_INVALID_PARAM (Executor.execute). */
export function operationTable(f: OperationFamilies): OperationHandler[] {
  const { tags, endpoints, listeners, batches, rma, am } = f;
  const table: OperationHandler[] = [];
  const on = (op: Op, handler: OperationHandler) => void (table[op] = handler);
  // Fields beyond the four common ones, read where they are used (records.ts, SUB).
  const tagLo = (r: Ring, w: number) => r.u32[w + SUB.tagLo]!;
  const tagHi = (r: Ring, w: number) => r.u32[w + SUB.tagHi]!;
  const maskLo = (r: Ring, w: number) => r.u32[w + SUB.maskLo]!;
  const maskHi = (r: Ring, w: number) => r.u32[w + SUB.maskHi]!;
  const flags = (r: Ring, w: number) => r.u32[w + SUB.flags]!;
  const handle = (r: Ring, w: number) => r.f64[(w >> 1) + SUB.handle]!;

  // tag-operations.ts
  on(Op.TagSend, (r, w, id, target, address, length) => tags.tagSend(r, w, id, target, address, length, tagLo(r, w), tagHi(r, w)));
  on(Op.TagRecv, (r, w, id, _t, address, length) => tags.tagRecv(id, address, length, tagLo(r, w), tagHi(r, w), maskLo(r, w), maskHi(r, w)));
  on(Op.TagRecvIfQueued, (r, w, id, _t, address, length) => tags.tagRecvIfQueued(id, address, length, tagLo(r, w), tagHi(r, w), maskLo(r, w), maskHi(r, w)));
  on(Op.TagProbe, (r, w, id) => tags.tagProbe(id, tagLo(r, w), tagHi(r, w), maskLo(r, w), maskHi(r, w)));
  on(Op.StreamSend, (r, w, id, target, address, length) => tags.streamSend(r, w, id, target, address, length));
  on(Op.StreamRecv, (_r, _w, id, target, address, length) => tags.streamRecv(id, target, address, length));
  on(Op.Cancel, (_r, _w, _id, target) => f.cancel(target));
  // endpoint-operations.ts
  for (const op of [Op.EndpointCreateAddress, Op.EndpointCreateSockaddr, Op.EndpointCreateConnRequest]) {
    on(op, (r, w, id, target, address, length) => endpoints.create(op, id, target, address, length, handle(r, w), flags(r, w)));
  }
  on(Op.EndpointClose, (r, w, id, target) => endpoints.close(id, target, (flags(r, w) & CLOSE_FLAG_FORCE) !== 0));
  on(Op.EndpointFlush, (_r, _w, id, target) => endpoints.flush(id, target));
  on(Op.EndpointInfo, (_r, _w, id, target, address, length) => endpoints.info(id, target, address, length));
  on(Op.WorkerAddress, (_r, _w, id, _t, address, length) => endpoints.workerAddress(id, address, length));
  on(Op.WorkerFlush, (_r, _w, id) => endpoints.flush(id, 0));
  // listener-operations.ts
  on(Op.Listen, (_r, _w, id, target, address, length) => listeners.listen(id, target, address, length));
  on(Op.ListenerClose, (_r, _w, id, target) => listeners.close(id, target));
  on(Op.ListenerReject, (r, w, id, target) => listeners.reject(id, target, handle(r, w)));
  // batch-operations.ts
  on(Op.MultiSend, (r, w, id, target, address, length) => batches.multiSend(id, target, address, length, tagLo(r, w), tagHi(r, w)));
  on(Op.MultiRecv, (r, w, id, _t, _a, length) =>
    batches.multiRecv(id, [tagLo(r, w), tagHi(r, w), maskLo(r, w), maskHi(r, w)], { maxBytes: length, maxHeaders: handle(r, w) }, (flags(r, w) & MULTI_FLAG_IF_QUEUED) !== 0),
  );
  on(Op.RecvMany, (r, w, id, _t, address, length) =>
    batches.manyRecv(id, address, length, [tagLo(r, w), tagHi(r, w), maskLo(r, w), maskHi(r, w)], (flags(r, w) & MULTI_FLAG_IF_QUEUED) !== 0),
  );
  // remote-memory.ts
  on(Op.MemMap, (_r, _w, id, target, address, length) => {
    rma.memMap(id, target, address, length);
    f.shareMemory(target);
  });
  on(Op.MemUnmap, (_r, _w, id, target) => {
    rma.memUnmap(id, target);
    f.shareMemory(target);
  });
  on(Op.RkeyPack, (_r, _w, id, target, address, length) => rma.rkeyPack(id, target, address, length));
  on(Op.RkeyUnpack, (r, w, id, target, address, length) => rma.rkeyUnpack(id, target, address, length, flags(r, w)));
  on(Op.RkeyDestroy, (r, w, id) => rma.rkeyDestroy(id, flags(r, w)));
  for (const op of [Op.Put, Op.Get]) on(op, (r, w, id, target, address, length) => rma.rma(op, id, target, address, length, handle(r, w), flags(r, w)));
  on(Op.Atomic, (r, w, id, target, address, length) => rma.atomic(id, target, address, length, handle(r, w), flags(r, w), tagLo(r, w), tagHi(r, w) !== 0));
  on(Op.WorkerFence, (_r, _w, id) => f.fence(id));
  // active-messages.ts
  on(Op.AmSend, (r, w, id, target, address, length) => {
    if (!am) return f.done(id, UCS_ERR_INVALID_PARAM);
    am.amSend(id, target, address, length, handle(r, w), flags(r, w), tagLo(r, w), tagHi(r, w));
  });
  on(Op.AmSendInline, (r, w, id, target, _a, length) => {
    if (!am) return f.done(id, UCS_ERR_INVALID_PARAM);
    tags.amSendInline(r, w, id, target, length, flags(r, w), tagLo(r, w), tagHi(r, w));
  });
  on(Op.AmSendMany, (r, w, id, target, address, length) => {
    if (!am) return f.done(id, UCS_ERR_INVALID_PARAM);
    batches.amMultiSend(id, target, address, length, handle(r, w), flags(r, w), tagLo(r, w), tagHi(r, w));
  });
  on(Op.AmRegister, (_r, _w, id, target) => f.done(id, am ? am.setAmHandler(target) : UCS_ERR_INVALID_PARAM));
  // Op.Stop is the mode's (it calls Executor.destroy): nothing to run here.
  on(Op.Stop, () => {});
  return table;
}
