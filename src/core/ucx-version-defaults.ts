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
 * reset. ucx-ts's endpoints use peer error handling by default, so on UCX >= 1.16 a context
 * that asks for atomics selects protocols v1, as 1.13-1.15 do: atomics work there with error
 * handling (checked against a 1.16.0 built from its tag). docs/upstream-reports.md section 4.
 */
import { ucx } from "./library.ts";
import { ucxVersion } from "./version.ts";

/**
 * `atomics`: the context asks for UCP_FEATURE_AMO32 or AMO64; `overrides`: its `config` option.
 * `version` and `inEnvironment` default to the loaded library's version and the C environment
 * UCX reads (getenv, which sees what the shell set; Bun's `process.env` it does not).
 */
export function ucxVersionDefaults(
  atomics: boolean,
  overrides: Readonly<Record<string, string | number | boolean>>,
  version: { readonly major: number; readonly minor: number } = ucxVersion(),
  inEnvironment: (name: string) => boolean = (name) => ucx().getenv(name) !== 0,
): Record<string, string> {
  const chosen = (name: string) => Object.keys(overrides).some((k) => k.replace(/^UCX_/, "") === name) || inEnvironment(`UCX_${name}`);
  const protocolsV2ByDefault = version.major > 1 || (version.major === 1 && version.minor >= 16);
  const defaults: Record<string, string> = {};
  if (atomics && protocolsV2ByDefault && !chosen("PROTO_ENABLE")) defaults.PROTO_ENABLE = "n";
  return defaults;
}
