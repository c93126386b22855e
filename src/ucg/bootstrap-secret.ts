/**
 * Who may join a job's bootstrap. Rank 0's bootstrap listener is an open TCP port for as long as
 * the bootstrap runs: without a secret, any process that reaches it and speaks the hello could
 * claim a rank (and be sent every worker address). With one, the bootstrap's hellos run the
 * challenge-response of authenticated listeners (core/hello/auth.ts): a process without the
 * secret is refused and never counted. The secret comes from, in order:
 *   UcgContext.create({ auth: { secret } }),
 *   UCX_TS_BOOTSTRAP_SECRET_FILE (a file only its owner can read: core/hello/secret-file.ts),
 *   UCX_TS_BOOTSTRAP_SECRET (the secret itself, e.g. `mpirun -x UCX_TS_BOOTSTRAP_SECRET`).
 * `ucx-ts run` makes a fresh random one per job when neither variable is set (launcher.ts).
 */
import { randomBytes } from "node:crypto";
import type { HelloAuthOptions } from "../core/hello/auth.ts";
import { readSecretFile } from "../core/hello/secret-file.ts";

export const SECRET_VARIABLE = "UCX_TS_BOOTSTRAP_SECRET";
export const SECRET_FILE_VARIABLE = "UCX_TS_BOOTSTRAP_SECRET_FILE";

type Env = Readonly<Record<string, string | undefined>>;

/** The bootstrap's authentication, or undefined for an open bootstrap (no secret anywhere). */
export function bootstrapAuth(env: Env, explicit?: HelloAuthOptions): HelloAuthOptions | undefined {
  if (explicit !== undefined) return explicit;
  const file = env[SECRET_FILE_VARIABLE];
  if (file) return { secret: readSecretFile(file) };
  const secret = env[SECRET_VARIABLE];
  return secret ? { secret } : undefined;
}

/** A job's fresh secret for its ranks' environment, unless the job names one already. */
export function jobSecretEnv(env: Env): Record<string, string> {
  if (env[SECRET_FILE_VARIABLE] || env[SECRET_VARIABLE]) return {};
  return { [SECRET_VARIABLE]: randomBytes(32).toString("hex") };
}
