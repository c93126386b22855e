/**
 * Which of UCX's protocols an active message travels by (AmSendOptions.protocol): eager (the
 * bytes go with the message, UCP_AM_SEND_FLAG_EAGER), rendezvous (the receiver fetches them,
 * UCP_AM_SEND_FLAG_RNDV), or UCX's own choice by its thresholds (UCX_RNDV_THRESH).
 *
 * Why ucx-ts chooses for itself up to AM_EAGER_MAX bytes ("auto", the default): UCX 1.13 over
 * shared memory switches to rendezvous below 16 KiB, a threshold sized for a C receiver, where
 * the handshake (RTS, get, ATS) runs inside one ucp_worker_progress. Here each rendezvous message
 * also costs the receiver a call into JavaScript for the RTS, a ucp_am_recv_data_nbx call and its
 * completion, and each step waits for the next progress round; an eager message is one handler
 * call with its bytes already there (UCX copies them twice, which up to 64 KiB costs less). Two
 * processes, hybrid mode, windows of 16 AMs, window medians in ms, rendezvous -> eager, two runs
 * each (bench/run-p2p.mjs --plan, UCX_TS_BENCH_WINDOWS, 2026-12-07 21:05-21:12 UTC):
 *   16 KiB: Node 0.215/0.214 -> 0.152/0.104, Deno 0.181/0.214 -> 0.090/0.100, Bun 0.144 -> 0.073/0.060
 *   64 KiB: Node 0.324/0.279 -> 0.279/0.201, Deno 0.217/0.232 -> 0.181/0.172, Bun 0.162 -> 0.141/0.092
 *  128 KiB: Node 0.288/0.366 -> 0.451/0.308, Deno 0.255/0.278 -> 0.283/0.290, Bun 0.219 -> 0.228/0.138
 *  256 KiB: Node 0.588/0.352 -> 0.667/0.537, Deno 0.333/0.432 -> 0.520/0.521, Bun 0.302 -> 0.472/0.241
 * so eager up to 64 KiB, UCX's choice above. UCX_TS_AM_EAGER_MAX=<bytes> moves the bound (0:
 * always UCX's choice, for a deployment that tuned UCX_RNDV_THRESH).
 *
 * Every AM send that reaches UCX is host memory (device buffers are staged: cuda/transfers.ts),
 * so forcing eager never asks UCX to pack device memory. But "auto" leaves a message whose UCXX
 * header declares device memory to UCX: a UCXX receiver copies eager data into a host buffer and
 * fetches rendezvous data into memory from the allocator of the declared type, so a small device
 * message sent eager would reach a UCXX application as host memory.
 */
import process from "node:process";
import { UCX_CONSTANTS as C } from "../../ffi/index.ts";
import { invalidArgument } from "../errors.ts";

export const AM_SEND_PROTOCOLS = ["auto", "eager", "rndv", "ucx"] as const;
export type AmSendProtocol = (typeof AM_SEND_PROTOCOLS)[number];

/**
 * Not a UCX flag: "auto", carried with the send's UCX flags from the endpoint to the executor,
 * which knows each message's length (amSendMany's differ) and resolves it (amSendFlags).
 */
const PROTOCOL_AUTO = 1 << 16;

/** Default bound of "auto": eager up to this many bytes of data. */
export const DEFAULT_AM_EAGER_MAX = 64 * 1024;

function eagerMaxFromEnv(): number {
  const text = process.env.UCX_TS_AM_EAGER_MAX;
  if (text === undefined || text === "") return DEFAULT_AM_EAGER_MAX;
  const n = Number(text);
  if (!Number.isSafeInteger(n) || n < 0) throw invalidArgument(`UCX_TS_AM_EAGER_MAX must be a whole number of bytes (0: UCX decides), got '${text}'`);
  return n;
}

/** "auto"'s bound in this process (UCX_TS_AM_EAGER_MAX, read once). */
export const AM_EAGER_MAX = eagerMaxFromEnv();

/**
 * The flags an AM send carries to the executor for `protocol` (checked: a UcxError for an unknown
 * one); `memoryType` is what its UCXX header declares (0 host).
 */
export function protocolFlags(protocol: AmSendProtocol | undefined, memoryType = 0): number {
  switch (protocol ?? "auto") {
    case "auto":
      return AM_EAGER_MAX > 0 && memoryType === 0 ? PROTOCOL_AUTO : 0;
    case "eager":
      return C.UCP_AM_SEND_FLAG_EAGER;
    case "rndv":
      return C.UCP_AM_SEND_FLAG_RNDV;
    case "ucx":
      return 0;
    default:
      throw invalidArgument(`amSend: protocol must be one of ${AM_SEND_PROTOCOLS.join(", ")}, got ${String(protocol)}`);
  }
}

/** The ucp_am_send_nbx flags of one message of `length` bytes sent with `flags` (protocolFlags' and UCX's). */
export function amSendFlags(flags: number, length: number): number {
  if (!(flags & PROTOCOL_AUTO)) return flags;
  const ucxFlags = flags & ~PROTOCOL_AUTO;
  return length <= AM_EAGER_MAX ? ucxFlags | C.UCP_AM_SEND_FLAG_EAGER : ucxFlags;
}
