/**
 * The file-transfer protocol of `ucx-ts send` / `ucx-ts recv`: one endpoint, the sender is the
 * client. Everything the sender says is a tag message whose tag tells its kind; the receiver
 * keeps a window of receives posted with a mask that matches all kinds, so they are matched in
 * the order they were sent (UCX keeps one endpoint's messages with matching tags in order):
 *
 *   ENTRY  JSON: a directory to create, a file (or stdin) whose chunks follow, or "done"
 *   DATA   up to CHUNK bytes of the current file
 *   END    JSON: the file's byte count and SHA-256: the receiver compares, then renames the
 *          temporary file to its name (never a truncated file under the final name)
 *   ACK    receiver -> sender, JSON: the verdict on one file, or on the whole session
 */
import process from "node:process";

export const CHUNK = 1 << 20;
/** DATA messages in flight (sender) and receives posted (receiver): memory stays flat. */
export const WINDOW = 8;

const BASE = 0x75637874_0000; // "ucxt" in the high bits: apart from anything else on the worker
export const TAG = { ENTRY: BASE + 1, DATA: BASE + 2, END: BASE + 3, ACK: BASE + 16 } as const;
/** Matches ENTRY, DATA and END (low 4 bits free), not ACK. */
export const SENDER_MASK = 2 ** 48 - 16;

export type Entry =
  | { kind: "dir"; path: string; mode: number }
  | { kind: "file"; path: string; mode: number; size: number | null }
  | { kind: "done" }
  /** The sender cannot go on (a read failed): the receiver drops the partial file and says why. */
  | { kind: "abort"; reason: string };

export interface End {
  bytes: number;
  sha256: string;
}

export interface Ack {
  ok: boolean;
  path?: string;
  error?: string;
  /** The receiver cannot go on (a write failed): the sender stops and says why. */
  fatal?: boolean;
}

/** How long a side that failed waits to tell the other why before closing anyway. */
export const FAILURE_NOTICE_MS = 2_000;

/**
 * UCX_TS_TEST_FAIL_AFTER=N (tests only): the receiver's writes, or the sender's reads, fail once
 * N bytes of a file have passed, standing in for a full disk or a failing source.
 */
export function injectedFailureAfter(): number | undefined {
  const v = process.env.UCX_TS_TEST_FAIL_AFTER;
  return v === undefined ? undefined : Number(v);
}

const encoder = new TextEncoder();
const decoder = new TextDecoder();

export const encodeJson = (value: unknown): Uint8Array => encoder.encode(JSON.stringify(value));
export const decodeJson = <T>(bytes: Uint8Array): T => JSON.parse(decoder.decode(bytes)) as T;

/**
 * A relative path as sent on the wire ("a/b c/ü.txt"), checked before the receiver uses it:
 * no absolute paths, no "..", no empty or NUL-bearing components.
 */
export function safeRelativePath(path: string): string {
  const parts = path.split("/");
  if (path.startsWith("/") || parts.some((p) => p === "" || p === "." || p === ".." || p.includes("\0"))) {
    throw new Error(`refusing the path '${path}': only relative paths inside the output folder are accepted`);
  }
  return path;
}
