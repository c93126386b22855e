/**
 * What UCX logged while `fn` ran. UCX explains a refusal in its log, not in the status it
 * returns: `TLS=nosuch` gives UCS_ERR_NO_DEVICE and, on stdout, "transport 'nosuch' is not
 * available, please use one or more of: ...". Its log goes to fd 1 (UCX_LOG_FILE's default):
 * for the call, fd 1 is lent to an in-memory file; afterwards what was written there is copied
 * back to the real fd 1, so the user sees UCX's lines as before, and the caller gets them too.
 * Anything else this process wrote to fd 1 meanwhile goes through the same copy, late but whole.
 * Used around rare calls only (making a context), never on the data path.
 */
import { ucx } from "./library.ts";

/** UCX's own words from its log lines: WARN and ERROR text without the timestamp and source prefix. */
export function ucxReasons(log: string): string[] {
  const out: string[] = [];
  for (const line of log.split("\n")) {
    const m = /\bUCX\s+(?:ERROR|WARN)\s+(.*\S)/.exec(line);
    if (m) out.push(m[1]!);
  }
  return out;
}

export function captureLog<T>(fn: () => T): { value?: T; error?: unknown; log: string } {
  const u = ucx();
  const STDOUT = 1;
  u.fflush(0); // what stdio holds now belongs before the capture
  const file = u.memfd_create("ucx-ts-log", 0);
  const saved = file < 0 ? -1 : u.dup(STDOUT);
  if (saved < 0 || u.dup2(file, STDOUT) < 0) {
    // No capture here (an old kernel, no descriptors left): run it all the same.
    if (saved >= 0) u.close(saved);
    if (file >= 0) u.close(file);
    try {
      return { value: fn(), log: "" };
    } catch (error) {
      return { error, log: "" };
    }
  }
  let result: { value?: T; error?: unknown };
  try {
    result = { value: fn() };
  } catch (error) {
    result = { error };
  } finally {
    u.fflush(0);
    u.dup2(saved, STDOUT);
    u.close(saved);
  }
  const chunks: Uint8Array[] = [];
  const chunk = new Uint8Array(64 * 1024);
  for (let at = 0; ; ) {
    const n = Number(u.pread(file, u.addressOf(chunk), chunk.length, at));
    if (n <= 0) break;
    chunks.push(chunk.slice(0, n));
    at += n;
  }
  u.close(file);
  let log = "";
  for (const c of chunks) {
    u.write(STDOUT, u.addressOf(c), c.length); // back where it was going
    log += new TextDecoder().decode(c);
  }
  return { ...result, log };
}
