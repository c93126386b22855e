/**
 * The transfer protocol's JSON messages (wire.ts) as they arrive from the peer: checked field by
 * field, so that any bytes a peer sends end in UCX_TS_PROTOCOL_ERROR naming what was wrong, never
 * a TypeError deep in the receiver, a path outside the output folder, or a mode with bits it must
 * not have. Sizes are bounded by the receive buffers (CHUNK), so nothing here can grow.
 */
import { UcxError } from "../../core/errors.ts";
import { safeRelativePath, type Ack, type End, type Entry } from "./wire.ts";

function protocol(what: string, why: string): UcxError {
  return new UcxError("UCX_TS_PROTOCOL_ERROR", `transfer protocol: ${what} ${why}`);
}

function parseObject(bytes: Uint8Array, what: string): Record<string, unknown> {
  let value: unknown;
  try {
    value = JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(bytes));
  } catch (e) {
    throw protocol(what, `is not UTF-8 JSON (${(e as Error).message})`);
  }
  if (value === null || typeof value !== "object" || Array.isArray(value)) throw protocol(what, "is not a JSON object");
  return value as Record<string, unknown>;
}

const isCount = (v: unknown): v is number => typeof v === "number" && Number.isSafeInteger(v) && v >= 0;
const isMode = (v: unknown): v is number => typeof v === "number" && Number.isInteger(v) && v >= 0 && v <= 0o7777;

export function decodeEntry(bytes: Uint8Array): Entry {
  const o = parseObject(bytes, "ENTRY");
  if (o.kind === "done") return { kind: "done" };
  if (o.kind === "abort") {
    if (typeof o.reason !== "string") throw protocol("ENTRY", "abort has no reason");
    return { kind: "abort", reason: o.reason.slice(0, 4096) };
  }
  if (o.kind !== "dir" && o.kind !== "file") throw protocol("ENTRY", `has kind ${JSON.stringify(o.kind)}; it must be dir, file, done or abort`);
  if (typeof o.path !== "string") throw protocol("ENTRY", "has no path");
  let path: string;
  try {
    path = safeRelativePath(o.path);
  } catch (e) {
    throw protocol("ENTRY", (e as Error).message);
  }
  if (!isMode(o.mode)) throw protocol("ENTRY", `has mode ${JSON.stringify(o.mode)}; it must be 0 to 0o7777`);
  if (o.kind === "dir") return { kind: "dir", path, mode: o.mode };
  if (o.size !== null && !isCount(o.size)) throw protocol("ENTRY", `has size ${JSON.stringify(o.size)}; it must be a byte count or null`);
  return { kind: "file", path, mode: o.mode, size: o.size };
}

export function decodeEnd(bytes: Uint8Array): End {
  const o = parseObject(bytes, "END");
  if (!isCount(o.bytes)) throw protocol("END", `has bytes ${JSON.stringify(o.bytes)}; it must be a byte count`);
  if (typeof o.sha256 !== "string" || !/^[0-9a-f]{64}$/.test(o.sha256)) throw protocol("END", "has no SHA-256 in hex");
  return { bytes: o.bytes, sha256: o.sha256 };
}

export function decodeAck(bytes: Uint8Array): Ack {
  const o = parseObject(bytes, "ACK");
  if (typeof o.ok !== "boolean") throw protocol("ACK", "has no boolean ok");
  if (o.path !== undefined && typeof o.path !== "string") throw protocol("ACK", "has a path that is not a string");
  if (o.error !== undefined && typeof o.error !== "string") throw protocol("ACK", "has an error that is not a string");
  if (o.fatal !== undefined && typeof o.fatal !== "boolean") throw protocol("ACK", "has a fatal flag that is not a boolean");
  return {
    ok: o.ok,
    ...(o.path === undefined ? {} : { path: o.path }),
    ...(o.error === undefined ? {} : { error: String(o.error).slice(0, 4096) }),
    ...(o.fatal === true ? { fatal: true } : {}),
  };
}
