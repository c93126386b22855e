/**
 * The one argument parser of the CLI: node:util's parseArgs (built into Node, Deno and Bun, no
 * dependency), strict, so every command gets the same grammar: `--opt value`, `--opt=value`,
 * short flags, `--` before positionals, and a one-line UsageError (exit 2) for anything it does
 * not know. Commands declare their options as a table and read typed values back.
 */
import { parseArgs, type ParseArgsConfig } from "node:util";

/** A mistake in how the command was called; exits with status 2. */
export class UsageError extends Error {
  override name = "UsageError";
}

export type OptionSpec = NonNullable<ParseArgsConfig["options"]>;

export interface Parsed {
  readonly values: Record<string, string | boolean | (string | boolean)[] | undefined>;
  readonly positionals: string[];
}

/**
 * Parses `args` of `command` against `options`. `positionals` bounds how many plain arguments
 * the command takes (default none). Errors read `<command>: <what>`.
 */
export function parseCommandArgs(command: string, args: readonly string[], options: OptionSpec, positionals: { min?: number; max?: number } = {}): Parsed {
  let parsed: Parsed;
  try {
    parsed = parseArgs({ args: [...args], options, strict: true, allowPositionals: (positionals.max ?? 0) > 0 });
  } catch (e) {
    throw new UsageError(`${command}: ${describeParseError(e)}`);
  }
  const min = positionals.min ?? 0;
  const max = positionals.max ?? 0;
  if (parsed.positionals.length < min) throw new UsageError(`${command}: needs ${min === 1 ? "an argument" : `${min} arguments`}`);
  if (parsed.positionals.length > max) throw new UsageError(`${command}: unexpected argument '${parsed.positionals[max]}'`);
  return parsed;
}

/** parseArgs' messages are long and differ between runtimes: one short line of our own. */
function describeParseError(e: unknown): string {
  const message = e instanceof Error ? e.message : String(e);
  const code = (e as { code?: string }).code;
  const option = /'(-{1,2}[^' ]+)/.exec(message)?.[1];
  switch (code) {
    case "ERR_PARSE_ARGS_UNKNOWN_OPTION":
      return `unknown option ${option ?? message}`;
    case "ERR_PARSE_ARGS_INVALID_OPTION_VALUE":
      return option ? `${option} ${/argument missing/.test(message) ? "needs a value" : "takes no value"}` : message.split("\n")[0]!;
    case "ERR_PARSE_ARGS_UNEXPECTED_POSITIONAL":
      return `unexpected argument ${/'([^']*)'/.exec(message)?.[0] ?? ""}`.trim();
    default:
      return message.split("\n")[0]!;
  }
}

/** A string option's value, or `fallback`. */
export function stringOption(p: Parsed, name: string): string | undefined {
  const v = p.values[name];
  return typeof v === "string" ? v : undefined;
}

/** A boolean flag. */
export function flag(p: Parsed, name: string): boolean {
  return p.values[name] === true;
}

/** A string option restricted to `choices`. */
export function choiceOption<T extends string>(command: string, p: Parsed, name: string, choices: readonly T[]): T | undefined {
  const v = stringOption(p, name);
  if (v === undefined) return undefined;
  if (!(choices as readonly string[]).includes(v)) throw new UsageError(`${command}: --${name} must be ${listWords(choices)}, got '${v}'`);
  return v as T;
}

/** "a, b or c" */
export function listWords(words: readonly string[]): string {
  return words.length <= 1 ? (words[0] ?? "") : `${words.slice(0, -1).join(", ")} or ${words[words.length - 1]}`;
}
