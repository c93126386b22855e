/**
 * The C callbacks UCT calls, one of each kind per thread, created on first use on the thread
 * that drives UCT and shared by every UCT object of that thread. UCT calls them only from inside
 * the calls that `UctWorker.progress()` and the endpoint operations make (UCT AM handlers are
 * registered without UCT_CB_FLAG_ASYNC), so they always run on that same JavaScript thread,
 * which is the one thread every backend can take a callback on (ffi-facts.md).
 *
 * Each callback finds its JavaScript target by the address UCT passes back (a completion, a
 * pending request) or by an integer token (a pack source, an interface).
 */
import { callbackTypes, UCX_CONSTANTS, type NativeCallback, type Pointer } from "../../ffi/index.ts";
import { ucx } from "../library.ts";
import { callUserCallback } from "../user-callback.ts";

/** What the completion callback calls (completion.ts's UctCompletion; declared here, below it). */
export interface CompletionTarget {
  fire(): void;
}

/**
 * What an am_bcopy/put_bcopy packs: a buffer, or a function that writes the bytes into the array
 * it is given (max_bcopy long; copied into UCT's buffer after, valid only during the call) and
 * returns how many it wrote.
 */
export type PackSource = Uint8Array | ((dest: Uint8Array) => number);

export interface PendingEntry {
  readonly bytes: Uint8Array;
  readonly run: () => number;
  readonly onPurge?: () => void;
}

export interface AmDispatch {
  (arg: Pointer, data: Pointer, length: number, flags: number): number;
}

export interface NativeCallbacks {
  readonly completion: Pointer;
  readonly pending: Pointer;
  readonly pendingPurge: Pointer;
  readonly pack: Pointer;
  readonly unpack: Pointer;
  readonly am: Pointer;
  readonly completions: Map<Pointer, CompletionTarget>;
  readonly pendingRequests: Map<Pointer, PendingEntry>;
  /** Pack sources by token (bcopy packs inside the call, but a token keeps nesting honest). */
  readonly packSources: Map<number, { source: PackSource; max: number }>;
  readonly unpackTargets: Map<number, Uint8Array>;
  /** AM dispatchers by interface token (the handler's `arg` is token * 32 + AM id). */
  readonly amInterfaces: Map<number, AmDispatch>;
  nextToken(): number;
}

let instance: NativeCallbacks | undefined;
const keep: NativeCallback[] = [];

export function nativeCallbacks(): NativeCallbacks {
  if (instance) return instance;
  const u = ucx();
  const completions = new Map<Pointer, CompletionTarget>();
  const pendingRequests = new Map<Pointer, PendingEntry>();
  const packSources = new Map<number, { source: PackSource; max: number }>();
  const unpackTargets = new Map<number, Uint8Array>();
  const amInterfaces = new Map<number, AmDispatch>();
  let token = 0;
  const make = (sig: { args: readonly string[]; result: string }, fn: (...a: number[]) => unknown): Pointer => {
    const cb = u.callback(sig as never, fn as never);
    keep.push(cb);
    return cb.address;
  };
  const completion = make(uctCallbacks.uct_completion_callback_t, (self) => {
    const c = completions.get(self);
    if (c) callUserCallback(() => c.fire());
  });
  const pending = make(uctCallbacks.uct_pending_callback_t, (self) => {
    const p = pendingRequests.get(self);
    if (!p) return 0; // UCS_OK: unknown request, let UCT drop it
    // A callback that throws (or returns no status) leaves the queue: called again it would
    // throw again on every progress. Its exception is rethrown on a microtask.
    let status = 0;
    callUserCallback(() => {
      const r = p.run();
      status = typeof r === "number" ? r : 0;
    });
    if (status === 0) pendingRequests.delete(self);
    return status;
  });
  const pendingPurge = make(uctCallbacks.uct_pending_purge_callback_t, (self) => {
    const p = pendingRequests.get(self);
    pendingRequests.delete(self);
    if (p?.onPurge) callUserCallback(p.onPurge);
  });
  let scratch = new Uint8Array(0);
  const pack = make(uctCallbacks.uct_pack_callback_t, (dest, arg) => {
    const entry = packSources.get(arg);
    if (!entry) return 0;
    const { source, max } = entry;
    if (source instanceof Uint8Array) {
      // A copy, not a view of `dest`: a view holds ~200 B of malloc until the isolate's next
      // full collection (engine/part-batch.ts, copyIn).
      if (source.length > 0) u.memcpy(dest, u.addressOf(source), source.length);
      return source.length;
    }
    // The function writes into a scratch array, copied to `dest` after: no view per send (as
    // above), and an array kept past the callback can no longer reach UCX's buffer.
    if (scratch.length < max) scratch = new Uint8Array(Math.max(max, scratch.length * 2));
    const into = scratch.subarray(0, max);
    let n = 0;
    callUserCallback(() => {
      n = source(into);
    });
    n = Math.max(0, Math.min(max, Math.trunc(n) || 0));
    if (n > 0) u.memcpy(dest, u.addressOf(scratch), n);
    return n;
  });
  const unpack = make(uctCallbacks.uct_unpack_callback_t, (arg, data, length) => {
    const target = unpackTargets.get(arg);
    unpackTargets.delete(arg);
    const n = target ? Math.min(length, target.length) : 0;
    if (n > 0) u.memcpy(u.addressOf(target!), data, n);
  });
  const am = make(uctCallbacks.uct_am_callback_t, (arg, data, length, flags) => {
    // arg = interface token * UCT_AM_ID_MAX + AM id (the handler gets no id of its own).
    const d = amInterfaces.get(Math.floor(arg / UCX_CONSTANTS.UCT_AM_ID_MAX));
    return d ? d(arg, data, length, flags) : 0;
  });
  instance = {
    completion,
    pending,
    pendingPurge,
    pack,
    unpack,
    am,
    completions,
    pendingRequests,
    packSources,
    unpackTargets,
    amInterfaces,
    nextToken: () => (token = (token % 0x7fffffff) + 1),
  };
  return instance;
}

const uctCallbacks = {
  uct_completion_callback_t: callbackTypes.uct_completion_callback_t,
  uct_pending_callback_t: callbackTypes.uct_pending_callback_t,
  uct_pending_purge_callback_t: callbackTypes.uct_pending_purge_callback_t,
  uct_pack_callback_t: callbackTypes.uct_pack_callback_t,
  uct_unpack_callback_t: callbackTypes.uct_unpack_callback_t,
  uct_am_callback_t: callbackTypes.uct_am_callback_t,
};
