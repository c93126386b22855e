/**
 * A transport's attributes on one device, read from `uct_iface_attr_t` (what `ucx_info -d`
 * prints under "capabilities"): which operations it has, their size limits, how endpoints
 * connect, and UCX's own latency and bandwidth estimates.
 */
import { UCX_CONSTANTS as C, type Struct } from "../../ffi/index.ts";

export interface UctOperationLimits {
  readonly maxShort: number;
  readonly maxBcopy: number;
  readonly minZcopy: number;
  readonly maxZcopy: number;
  readonly maxIov: number;
}

export interface UctTransportAttributes {
  /** `uct_iface_attr_t.cap.flags` as a BigInt (bits above 31 are used: connect modes). */
  readonly flags: bigint;
  /** Names of the capability flags set: `am_short`, `put_zcopy`, `connect_to_iface`... */
  readonly capabilities: readonly string[];
  readonly put: UctOperationLimits;
  readonly get: UctOperationLimits;
  readonly am: UctOperationLimits & { readonly maxHeader: number };
  /** Atomic operations supported without (`post`) and with (`fetch`) a result, per width. */
  readonly atomic32: { readonly post: readonly string[]; readonly fetch: readonly string[] };
  readonly atomic64: { readonly post: readonly string[]; readonly fetch: readonly string[] };
  readonly connectToInterface: boolean;
  readonly connectToEndpoint: boolean;
  readonly deviceAddressLength: number;
  readonly interfaceAddressLength: number;
  readonly endpointAddressLength: number;
  /** Seconds. */
  readonly latency: { readonly fixed: number; readonly perEndpoint: number };
  /** Bytes per second. */
  readonly bandwidth: { readonly dedicated: number; readonly shared: number };
  /** Seconds of CPU per message. */
  readonly overhead: number;
  readonly priority: number;
}

const FLAG_NAMES: ReadonlyArray<[string, number]> = [
  ["am_short", C.UCT_IFACE_FLAG_AM_SHORT],
  ["am_bcopy", C.UCT_IFACE_FLAG_AM_BCOPY],
  ["am_zcopy", C.UCT_IFACE_FLAG_AM_ZCOPY],
  ["pending", C.UCT_IFACE_FLAG_PENDING],
  ["put_short", C.UCT_IFACE_FLAG_PUT_SHORT],
  ["put_bcopy", C.UCT_IFACE_FLAG_PUT_BCOPY],
  ["put_zcopy", C.UCT_IFACE_FLAG_PUT_ZCOPY],
  ["get_short", C.UCT_IFACE_FLAG_GET_SHORT],
  ["get_bcopy", C.UCT_IFACE_FLAG_GET_BCOPY],
  ["get_zcopy", C.UCT_IFACE_FLAG_GET_ZCOPY],
  ["atomic_cpu", C.UCT_IFACE_FLAG_ATOMIC_CPU],
  ["atomic_device", C.UCT_IFACE_FLAG_ATOMIC_DEVICE],
  ["connect_to_iface", C.UCT_IFACE_FLAG_CONNECT_TO_IFACE],
  ["connect_to_ep", C.UCT_IFACE_FLAG_CONNECT_TO_EP],
  ["connect_to_sockaddr", C.UCT_IFACE_FLAG_CONNECT_TO_SOCKADDR],
  ["am_dup", C.UCT_IFACE_FLAG_AM_DUP],
  ["cb_sync", C.UCT_IFACE_FLAG_CB_SYNC],
  ["cb_async", C.UCT_IFACE_FLAG_CB_ASYNC],
];

/** `uct_atomic_op_t` names by value: bit `1 << op` of op_flags/fop_flags. */
export const ATOMIC_OP_NAMES = ["add", "and", "or", "xor", "swap", "cswap"] as const;
export type UctAtomicOpName = (typeof ATOMIC_OP_NAMES)[number];

export function hasFlag(flags: bigint, flag: number): boolean {
  return (flags & BigInt(flag)) !== 0n;
}

function big(attr: Struct, field: string): bigint {
  return BigInt(attr.get(field));
}

/** `SIZE_MAX` style "unlimited" values become Infinity; everything else a Number. */
function size(attr: Struct, field: string): number {
  const v = big(attr, field);
  return v >= 2n ** 53n ? Infinity : Number(v);
}

function limits(attr: Struct, op: string): UctOperationLimits {
  return {
    maxShort: size(attr, `cap.${op}.max_short`),
    maxBcopy: size(attr, `cap.${op}.max_bcopy`),
    minZcopy: size(attr, `cap.${op}.min_zcopy`),
    maxZcopy: size(attr, `cap.${op}.max_zcopy`),
    maxIov: size(attr, `cap.${op}.max_iov`),
  };
}

function atomicOps(mask: bigint): string[] {
  return ATOMIC_OP_NAMES.filter((_, i) => (mask & (1n << BigInt(i))) !== 0n);
}

export function transportAttributes(attr: Struct<"uct_iface_attr_t">): UctTransportAttributes {
  const flags = big(attr, "cap.flags");
  return {
    flags,
    capabilities: FLAG_NAMES.filter(([, bit]) => hasFlag(flags, bit)).map(([name]) => name),
    put: limits(attr, "put"),
    get: limits(attr, "get"),
    am: { ...limits(attr, "am"), maxHeader: size(attr, "cap.am.max_hdr") },
    atomic32: { post: atomicOps(big(attr, "cap.atomic32.op_flags")), fetch: atomicOps(big(attr, "cap.atomic32.fop_flags")) },
    atomic64: { post: atomicOps(big(attr, "cap.atomic64.op_flags")), fetch: atomicOps(big(attr, "cap.atomic64.fop_flags")) },
    connectToInterface: hasFlag(flags, C.UCT_IFACE_FLAG_CONNECT_TO_IFACE),
    connectToEndpoint: hasFlag(flags, C.UCT_IFACE_FLAG_CONNECT_TO_EP),
    deviceAddressLength: attr.getNumber("device_addr_len"),
    interfaceAddressLength: attr.getNumber("iface_addr_len"),
    endpointAddressLength: attr.getNumber("ep_addr_len"),
    latency: { fixed: Number(attr.get("latency.c")), perEndpoint: Number(attr.get("latency.m")) },
    bandwidth: { dedicated: Number(attr.get("bandwidth.dedicated")), shared: Number(attr.get("bandwidth.shared")) },
    overhead: Number(attr.get("overhead")),
    priority: attr.getNumber("priority"),
  };
}
