/**
 * A worker's protocol selector: one selection table per (operation, buffer type), built from
 * the protocol definitions, the worker's limits and the configured costs; rebuilt only when the
 * configuration changes. `select` is the data path: for host-contiguous memory (the only buffer
 * type today, and UCX's "fast path without a hash") it walks a short array.
 */
import type { ProgressMode } from "../engine/engine.ts";
import { loadCalibratedCosts, defaultCalibrationPath } from "./calibration.ts";
import type { Cost } from "./cost.ts";
import { resolveProtocolConfig, type ProtocolOptions, type ResolvedProtocolConfig } from "./config.ts";
import {
  bufferTypeKey,
  DEFAULT_COSTS,
  HOST_CONTIG,
  OPERATIONS,
  SEND_PROTOCOL_DEFINITIONS,
  type BufferType,
  type Operation,
  type ProtocolLimits,
  type SendProtocol,
} from "./protocols.ts";
import { buildTable, MAX_SIZE, type Candidate, type Selection } from "./selection.ts";

/** Where each protocol's cost came from, for proto-info. */
export type CostSource = "default" | "calibration" | "configuration";

export interface SelectionReport {
  readonly operation: Operation;
  readonly bufferType: string;
  readonly table: readonly Selection<SendProtocol>[];
  /** Every candidate, with its range and cost, including those that won nowhere. */
  readonly candidates: readonly (Candidate<SendProtocol> & { source: CostSource })[];
}

interface FastTable {
  readonly max: Float64Array;
  readonly protocols: SendProtocol[];
}

export class ProtocolSelector {
  private config!: ResolvedProtocolConfig;
  private reports: SelectionReport[] = [];
  /** Host-contiguous tables by operation, as parallel arrays. */
  private fast = new Map<Operation, FastTable>();
  /** Where the calibration came from (path), if a file was read. */
  calibrationPath: string | undefined;

  /** The bounds of the protocols' ranges, fixed by the first configuration (the pool's chunk size). */
  limits!: ProtocolLimits;

  constructor(
    readonly mode: ProgressMode,
    /** Bytes a submission record can carry (inline's maximum). */
    inlineCapacity: number,
    options: ProtocolOptions = {},
  ) {
    this.configure(options, inlineCapacity);
  }

  /** The resolved configuration (force, costs, bounce pool) the tables were built from. */
  get configuration(): ResolvedProtocolConfig {
    return this.config;
  }

  /**
   * Rebuild the tables for new options (the environment is read again too). The bounce pool
   * exists once the worker runs: its size stays what the first configuration said.
   */
  configure(options: ProtocolOptions = {}, inlineCapacity: number = this.limits?.inlineCapacity ?? 0): void {
    let config = resolveProtocolConfig(options);
    // The bounce pool and the registration cache exist once the worker runs: their sizes stay.
    if (this.limits) {
      const c = this.config;
      config = { ...config, bounceChunkSize: c.bounceChunkSize, bounceChunks: c.bounceChunks, registrationMaxBytes: c.registrationMaxBytes, registrationMaxBuffer: c.registrationMaxBuffer };
    }
    const limits = { inlineCapacity, bounceChunkSize: config.bounceChunkSize, maxRegistration: config.registrationMaxBuffer };
    const path = config.calibration === false ? undefined : (config.calibration ?? defaultCalibrationPath());
    const calibrated = path ? loadCalibratedCosts(path, this.mode) : {};
    this.calibrationPath = path && Object.keys(calibrated).length > 0 ? path : undefined;
    const reports: SelectionReport[] = [];
    const fast = new Map<Operation, FastTable>();
    for (const operation of OPERATIONS) {
      const report = this.build(operation, HOST_CONTIG, config, calibrated, limits);
      reports.push(report);
      fast.set(operation, { max: Float64Array.from(report.table, (e) => e.maxSize), protocols: report.table.map((e) => e.protocol) });
    }
    // Swap in only when every table built: a bad configuration leaves the old tables in place.
    this.config = config;
    this.limits = limits;
    this.reports = reports;
    this.fast = fast;
  }

  private build(
    operation: Operation,
    bufferType: BufferType,
    config: ResolvedProtocolConfig,
    calibrated: Partial<Record<SendProtocol, Cost>>,
    limits: ProtocolLimits,
  ): SelectionReport {
    const candidates: (Candidate<SendProtocol> & { source: CostSource })[] = [];
    const key = bufferTypeKey(bufferType);
    for (const def of SEND_PROTOCOL_DEFINITIONS) {
      if (!def.operations.includes(operation) || !def.bufferTypes.some((t) => bufferTypeKey(t) === key)) continue;
      const range = def.range(limits);
      if (!range) continue;
      const configured = config.costs[def.name];
      const fromFile = calibrated[def.name];
      const cost = configured ?? fromFile ?? DEFAULT_COSTS[this.mode][def.name];
      const source: CostSource = configured ? "configuration" : fromFile ? "calibration" : "default";
      candidates.push({ protocol: def.name, cost, ...range, forced: config.force[operation] === def.name, source });
    }
    return { operation, bufferType: key, table: buildTable(candidates, MAX_SIZE), candidates };
  }

  /** The protocol for a host-contiguous message of `size` bytes. */
  select(operation: Operation, size: number): SendProtocol {
    const t = this.fast.get(operation)!;
    const max = t.max;
    let i = 0;
    while (size > max[i]!) i++; // the last entry is MAX_SIZE: the walk always stops
    return t.protocols[i]!;
  }

  /** The tables, for proto-info. */
  describe(): readonly SelectionReport[] {
    return this.reports;
  }
}
