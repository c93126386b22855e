/**
 * Checks `send` and `recv` make before any network work, so that a mistake in the command
 * fails at once, in one line, instead of after a peer has connected (where the peer would see
 * only a timeout or a lost endpoint).
 */
import { closeSync, existsSync, mkdirSync, openSync, rmSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import process from "node:process";
import { CommandFailure } from "../command-failure.ts";

/** A command that cannot start; exit status 1 with the message as its one line. */
export class PreflightError extends CommandFailure {
  override name = "PreflightError";
}

function reason(e: unknown): string {
  const code = (e as { code?: string }).code;
  return code ? `${code} (${(e as Error).message.replace(/^[A-Z]+: /, "").replace(/, \w+ '.*'$/, "")})` : String(e);
}

/**
 * The receiver's output folder exists (or is created) and takes a new file. Writing a probe is
 * the only honest test: permission bits say nothing under root, and a read-only mount or a full
 * disk show only when writing.
 */
export function checkOutputFolder(out: string): void {
  if (out === "-") return;
  if (existsSync(out) && !statSync(out).isDirectory()) throw new PreflightError(`cannot use --out ${out}: not a folder`);
  try {
    mkdirSync(out, { recursive: true });
  } catch (e) {
    throw new PreflightError(`cannot create --out ${out}: ${reason(e)}`);
  }
  const probe = join(out, `.ucx-ts-probe-${process.pid}`);
  try {
    writeFileSync(probe, "");
  } catch (e) {
    throw new PreflightError(`cannot write into --out ${out}: ${reason(e)}`);
  } finally {
    rmSync(probe, { force: true });
  }
}

/** Every file the sender will send opens for reading. */
export function checkReadable(files: readonly string[]): void {
  for (const file of files) {
    try {
      closeSync(openSync(file, "r"));
    } catch (e) {
      throw new PreflightError(`cannot read ${file}: ${reason(e)}`);
    }
  }
}
