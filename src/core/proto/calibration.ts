/**
 * The calibration file: cost lines measured on this machine by `ucx-ts calibrate`, per progress
 * mode and protocol. Read when a worker starts (never on the data path); a file that cannot be
 * read as one is reported once on stderr and ignored, so a stale file never stops a worker.
 *
 * Where: `UCX_TS_PROTO_CALIBRATION`, else `$XDG_CACHE_HOME/ucx-ts/calibration.json`, else
 * `~/.cache/ucx-ts/calibration.json`.
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { homedir } from "node:os";
import { dirname, join } from "node:path";
import process from "node:process";
import { isProgressMode, type ProgressMode } from "../engine/engine.ts";
import { isCost, type Cost } from "./cost.ts";
import { SEND_PROTOCOLS, type SendProtocol } from "./protocols.ts";

export const CALIBRATION_FORMAT = "ucx-ts-calibration/1";

export interface Calibration {
  readonly format: typeof CALIBRATION_FORMAT;
  /** ISO date of the run. */
  readonly date: string;
  readonly host: string;
  readonly cores: number;
  readonly ucx: string;
  readonly runtime: string;
  readonly modes: Partial<Record<ProgressMode, Partial<Record<SendProtocol, Cost>>>>;
}

export function defaultCalibrationPath(env: Record<string, string | undefined> = process.env): string {
  const cache = env.XDG_CACHE_HOME || join(homedir(), ".cache");
  return join(cache, "ucx-ts", "calibration.json");
}

/** Parse and check a calibration file's text; throws a RangeError saying what is wrong. */
export function parseCalibration(text: string): Calibration {
  const o = JSON.parse(text) as Calibration;
  if (o?.format !== CALIBRATION_FORMAT) throw new RangeError(`not a ${CALIBRATION_FORMAT} file`);
  if (typeof o.modes !== "object" || o.modes === null) throw new RangeError("no 'modes' object");
  for (const [mode, costs] of Object.entries(o.modes)) {
    if (!isProgressMode(mode)) throw new RangeError(`unknown progress mode '${mode}'`);
    for (const [p, cost] of Object.entries(costs ?? {})) {
      if (!(SEND_PROTOCOLS as readonly string[]).includes(p)) throw new RangeError(`unknown protocol '${p}' in mode ${mode}`);
      if (!isCost(cost)) throw new RangeError(`bad cost for ${mode}/${p}`);
    }
  }
  return o;
}

const warned = new Set<string>();

/**
 * The costs the file at `path` gives for `mode`: `{}` when there is no file, or when it is not
 * a calibration file (said once on stderr).
 */
export function loadCalibratedCosts(path: string, mode: ProgressMode): Partial<Record<SendProtocol, Cost>> {
  if (!existsSync(path)) return {};
  try {
    return parseCalibration(readFileSync(path, "utf8")).modes[mode] ?? {};
  } catch (e) {
    if (!warned.has(path)) {
      warned.add(path);
      process.stderr.write(`ucx-ts: ignoring calibration file ${path}: ${(e as Error).message} (run \`ucx-ts calibrate\` again)\n`);
    }
    return {};
  }
}

export function saveCalibration(path: string, calibration: Calibration): void {
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(path, JSON.stringify(calibration, null, 2) + "\n");
}
