/**
 * `--secret-file FILE` of `ucx-ts send` / `ucx-ts recv`: the shared secret of the hello's
 * authentication (core/hello/auth.ts), read and checked by core/hello/secret-file.ts (a file
 * other users can read or change is refused); its refusal becomes the command's usage error.
 */
import { readSecretFile as readChecked } from "../../core/hello/secret-file.ts";
import { UcxError } from "../../core/errors.ts";
import { UsageError } from "../info-command.ts";

export function readSecretFile(path: string, command: string): Uint8Array {
  try {
    return readChecked(path);
  } catch (e) {
    if (e instanceof UcxError) throw new UsageError(`${command}: --secret-file: ${e.message}`);
    throw e;
  }
}
