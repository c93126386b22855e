/**
 * A hello secret kept in a file (the CLI's `--secret-file`, the collectives' bootstrap
 * `UCX_TS_BOOTSTRAP_SECRET_FILE`). Like ssh with its keys, a file that other users can read or
 * change is refused: the secret would be theirs too. One trailing newline is not part of the
 * secret, so `openssl rand -hex 32 > FILE` works as written.
 */
import { readFileSync, statSync } from "node:fs";
import { invalidArgument } from "../errors.ts";
import { MIN_SECRET_BYTES } from "./auth.ts";

/** The secret in `path`, or UCX_TS_INVALID_ARGUMENT saying why it cannot be used. */
export function readSecretFile(path: string): Uint8Array {
  let mode: number;
  let bytes: Uint8Array;
  try {
    mode = statSync(path).mode;
    bytes = new Uint8Array(readFileSync(path));
  } catch (e) {
    throw invalidArgument(`cannot read secret file ${path}: ${(e as Error).message}`);
  }
  if ((mode & 0o077) !== 0) throw invalidArgument(`secret file ${path} is accessible to other users (mode ${(mode & 0o777).toString(8)}); chmod 600 it`);
  let end = bytes.length;
  if (end > 0 && bytes[end - 1] === 0x0a) end--;
  if (end > 0 && bytes[end - 1] === 0x0d) end--;
  if (end < MIN_SECRET_BYTES) throw invalidArgument(`secret file ${path} holds ${end} bytes; at least ${MIN_SECRET_BYTES} random bytes are needed`);
  return bytes.subarray(0, end);
}
