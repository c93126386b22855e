/**
 * `ucx-ts proto-info`: the protocol selection tables this configuration gives.
 * `ucx-ts calibrate`: measure each send protocol's cost line on this machine and store them.
 */
import { cpus, hostname } from "node:os";
import process from "node:process";
import { ProtocolSelector } from "../../core/proto/selector.ts";
import { formatProtoInfo, formatCostAligned, formatSize } from "../../core/proto/report.ts";
import { CALIBRATION_FORMAT, defaultCalibrationPath, saveCalibration, type Calibration } from "../../core/proto/calibration.ts";
import { SEND_PROTOCOLS, type SendProtocol } from "../../core/proto/protocols.ts";
import { INLINE_CAPACITY } from "../../core/engine/records.ts";
import { isProgressMode, PROGRESS_MODES as MODES, type ProgressMode } from "../../core/engine/engine.ts";
import type { Cost } from "../../core/proto/cost.ts";
import { ucxVersion } from "../../core/version.ts";
import { runtime } from "../../ffi/index.ts";
import { choiceOption, flag, listWords, parseCommandArgs, stringOption, UsageError } from "../args.ts";
import { measureProtocol } from "./measure.ts";

export const protoInfoHelp = `Usage: ucx-ts proto-info [--mode thread|polling|blocking|hybrid] [--json]

Print the protocol selection tables a worker in this progress mode would build (default:
thread), as UCX_PROTO_INFO=y does for UCX: for each operation (tag-send, stream-send) and
buffer type, the size ranges, the protocol chosen for each (inline, bounce, zcopy), its
estimated time and bandwidth, and its cost line with where that came from (built-in default,
the calibration file, or configuration). It reads the same environment as a worker:

  UCX_TS_PROTO=<protocol>               force a protocol wherever it can serve
  UCX_TS_PROTO_TAG_SEND=<protocol>      ... for one operation (also UCX_TS_PROTO_STREAM_SEND)
  UCX_TS_PROTO_COST_<PROTOCOL>=<c>,<m>  a cost line: c in us, m in us per byte
  UCX_TS_PROTO_CALIBRATION=<path>|none  the calibration file (default ${defaultCalibrationPath()})
  UCX_TS_PROTO_BOUNCE_CHUNK=<bytes>     bounce chunk size (0: no bounce protocol)
  UCX_TS_PROTO_INFO=1                   workers print these tables when they start

Examples:
  npx ucx-ts proto-info
  UCX_TS_PROTO_TAG_SEND=zcopy npx ucx-ts proto-info --mode polling`;

export const calibrateHelp = `Usage: ucx-ts calibrate [--modes thread,polling,blocking,hybrid] [--out PATH] [--quick] [--dry-run]

Measure the cost line (time = c + m * size) of each send protocol in each progress mode on
this machine: two workers in this process, the protocol forced, 16 sends in flight, sizes
across the protocol's range, best of 3 runs, least-squares fit. Prints the points and lines,
writes them to the calibration file (default ${defaultCalibrationPath()}, or
UCX_TS_PROTO_CALIBRATION) which workers read when they start, then prints the tables.

Options:
  --modes LIST   progress modes to calibrate (default: all four)
  --out PATH     where to write (default as above)
  --quick        fewer sizes and messages (a few seconds; noisier)
  --dry-run      measure and print, write nothing`;

function parseMode(v: string | undefined): ProgressMode {
  if (!isProgressMode(v)) throw new UsageError(`calibrate: --modes takes a list of ${listWords(MODES)}, got '${v ?? ""}'`);
  return v;
}

export function protoInfoCommand(args: readonly string[], write: (t: string) => void): number {
  const p = parseCommandArgs("proto-info", args, { mode: { type: "string" }, json: { type: "boolean" } });
  const mode: ProgressMode = choiceOption("proto-info", p, "mode", MODES) ?? "thread";
  const json = flag(p, "json");
  const selector = new ProtocolSelector(mode, INLINE_CAPACITY);
  if (json) {
    write(JSON.stringify({ mode, calibration: selector.calibrationPath ?? null, tables: selector.describe() }, null, 2));
  } else write(formatProtoInfo(selector).trimEnd());
  return 0;
}

export async function calibrateCommand(args: readonly string[], write: (t: string) => void): Promise<number> {
  const p = parseCommandArgs("calibrate", args, { modes: { type: "string" }, out: { type: "string" }, quick: { type: "boolean" }, "dry-run": { type: "boolean" } });
  const modesText = stringOption(p, "modes");
  const modes: ProgressMode[] = modesText === undefined ? [...MODES] : modesText.split(",").map((m) => parseMode(m));
  const out = stringOption(p, "out") ?? (process.env.UCX_TS_PROTO_CALIBRATION && process.env.UCX_TS_PROTO_CALIBRATION !== "none" ? process.env.UCX_TS_PROTO_CALIBRATION : defaultCalibrationPath());
  if (!out) throw new UsageError("calibrate: --out needs a path");
  const quick = flag(p, "quick");
  const dry = flag(p, "dry-run");
  const result: Calibration["modes"] = {};
  for (const mode of modes) {
    const costs: Partial<Record<SendProtocol, Cost>> = {};
    write(`progress mode ${mode}:`);
    for (const protocol of SEND_PROTOCOLS) {
      const { points, cost } = await measureProtocol(mode, protocol, { quick });
      costs[protocol] = cost;
      const shown = points.map((p) => `${formatSize(p.size)} ${p.time.toFixed(2)}`).join(", ");
      write(`  ${protocol.padEnd(9)} ${formatCostAligned(cost)}   (us per message: ${shown})`);
    }
    result[mode] = costs;
  }
  const v = ucxVersion();
  const calibration: Calibration = {
    format: CALIBRATION_FORMAT,
    date: new Date().toISOString(),
    host: hostname(),
    cores: cpus().length,
    ucx: `${v.major}.${v.minor}.${v.release}`,
    runtime,
    modes: result,
  };
  if (!dry) {
    saveCalibration(out, calibration);
    write(`\nwrote ${out}`);
  }
  for (const mode of modes) {
    const selector = new ProtocolSelector(mode, INLINE_CAPACITY, dry ? { costs: result[mode] } : { calibration: out });
    write("");
    write(formatProtoInfo(selector).trimEnd());
  }
  return 0;
}
