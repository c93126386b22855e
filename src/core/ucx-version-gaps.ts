/**
 * Known gaps of the UCX loaded, by version, and what ucx-ts does about them, decided from what
 * the user chose (a context's `config` option or a UCX_* variable in the C environment).
 *
 * UCX 1.16 made protocols v2 the default (UCX_PROTO_ENABLE=y; 1.15 and older: n). Under v2,
 * atomics emulated in software over active messages (every atomic where no transport does them
 * in hardware: tcp, and shared memory the target did not allocate through UCX) are offered only
 * to endpoints without error handling: `amo/post/sw` and `amo/fetch/sw` lack
 * UCP_PROTO_COMMON_INIT_FLAG_ERR_HANDLING, which `ucp_proto_single_init` requires when the
 * endpoint's err_mode is PEER (src/ucp/rma/amo_sw.c, src/ucp/proto/proto_single.c; the same in
 * 1.16.0, 1.17.0, 1.18.1 and master of 2026-11). Such an atomic then finds no protocol and is
 * cancelled ("cannot find remote protocol ... amo_fetch", UCS_ERR_CANCELED) or the connection is
 * reset. ucx-ts does NOT work around this by selecting protocols v1 (UCX_PROTO_ENABLE=n) for
 * contexts with atomics, though atomics then work: a v1 receiver fed rendezvous active messages
 * by a v2 sender (any UCX >= 1.16 peer on its defaults: UCXX, C programs) got messages with their
 * tails zeroed at fragment boundaries, 5-8 of 15 in the application-thread modes (v1-v1 and v2-v2:
 * 0 of 15; docs/upstream-reports.md 4). Instead, since 2026-11-28, ucx-ts carries atomics on such
 * endpoints itself, over active messages to the target's executor (engine/am-atomics.ts), when
 * `atomicsOverActiveMessages` says this UCX needs it.
 *
 * UCX 1.16 also added an invalidation of a request's buffer registration when a rendezvous whose
 * rkey the peer holds fails on a peer-error-handling endpoint, which crashes the process when the
 * context has no registration cache (none without memory events, ucx-ts's default): the cure,
 * a handle of the application's own for each request large enough to go by rendezvous, is in
 * engine/request-handles.ts; `requestHandlesFrom` says from which size. (Until 2026-11-27
 * ucx-ts chose UCX_RNDV_SCHEME=put_zcopy instead, which helped under protocols v1 only.)
 * docs/upstream-reports.md section 4 has both gaps.
 */
import { ucx } from "./library.ts";
import { ucxVersionNumbers } from "./version.ts";

/**
 * Below this many bytes no request gets a handle of its own: UCX 1.16-1.20 choose rendezvous
 * from their performance estimates ("auto"), and an RTS round trip does not pay below a few
 * KiB on any transport; a smaller UCX_RNDV_THRESH the user set lowers it.
 */
const REQUEST_HANDLES_FROM = 4096;

/**
 * The smallest send or receive that needs a memory handle of its own (engine/request-handles.ts),
 * Infinity when none does: on UCX >= 1.16 without a registration cache (memory events off, or
 * UCX_RCACHE_ENABLE=n). `forced` is UCX_TS_REQUEST_HANDLES: "1" gives handles on any UCX (the
 * tests run that path against 1.13), "0" gives none.
 * `overrides`: the context's `config` option. `version` and `environment` default to the loaded
 * library's version and the C environment UCX reads (getenv, which sees what the shell set and
 * ucx-ts's own defaults; Bun's `process.env` it does not).
 */
export function requestHandlesFrom(
  overrides: Readonly<Record<string, string | number | boolean>>,
  forced: string | undefined,
  version: { readonly major: number; readonly minor: number } = ucxVersionNumbers(),
  environment: (name: string) => string | undefined = cEnvironment,
): number {
  if (forced === "0") return Infinity;
  const user = (name: string) => chosen(overrides, environment, name);
  const cache = registrationCacheOn(user("MEM_EVENTS")) && !isNo(user("RCACHE_ENABLE"));
  if (forced !== "1" && (!since116(version) || cache)) return Infinity;
  return Math.min(REQUEST_HANDLES_FROM, memoryUnits(user("RNDV_THRESH")) ?? Infinity);
}

/**
 * Whether atomics on endpoints with peer error handling go over active messages (engine/
 * am-atomics.ts): on UCX >= 1.16 unless the user chose protocols v1 (UCX_PROTO_ENABLE=n), under
 * which UCX's own atomics work. `forced` is UCX_TS_ATOMICS_OVER_AM: "1" on any UCX (the tests run
 * that path against 1.13), "0" never. Arguments as for `requestHandlesFrom`.
 */
export function atomicsOverActiveMessages(
  overrides: Readonly<Record<string, string | number | boolean>>,
  forced: string | undefined,
  version: { readonly major: number; readonly minor: number } = ucxVersionNumbers(),
  environment: (name: string) => string | undefined = cEnvironment,
): boolean {
  if (forced === "0" || forced === "1") return forced === "1";
  return since116(version) && !isNo(chosen(overrides, environment, "PROTO_ENABLE"));
}

/** UCX 1.16 or later: where both gaps begin. */
function since116(version: { readonly major: number; readonly minor: number }): boolean {
  return version.major > 1 || (version.major === 1 && version.minor >= 16);
}

/** The user's value of UCX_`name`: the context's own (with or without the prefix), else the environment's. */
function chosen(overrides: Readonly<Record<string, string | number | boolean>>, environment: (name: string) => string | undefined, name: string): string | undefined {
  const own = Object.entries(overrides).find(([k]) => k.replace(/^UCX_/, "") === name)?.[1];
  return own !== undefined ? String(own) : environment(`UCX_${name}`);
}

/** A UCX memory-units value ("8192", "8k", "1m", ...) in bytes; undefined for "auto", "inf" or nonsense. */
export function memoryUnits(text: string | undefined): number | undefined {
  const m = /^\s*(\d+)\s*([bkmgt]?)b?\s*$/i.exec(text ?? "");
  if (!m) return undefined;
  const shift = { "": 0, b: 0, k: 10, m: 20, g: 30, t: 40 }[m[2]!.toLowerCase() as "" | "b" | "k" | "m" | "g" | "t"];
  return Number(m[1]) * 2 ** shift;
}

function isNo(value: string | undefined): boolean {
  return ["no", "n", "0", "off", "false"].includes((value ?? "").toLowerCase());
}

/**
 * Whether UCP gets its registration cache: only with UCX's memory events (UCX's default is on),
 * which ucx-ts turns off by default (UCX_MEM_EVENTS=no, library.ts says why).
 */
function registrationCacheOn(memEvents: string | undefined): boolean {
  return !isNo(memEvents ?? "yes");
}

/**
 * A variable of the C environment, copied out with memcpy rather than read through a view of C
 * memory: under Node each view's bookkeeping waits for an event-loop turn (core/worker's test).
 */
function cEnvironment(name: string): string | undefined {
  const u = ucx();
  const value = u.getenv(name);
  if (value === 0) return undefined;
  const bytes = new Uint8Array(Number(u.strlen(value)));
  if (bytes.length > 0) u.memcpy(u.addressOf(bytes), value, bytes.length);
  return new TextDecoder().decode(bytes);
}
