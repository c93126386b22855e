/**
 * Out-parameters for C calls (`ucp_context_h *context_p`, `size_t *length_p`, ...): a few
 * 8-byte slots in JavaScript memory whose addresses are handed to C and read back afterwards.
 * The slots object must stay referenced until the C call that writes them has returned, which
 * holding it in a local variable guarantees.
 */
import type { Pointer } from "../ffi/index.ts";
import { ucx } from "./library.ts";

export class OutSlots {
  private readonly words: BigInt64Array;
  private readonly data: DataView;
  private readonly base: Pointer;

  constructor(count = 1) {
    this.words = new BigInt64Array(count);
    this.data = new DataView(this.words.buffer);
    this.base = ucx().addressOf(this.words);
  }

  /** Address of slot `i`, to pass as `T *out`. */
  address(i = 0): Pointer {
    return this.base + 8 * i;
  }

  /** Slot `i` read as a pointer or `size_t`. */
  pointer(i = 0): Pointer {
    return Number(this.data.getBigUint64(8 * i, true));
  }

  /** Slot `i` read as an `unsigned` (C writes the low 4 bytes on little-endian hosts). */
  u32(i = 0): number {
    return this.data.getUint32(8 * i, true);
  }

  /** Slot `i` read as an `int`. */
  i32(i = 0): number {
    return this.data.getInt32(8 * i, true);
  }
}
