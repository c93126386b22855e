/**
 * The collectives context's own settings from the environment (the plan and step tables are in
 * config.ts): the bootstrap's time limit, the worker's progress mode and whether ranks on one
 * host may use shared memory. Read here, once, and checked: a typo in a launcher script (a
 * timeout of "30s", a mode of "poll") is refused with the variable's name instead of becoming a
 * NaN timer that fires at once or a worker error that never says where the mode came from.
 */
import { invalidArgument } from "../core/errors.ts";
import { PROGRESS_MODES, type ProgressMode } from "../core/engine/engine.ts";

export const BOOTSTRAP_TIMEOUT_VARIABLE = "UCX_TS_BOOTSTRAP_TIMEOUT";
export const PROGRESS_VARIABLE = "UCX_TS_UCG_PROGRESS";
export const SHM_VARIABLE = "UCX_TS_UCG_SHM";

const DEFAULT_BOOTSTRAP_TIMEOUT_MS = 30_000;
const DEFAULT_PROGRESS: ProgressMode = "blocking";
const YES = ["1", "yes", "y", "true", "on"];
const NO = ["0", "no", "n", "false", "off"];

export interface ContextSettings {
  readonly bootstrapTimeoutMs: number;
  readonly progressMode: ProgressMode;
  readonly sharedMemory: boolean;
}

type Env = Readonly<Record<string, string | undefined>>;

/** The settings: an option given in code wins, then the environment, then the default; each is checked. */
export function contextSettings(env: Env, given: Partial<ContextSettings> = {}): ContextSettings {
  return {
    bootstrapTimeoutMs: checkedTimeout(given.bootstrapTimeoutMs ?? fromEnv(env, BOOTSTRAP_TIMEOUT_VARIABLE, parseTimeout) ?? DEFAULT_BOOTSTRAP_TIMEOUT_MS, "bootstrapTimeoutMs"),
    progressMode: given.progressMode ?? fromEnv(env, PROGRESS_VARIABLE, parseMode) ?? DEFAULT_PROGRESS,
    sharedMemory: given.sharedMemory ?? fromEnv(env, SHM_VARIABLE, parseBoolean) ?? true,
  };
}

/** An unset or empty variable is the default (undefined); a set one is parsed or refused by name. */
function fromEnv<T>(env: Env, variable: string, parse: (raw: string) => T | undefined): T | undefined {
  const raw = env[variable]?.trim();
  if (raw === undefined || raw === "") return undefined;
  const value = parse(raw);
  if (value === undefined) throw invalidArgument(`${variable}='${raw}' is not valid: ${HELP[variable]}`);
  return value;
}

const HELP: Record<string, string> = {
  [BOOTSTRAP_TIMEOUT_VARIABLE]: "give the bootstrap's time limit in milliseconds, a positive number below 2^31",
  [PROGRESS_VARIABLE]: `give one of ${PROGRESS_MODES.join(", ")} (default ${DEFAULT_PROGRESS})`,
  [SHM_VARIABLE]: `give ${YES.join("/")} or ${NO.join("/")}`,
};

function parseTimeout(raw: string): number | undefined {
  const ms = /^\d+(\.\d+)?$/.test(raw) ? Number(raw) : NaN;
  return validTimeout(ms) ? ms : undefined;
}

function parseMode(raw: string): ProgressMode | undefined {
  return PROGRESS_MODES.find((m) => m === raw.toLowerCase());
}

function parseBoolean(raw: string): boolean | undefined {
  const v = raw.toLowerCase();
  return YES.includes(v) ? true : NO.includes(v) ? false : undefined;
}

/** One bound for the variable and the option: positive, finite, within setTimeout's 2^31 - 1 ms. */
function validTimeout(ms: unknown): ms is number {
  return typeof ms === "number" && ms > 0 && Number.isFinite(ms) && ms <= 2 ** 31 - 1;
}

/** setTimeout takes NaN, negatives and Infinity as "at once": a bad limit would end every bootstrap before it starts. */
function checkedTimeout(ms: number, name: string): number {
  if (!validTimeout(ms)) {
    throw invalidArgument(`${name} must be a positive number of milliseconds below 2^31, got ${String(ms)}`);
  }
  return ms;
}
