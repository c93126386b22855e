/**
 * `Context`: one `ucp_context_h`, the UCX application context (features, configuration,
 * memory types). Workers are created from it.
 */
import { MEMORY_TYPE_NAMES, UCX_CONSTANTS as C, type Pointer } from "../ffi/index.ts";
import { invalidArgument, UcxError, withUcxReasons } from "./errors.ts";
import { captureLog, ucxReasons } from "./log-capture.ts";
import { check, ucx } from "./library.ts";
import { OutSlots } from "./out-slots.ts";
import { capturePrint } from "./print-capture.ts";

export type Feature = "tag" | "rma" | "amo32" | "amo64" | "wakeup" | "stream" | "am";

const FEATURE_BITS: Record<Feature, number> = {
  tag: C.UCP_FEATURE_TAG,
  rma: C.UCP_FEATURE_RMA,
  amo32: C.UCP_FEATURE_AMO32,
  amo64: C.UCP_FEATURE_AMO64,
  wakeup: C.UCP_FEATURE_WAKEUP,
  stream: C.UCP_FEATURE_STREAM,
  am: C.UCP_FEATURE_AM,
};

export const DEFAULT_FEATURES: readonly Feature[] = ["tag", "stream", "wakeup", "am", "rma", "amo32", "amo64"];

export type MemoryTypeName = (typeof MEMORY_TYPE_NAMES)[number];

export interface ContextOptions {
  /** UCP features to request; default tag, stream, wakeup, am and rma. */
  readonly features?: readonly Feature[];
  /**
   * UCX configuration overrides, as UCX_* environment variables would give them, with or
   * without the `UCX_` prefix: `{ TLS: "tcp", NET_DEVICES: "lo" }`. They apply to this context
   * only and win over the environment.
   */
  readonly config?: Readonly<Record<string, string | number | boolean>>;
  /** A name UCX uses in its logs. */
  readonly name?: string;
}

export class Context {
  #handle: Pointer;
  readonly features: readonly Feature[];

  constructor(options: ContextOptions = {}) {
    const u = ucx();
    this.features = [...(options.features ?? DEFAULT_FEATURES)];
    let featureBits = 0;
    for (const f of this.features) {
      const bit = FEATURE_BITS[f];
      if (bit === undefined) throw invalidArgument(`unknown UCP feature '${f}' (known: ${Object.keys(FEATURE_BITS).join(", ")})`);
      featureBits |= bit;
    }

    const params = u.struct("ucp_params_t");
    const name = options.name === undefined ? undefined : new TextEncoder().encode(options.name + "\0");
    params.set("field_mask", C.UCP_PARAM_FIELD_FEATURES | (name ? C.UCP_PARAM_FIELD_NAME : 0));
    params.set("features", featureBits);
    if (name) params.set("name", u.addressOf(name));

    // UCX says why it refuses a configuration only in its log (a transport that does not
    // exist, a value it cannot parse): the error carries those lines (log-capture.ts).
    const made = captureLog(() => {
      const config = readConfig(options.config ?? {});
      try {
        const out = new OutSlots(1);
        check(
          u.ucp_init_version(C.UCP_API_MAJOR, C.UCP_API_MINOR, u.addressOf(params.bytes), config, out.address()),
          "ucp_init",
        );
        return out.pointer();
      } finally {
        if (config !== 0) u.ucp_config_release(config);
      }
    });
    if (made.error !== undefined) {
      throw made.error instanceof UcxError ? withUcxReasons(made.error, ucxReasons(made.log)) : made.error;
    }
    this.#handle = made.value!;
    void name; // held until here: UCX copies the name during ucp_init
  }

  /** The raw `ucp_context_h`; throws once the context is closed. */
  get handle(): Pointer {
    if (this.#handle === 0) throw new UcxError("UCX_TS_CLOSED", "the UCX context is closed");
    return this.#handle;
  }

  get closed(): boolean {
    return this.#handle === 0;
  }

  /** Memory types this context can move data from and to (`host`, and `cuda` with CUDA transports). */
  get memoryTypes(): MemoryTypeName[] {
    const u = ucx();
    const attr = u.struct("ucp_context_attr_t");
    attr.set("field_mask", C.UCP_ATTR_FIELD_MEMORY_TYPES);
    check(u.ucp_context_query(this.handle, u.addressOf(attr.bytes)), "ucp_context_query");
    const mask = BigInt(attr.get("memory_types"));
    return MEMORY_TYPE_NAMES.filter((_, i) => (mask >> BigInt(i)) & 1n);
  }

  /** What `ucp_context_print_info` prints: configuration, memory domains, resources. */
  printInfo(): string {
    const h = this.handle;
    return capturePrint((file) => ucx().ucp_context_print_info(h, file));
  }

  /** Release the context. Idempotent. Workers made from it must be closed first. */
  close(): void {
    if (this.#handle === 0) return;
    ucx().ucp_cleanup(this.#handle);
    this.#handle = 0;
  }

  [Symbol.dispose](): void {
    this.close();
  }
}

/**
 * A `ucp_config_t *` with the overrides applied, or NULL when there are none.
 */
function readConfig(overrides: Readonly<Record<string, string | number | boolean>>): Pointer {
  const entries = Object.entries(overrides);
  if (entries.length === 0) return 0;
  const u = ucx();
  const out = new OutSlots(1);
  check(u.ucp_config_read(null, null, out.address()), "ucp_config_read");
  const config = out.pointer();
  try {
    for (const [key, value] of entries) {
      const name = key.replace(/^UCX_/, "");
      const text = typeof value === "boolean" ? (value ? "y" : "n") : String(value);
      check(u.ucp_config_modify(config, name, text), `UCX config ${name}=${text}`);
    }
  } catch (e) {
    u.ucp_config_release(config);
    throw e;
  }
  return config;
}
