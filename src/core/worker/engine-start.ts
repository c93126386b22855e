/**
 * A worker's engine started in its progress mode, and the send path over it: the protocol
 * tables (checked first, so that a bad protocol option fails before any thread starts), the
 * bounce pool, and the registration cache of zero-copy sends.
 */
import type { Engine, EngineOptions, ProgressMode, Submission } from "../engine/engine.ts";
import { submission } from "../engine/engine.ts";
import { HybridEngine } from "../engine/hybrid-engine.ts";
import { InlineEngine } from "../engine/inline-engine.ts";
import { INLINE_CAPACITY, Op } from "../engine/records.ts";
import type { Ring } from "../engine/ring.ts";
import { ThreadedEngine } from "../engine/threaded-engine.ts";
import { BouncePool } from "../proto/bounce-pool.ts";
import type { ProtocolOptions } from "../proto/config.ts";
import { RegistrationCache } from "../proto/registration-cache.ts";
import { formatProtoInfo } from "../proto/report.ts";
import { ProtocolSelector } from "../proto/selector.ts";
import { SendPath } from "../proto/send-path.ts";
import { addressOf, type RequestPath } from "./request-path.ts";

const UCS_OK = 0;

export async function startEngine(
  mode: ProgressMode,
  options: EngineOptions,
  protocols: ProtocolOptions | undefined,
  onCompletion: (ring: Ring, word: number) => void,
): Promise<{ engine: Engine; selector: ProtocolSelector; pool: BouncePool }> {
  const selector = new ProtocolSelector(mode, INLINE_CAPACITY, protocols);
  const { bounceChunkSize, bounceChunks } = selector.configuration;
  const pool = BouncePool.create(bounceChunkSize, bounceChunkSize > 0 ? bounceChunks : 0, mode === "thread");
  const withPool: EngineOptions = { ...options, bouncePool: pool.buffer };
  const engine =
    mode === "thread"
      ? await ThreadedEngine.start(withPool, onCompletion)
      : mode === "hybrid"
        ? new HybridEngine(withPool, onCompletion).start()
        : new InlineEngine(mode, withPool, onCompletion);
  pool.attach(addressOf);
  return { engine, selector, pool };
}

/** A send's value: made once, not a closure per send. */
const nothing = (): undefined => undefined;

/** What the send path needs of the worker besides its requests. */
export interface SendPathWorker {
  /** A Promise already resolved that the worker's settled() knows as such (ProgressDriver.resolved). */
  resolved(): Promise<void>;
  /** Await `p`, progressing the worker meanwhile in polling and blocking modes (Worker.settled). */
  settled<T>(p: Promise<T>): Promise<T>;
  holdMemory<T>(bytes: Uint8Array, promise: Promise<T>): Promise<T>;
  /** The registration id of a buffer the user registered with memMap, if it is one. */
  registrationOf(buffer: ArrayBufferLike): number | undefined;
}

export function makeSendPath(path: RequestPath, worker: SendPathWorker, selector: ProtocolSelector, pool: BouncePool): SendPath {
  const sendPath = new SendPath(
    {
      request: (s: Omit<Submission, "request">, keep, what, onArrive, now) => path.request(s, keep, what, nothing, undefined, onArrive, now),
      requestDone: (s: Omit<Submission, "request">, onArrive) => path.requestDone(s, onArrive),
      resolved: () => worker.resolved(),
      closing: () => path.requests.closing,
      settled: (p) => worker.settled(p),
      holdMemory: (bytes, promise) => worker.holdMemory(bytes, promise),
    },
    selector,
    pool,
    new RegistrationCache(
      {
        nextId: () => path.newObjectId(),
        map: (id, address, length, keep, onFail) => {
          const r = path.request(submission({ op: Op.MemMap, target: id, address, length }), keep, "ucp_mem_map", () => undefined, undefined, (_id, status) => {
            if (status !== UCS_OK) onFail();
          });
          r.promise.catch(() => {}); // a refused registration only makes this buffer go plain
        },
        unmap: (id) => {
          if (!path.closed) path.post(submission({ op: Op.MemUnmap, target: id }));
        },
        userRegistration: (buffer) => worker.registrationOf(buffer),
        addressOf,
      },
      { maxBytes: selector.configuration.registrationMaxBytes, maxRegistration: selector.configuration.registrationMaxBuffer },
    ),
    addressOf,
  );
  if (selector.configuration.info) process.stderr.write(formatProtoInfo(selector));
  return sendPath;
}
