/**
 * One endpoint's remote memory access: the peer's keys unpacked for it, put and get, and
 * atomics on the peer's words (UCX's RMA and AMO). `Endpoint` checks that it is usable and
 * hands the call here; each operation holds its remote key, and its local buffer's registration,
 * until UCX is done.
 */
import { asBytes, type BufferLike } from "./buffers.ts";
import { atomicOperand } from "./atomic-operand.ts";
import type { Feature } from "./context.ts";
import type { EndpointHost, Submitted } from "./endpoint-host.ts";
import { submission } from "./engine/engine.ts";
import { Op } from "./engine/records.ts";
import { invalidArgument } from "./errors.ts";
import { parsePackedKey, RemoteKey } from "./memory.ts";

export type AtomicOp = "add" | "swap" | "cswap" | "and" | "or" | "xor";

export interface AtomicOptions {
  /** Width of the remote word: 64 (default) or 32. */
  readonly bits?: 32 | 64;
  /** For add/and/or/xor: resolve with the value before the operation (fetch-add...). */
  readonly fetch?: boolean;
  /** For cswap: the value the word must hold for the swap to happen. */
  readonly compare?: number | bigint;
}

/** ucp_atomic_op_t values. */
const ATOMIC_OPS: Record<AtomicOp, number> = { add: 0, swap: 1, cswap: 2, and: 3, or: 4, xor: 5 };

export class EndpointRma {
  constructor(
    private readonly worker: EndpointHost,
    private readonly endpointId: number,
    /** Tracks a request as the endpoint's own (its failure rejects it) and awaits it. */
    private readonly track: <T>(r: Submitted<T>) => Promise<T>,
    /** The endpoint is closed: the executor destroyed its keys with it. */
    private readonly endpointClosed: () => boolean,
  ) {}

  /** What a RemoteKey asks of its endpoint (memory.ts): its destruction. */
  private readonly keyOwner = {
    destroyRkey: async (k: RemoteKey): Promise<void> => {
      if (this.endpointClosed() || this.worker.closed) return; // the executor destroyed it with the endpoint
      await this.worker.settled(
        this.worker.request(submission({ op: Op.RkeyDestroy, flags: k.id }), null, "ucp_rkey_destroy", () => undefined).promise,
      );
    },
  };

  async unpackRkey(packed: BufferLike): Promise<RemoteKey> {
    const { address, length, rkey } = parsePackedKey(asBytes(packed, "remote key"));
    const id = this.worker.newObjectId();
    await this.track(
      this.worker.request(
        submission({ op: Op.RkeyUnpack, target: this.endpointId, address: this.worker.addressOf(rkey), length: rkey.length, flags: id }),
        rkey,
        "ucp_ep_rkey_unpack",
        () => undefined,
      ),
    );
    return new RemoteKey(this.keyOwner, id, this.endpointId, address, length);
  }

  private checkKey(rkey: RemoteKey, remoteAddress: number, length: number, operation: string, feature: Feature = "rma"): void {
    // UCX answers a missing feature with UCS_ERR_INVALID_PARAM and a log line; say which.
    if (!this.worker.features.includes(feature)) {
      throw invalidArgument(`${operation} needs the '${feature}' feature (Worker.create({ features: [..., '${feature}'] }))`);
    }
    if (!(rkey instanceof RemoteKey)) throw invalidArgument(`${operation}: rkey must be a RemoteKey (from ep.unpackRkey)`);
    if (rkey.endpointId !== this.endpointId) throw invalidArgument(`${operation}: the remote key was unpacked for another endpoint`);
    rkey.check(remoteAddress, length, operation);
  }

  /** Op.Put or Op.Get of `buffer` at `remoteAddress` (inside `rkey`'s region). */
  rma(op: number, operation: string, buffer: BufferLike, remoteAddress: number, rkey: RemoteKey): Promise<void> {
    const bytes = asBytes(buffer);
    this.checkKey(rkey, remoteAddress, bytes.length, operation);
    const p = this.track(
      this.worker.request(
        submission({ op, target: this.endpointId, address: this.worker.addressOf(bytes), length: bytes.length, handle: remoteAddress, flags: rkey.id }),
        bytes,
        op === Op.Put ? "ucp_put_nbx" : "ucp_get_nbx",
        () => undefined,
      ),
    );
    return rkey.inFlight.hold(this.worker.holdMemory(bytes, p));
  }

  /** See Endpoint.atomic. */
  atomic(op: AtomicOp, remoteAddress: number, rkey: RemoteKey, value: number | bigint, options: AtomicOptions): Promise<number | bigint | undefined> {
    const opcode = ATOMIC_OPS[op];
    if (opcode === undefined) throw invalidArgument(`atomic: op must be one of ${Object.keys(ATOMIC_OPS).join(", ")}, got '${op}'`);
    const bits = options.bits ?? 64;
    if (bits !== 32 && bits !== 64) throw invalidArgument(`atomic: bits must be 32 or 64, got ${bits}`);
    const size = bits / 8;
    this.checkKey(rkey, remoteAddress, size, "atomic", bits === 64 ? "amo64" : "amo32");
    if (remoteAddress % size !== 0) throw invalidArgument(`atomic: remote address ${remoteAddress} is not aligned to ${size} bytes`);
    const fetch = op === "swap" || op === "cswap" || options.fetch === true;
    if (op === "cswap" && options.compare === undefined) throw invalidArgument("atomic: cswap needs options.compare");
    // Operand at 0, reply at 8, the old value comes out in the reply. For cswap UCX reads the
    // compare value from the operand and the new value from the reply (ucp.h, "Atomic
    // Operations Semantic": Result=Y; if (X==Y) then Y=Z, X = buffer, Z = reply_buffer).
    const scratch = new Uint8Array(16);
    const view = new DataView(scratch.buffer);
    const write = (at: number, v: number | bigint, what: string) => {
      const word = atomicOperand(v, bits, what);
      if (bits === 64) view.setBigUint64(at, word, true);
      else view.setUint32(at, Number(word), true);
    };
    if (op === "cswap") {
      write(0, options.compare!, "compare");
      write(8, value, "value");
    } else write(0, value, "value");
    const p = this.track(
      this.worker.request(
        submission({
          op: Op.Atomic,
          target: this.endpointId,
          address: this.worker.addressOf(scratch),
          length: size,
          handle: remoteAddress,
          flags: rkey.id,
          tagLo: opcode,
          tagHi: fetch ? 1 : 0,
        }),
        scratch,
        "ucp_atomic_op_nbx",
        () => (fetch ? (bits === 64 ? view.getBigUint64(8, true) : view.getUint32(8, true)) : undefined),
      ),
    );
    return rkey.inFlight.hold(p);
  }
}
