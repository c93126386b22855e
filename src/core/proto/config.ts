/**
 * Protocol configuration: where the costs come from and what the user forces. Sources, later
 * ones winning: the built-in defaults (protocols.ts), the calibration file (`ucx-ts calibrate`),
 * the environment (`UCX_TS_PROTO_*`), the Worker's `protocols` option.
 *
 * Environment:
 *   UCX_TS_PROTO=<protocol>                 force one protocol for every operation
 *   UCX_TS_PROTO_TAG_SEND=<protocol>        ... for one operation (also _STREAM_SEND)
 *   UCX_TS_PROTO_COST_<PROTOCOL>=<c>,<m>    a cost line: c in µs, m in µs per byte
 *   UCX_TS_PROTO_CALIBRATION=<path>|none    the calibration file to read (or none)
 *   UCX_TS_PROTO_BOUNCE_CHUNK=<bytes>       bounce chunk size (0: no bounce pool)
 *   UCX_TS_PROTO_BOUNCE_CHUNKS=<count>      chunks in the pool
 *   UCX_TS_PROTO_REG_MAX_BYTES=<bytes>      most bytes the registration cache keeps registered
 *   UCX_TS_PROTO_REG_MAX_BUFFER=<bytes>     largest buffer it registers (0: no zcopy-reg)
 *   UCX_TS_PROTO_INFO=1                     print the selection tables when a worker starts
 */
import process from "node:process";
import { invalidArgument } from "../errors.ts";
import { isCost, type Cost } from "./cost.ts";
import { OPERATIONS, SEND_PROTOCOLS, type Operation, type SendProtocol } from "./protocols.ts";

export interface ProtocolOptions {
  /** Use this protocol wherever it can serve (one for all operations, or per operation). */
  readonly force?: SendProtocol | Partial<Record<Operation, SendProtocol>>;
  /** Cost lines that replace the defaults and the calibration's. */
  readonly costs?: Partial<Record<SendProtocol, Cost>>;
  /** The calibration file to read, or false for none (default: see calibration.ts). */
  readonly calibration?: string | false;
  /** Bounce pool: chunk size in bytes (0 turns bounce off) and number of chunks. */
  readonly bounce?: { readonly chunkSize?: number; readonly chunks?: number };
  /** Registration cache (zcopy-reg): most bytes registered at once, largest buffer registered (0: off). */
  readonly registration?: { readonly maxBytes?: number; readonly maxBuffer?: number };
  /** Print the selection tables when the worker starts (as UCX_PROTO_INFO=y does). */
  readonly info?: boolean;
}

export interface ResolvedProtocolConfig {
  readonly force: Partial<Record<Operation, SendProtocol>>;
  readonly costs: Partial<Record<SendProtocol, Cost>>;
  readonly calibration: string | false | undefined;
  readonly bounceChunkSize: number;
  readonly bounceChunks: number;
  readonly registrationMaxBytes: number;
  readonly registrationMaxBuffer: number;
  readonly info: boolean;
}

export const DEFAULT_BOUNCE = { chunkSize: 64 * 1024, chunks: 32 };
export const DEFAULT_REGISTRATION = { maxBytes: 2 ** 30, maxBuffer: 256 * 2 ** 20 };

function protocolName(value: string, where: string): SendProtocol {
  if (!(SEND_PROTOCOLS as readonly string[]).includes(value)) {
    throw invalidArgument(`${where}: unknown protocol '${value}' (one of ${SEND_PROTOCOLS.join(", ")})`);
  }
  return value as SendProtocol;
}

function count(value: unknown, where: string, min: number, max: number): number {
  const n = typeof value === "string" ? Number(value) : value;
  if (typeof n !== "number" || !Number.isInteger(n) || n < min || n > max) throw invalidArgument(`${where} must be an integer from ${min} to ${max}, got ${String(value)}`);
  return n;
}

function parseCost(value: string, where: string): Cost {
  const parts = value.split(",").map((s) => Number(s.trim()));
  const cost = { c: parts[0]!, m: parts[1]! };
  if (parts.length !== 2 || !isCost(cost)) throw invalidArgument(`${where} must be "<c>,<m>" (µs, µs per byte, both >= 0), got '${value}'`);
  return cost;
}

function fromForce(force: ProtocolOptions["force"], where: string): Partial<Record<Operation, SendProtocol>> {
  if (force === undefined) return {};
  if (typeof force === "string") {
    const p = protocolName(force, where);
    return Object.fromEntries(OPERATIONS.map((op) => [op, p]));
  }
  const out: Partial<Record<Operation, SendProtocol>> = {};
  for (const [op, p] of Object.entries(force)) {
    if (!(OPERATIONS as readonly string[]).includes(op)) throw invalidArgument(`${where}: unknown operation '${op}' (one of ${OPERATIONS.join(", ")})`);
    if (p !== undefined) out[op as Operation] = protocolName(p, `${where}.${op}`);
  }
  return out;
}

/** The environment's settings, as options. */
export function optionsFromEnv(env: Record<string, string | undefined> = process.env): ProtocolOptions {
  const force: Partial<Record<Operation, SendProtocol>> = {};
  if (env.UCX_TS_PROTO) Object.assign(force, fromForce(protocolName(env.UCX_TS_PROTO, "UCX_TS_PROTO"), "UCX_TS_PROTO"));
  for (const op of OPERATIONS) {
    const key = `UCX_TS_PROTO_${op.toUpperCase().replace("-", "_")}`;
    if (env[key]) force[op] = protocolName(env[key]!, key);
  }
  const costs: Partial<Record<SendProtocol, Cost>> = {};
  for (const p of SEND_PROTOCOLS) {
    const key = `UCX_TS_PROTO_COST_${p.toUpperCase().replace("-", "_")}`;
    if (env[key]) costs[p] = parseCost(env[key]!, key);
  }
  const cal = env.UCX_TS_PROTO_CALIBRATION;
  const bounce: { chunkSize?: number; chunks?: number } = {};
  if (env.UCX_TS_PROTO_BOUNCE_CHUNK) bounce.chunkSize = count(env.UCX_TS_PROTO_BOUNCE_CHUNK, "UCX_TS_PROTO_BOUNCE_CHUNK", 0, 2 ** 30);
  if (env.UCX_TS_PROTO_BOUNCE_CHUNKS) bounce.chunks = count(env.UCX_TS_PROTO_BOUNCE_CHUNKS, "UCX_TS_PROTO_BOUNCE_CHUNKS", 1, 65536);
  const registration: { maxBytes?: number; maxBuffer?: number } = {};
  if (env.UCX_TS_PROTO_REG_MAX_BYTES) registration.maxBytes = count(env.UCX_TS_PROTO_REG_MAX_BYTES, "UCX_TS_PROTO_REG_MAX_BYTES", 0, Number.MAX_SAFE_INTEGER);
  if (env.UCX_TS_PROTO_REG_MAX_BUFFER) registration.maxBuffer = count(env.UCX_TS_PROTO_REG_MAX_BUFFER, "UCX_TS_PROTO_REG_MAX_BUFFER", 0, Number.MAX_SAFE_INTEGER);
  const info = env.UCX_TS_PROTO_INFO;
  return {
    force,
    costs,
    calibration: cal === undefined || cal === "" ? undefined : cal === "none" ? false : cal,
    bounce,
    registration,
    info: info !== undefined && info !== "" && !/^(0|n|no|false)$/i.test(info),
  };
}

/** Merge the environment's settings with the Worker's (the Worker's win) and check them. */
export function resolveProtocolConfig(options: ProtocolOptions = {}, env: ProtocolOptions = optionsFromEnv()): ResolvedProtocolConfig {
  const costs: Partial<Record<SendProtocol, Cost>> = { ...env.costs };
  for (const [p, cost] of Object.entries(options.costs ?? {})) {
    protocolName(p, "protocols.costs");
    if (!isCost(cost)) throw invalidArgument(`protocols.costs.${p} must be { c, m } with both finite and >= 0`);
    costs[p as SendProtocol] = cost;
  }
  const chunkSize = count(options.bounce?.chunkSize ?? env.bounce?.chunkSize ?? DEFAULT_BOUNCE.chunkSize, "protocols.bounce.chunkSize", 0, 2 ** 30);
  const chunks = count(options.bounce?.chunks ?? env.bounce?.chunks ?? DEFAULT_BOUNCE.chunks, "protocols.bounce.chunks", 1, 65536);
  if (chunkSize * chunks > 2 ** 31) throw invalidArgument("protocols.bounce: the pool may be at most 2 GiB");
  const regBytes = count(options.registration?.maxBytes ?? env.registration?.maxBytes ?? DEFAULT_REGISTRATION.maxBytes, "protocols.registration.maxBytes", 0, Number.MAX_SAFE_INTEGER);
  const regBuffer = count(options.registration?.maxBuffer ?? env.registration?.maxBuffer ?? DEFAULT_REGISTRATION.maxBuffer, "protocols.registration.maxBuffer", 0, Number.MAX_SAFE_INTEGER);
  return {
    force: { ...fromForce(env.force, "UCX_TS_PROTO"), ...fromForce(options.force, "protocols.force") },
    costs,
    calibration: options.calibration ?? env.calibration,
    bounceChunkSize: chunkSize,
    bounceChunks: chunks,
    registrationMaxBytes: regBytes,
    registrationMaxBuffer: regBuffer,
    info: options.info ?? env.info ?? false,
  };
}
