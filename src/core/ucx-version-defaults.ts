/**
 * Configuration a context gets by default because of a known gap in the UCX loaded, never over
 * what the user chose (a context's `config` option or a UCX_* variable in the C environment).
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
 * 0 of 15; docs/upstream-reports.md 4). A user whose peers all run ucx-ts can set
 * UCX_PROTO_ENABLE=n on every side, or use errorHandling "none", to have atomics.
 *
 * UCX 1.16 also added an invalidation of the sender's buffer registration when a rendezvous whose
 * rkey the peer holds fails on a peer-error-handling endpoint (`ucp_request_memh_invalidate`), and
 * `ucp_memh_invalidate` calls `ucs_rcache_region_invalidate(context->rcache, ...)` without checking
 * that the context has a registration cache. Without memory events it has none (NULL): a
 * rendezvous send to a peer that died crashed the process (SIGSEGV at 0xb8, cli/transfer's killed
 * receiver, 2 runs in 3). Unchanged in 1.17.0, 1.18.1 and master. With the receiver pulling nothing
 * (UCX_RNDV_SCHEME=put_zcopy: the receiver sends its rkey, the sender puts) no sender buffer has
 * an rkey out, and 3 runs in 3 passed. So without memory events such contexts default to it.
 * docs/upstream-reports.md section 4 has both.
 */
import { ucx } from "./library.ts";
import { ucxVersionNumbers } from "./version.ts";

/**
 * `overrides`: the context's `config` option.
 * `version` and `environment` default to the loaded library's version and the C environment UCX
 * reads (getenv, which sees what the shell set and ucx-ts's own defaults; Bun's `process.env` it
 * does not).
 */
export function ucxVersionDefaults(
  overrides: Readonly<Record<string, string | number | boolean>>,
  version: { readonly major: number; readonly minor: number } = ucxVersionNumbers(),
  environment: (name: string) => string | undefined = cEnvironment,
): Record<string, string> {
  // The user's value of UCX_`name`: the context's own (with or without the prefix), else the environment's.
  const chosen = (name: string): string | undefined => {
    const own = Object.entries(overrides).find(([k]) => k.replace(/^UCX_/, "") === name)?.[1];
    return own !== undefined ? String(own) : environment(`UCX_${name}`);
  };
  const since116 = version.major > 1 || (version.major === 1 && version.minor >= 16);
  const defaults: Record<string, string> = {};
  if (since116 && !registrationCacheOn(chosen("MEM_EVENTS")) && chosen("RNDV_SCHEME") === undefined) defaults.RNDV_SCHEME = "put_zcopy";
  return defaults;
}

/**
 * Whether UCP gets its registration cache: only with UCX's memory events (UCX's default is on),
 * which ucx-ts turns off by default (UCX_MEM_EVENTS=no, library.ts says why).
 */
function registrationCacheOn(memEvents: string | undefined): boolean {
  return !["no", "n", "0", "off", "false"].includes((memEvents ?? "yes").toLowerCase());
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
