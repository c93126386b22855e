/**
 * An active message as a UCT handler sees it, under the seed's rules (003_2944ca982e48c11c.txt,
 * "Active messages"): the handler is called only during progress; `data` is UCT's own memory,
 * valid until the handler returns, unless the handler keeps it: "The callback is allowed to keep
 * the data passed to it, and release it later, by returning UCS_INPROGRESS". UCT allows that
 * only when it passes UCT_CB_PARAM_FLAG_DESC; `keep()` then makes the handler return
 * UCS_INPROGRESS and gives a held message whose `release()` is `uct_iface_release_desc`.
 * Without the flag, `keep()` copies the bytes (`held.copied` says so).
 */
import { uctInlineCalls, UCX_CONSTANTS as C, type NativeFunction, type Pointer } from "../../ffi/index.ts";
import { UcxError } from "../errors.ts";
import { ucx } from "../library.ts";
import { readPointer } from "./native-memory.ts";

/** A message kept past its handler. */
export interface UctHeldMessage {
  readonly id: number;
  /** The bytes: UCT's descriptor memory (until `release()`), or a copy. */
  readonly data: Uint8Array;
  /** True when UCT did not allow keeping its memory and the bytes were copied. */
  readonly copied: boolean;
  /** Give the descriptor back to UCT (`uct_iface_release_desc`); once. */
  release(): void;
}

const releaseFns = new Map<Pointer, NativeFunction>();

/** `uct_iface_release_desc(desc)`: `uct_recv_desc_t *rd = ((uct_recv_desc_t **)desc)[-1]; rd->cb(rd, desc);` */
export function releaseDescriptor(desc: Pointer): void {
  const recvDesc = readPointer(desc - 8);
  const cb = readPointer(recvDesc);
  let fn = releaseFns.get(cb);
  if (!fn) {
    fn = ucx().functionAt(cb, uctInlineCalls.uct_desc_release_callback_t);
    releaseFns.set(cb, fn);
  }
  fn(recvDesc, desc);
}

export class UctAmMessage {
  private kept: UctHeldMessage | undefined;
  private ended = false;

  constructor(
    readonly id: number,
    private readonly address: Pointer,
    readonly length: number,
    /** The `uct_cb_param_flags` UCT passed. */
    readonly flags: number,
  ) {}

  private viewCache: Uint8Array | undefined;

  /** The message bytes (for am_short: the 8-byte header, then the payload). Valid during the handler. */
  get data(): Uint8Array {
    if (this.ended && !this.kept) throw new UcxError("UCX_TS_CLOSED", "an active message's data is UCT's memory: valid only inside its handler (use keep())");
    if (!this.viewCache) this.viewCache = this.length === 0 ? new Uint8Array(0) : new Uint8Array(ucx().view(this.address, this.length));
    return this.viewCache;
  }

  /** Whether UCT lets the handler keep its memory (UCT_CB_PARAM_FLAG_DESC). */
  get canKeep(): boolean {
    return (this.flags & C.UCT_CB_PARAM_FLAG_DESC) !== 0;
  }

  /** Keep the message after the handler returns (see the file comment). Call during the handler. */
  keep(): UctHeldMessage {
    if (this.kept) return this.kept;
    if (this.ended) throw new UcxError("UCX_TS_CLOSED", "keep() must be called inside the active message handler");
    if (!this.canKeep) {
      const copy = this.data.slice();
      this.kept = { id: this.id, data: copy, copied: true, release: () => {} };
      return this.kept;
    }
    const desc = this.address;
    const data = this.data;
    let released = false;
    this.kept = {
      id: this.id,
      data,
      copied: false,
      release: () => {
        if (released) return;
        released = true;
        if (data.byteLength > 0) ucx().backend.detachView(data.buffer as ArrayBuffer);
        releaseDescriptor(desc);
      },
    };
    return this.kept;
  }

  /** Called when the handler has returned: the status the UCT handler returns. */
  finish(): number {
    this.ended = true;
    return this.kept && !this.kept.copied ? 1 /* UCS_INPROGRESS */ : 0 /* UCS_OK */;
  }
}

export type UctAmHandler = (message: UctAmMessage) => void;
