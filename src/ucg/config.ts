/**
 * Configuration (seed: "configurable"). Two kinds of table: the context's (which plans each
 * collective may use, the selection thresholds) and each algorithm's own tunables, defined beside
 * its plans. The tables know nothing of each other, so the registry checks what the seed asks:
 * unique table names, unique prefixes, and no variable defined twice (so a full variable name
 * names one table: found by the prefix whose table defines the rest of the name, longest first).
 * Values come from, last wins: the defaults, the environment, the context's `config` option.
 */
import { UcxError } from "../core/errors.ts";

export interface ConfigField {
  readonly default: number | string;
  readonly doc: string;
  readonly min?: number;
  readonly max?: number;
}
export interface ConfigTable {
  readonly name: string;
  readonly prefix: string;
  readonly fields: Readonly<Record<string, ConfigField>>;
}

export class ConfigRegistry {
  private readonly tables: ConfigTable[] = [];

  add(table: ConfigTable): void {
    for (const t of this.tables) {
      if (t.name === table.name) throw new UcxError("UCX_TS_INVALID_ARGUMENT", `config table '${table.name}' is defined twice`);
      if (t.prefix === table.prefix) throw new UcxError("UCX_TS_INVALID_ARGUMENT", `config tables '${t.name}' and '${table.name}' share the prefix ${table.prefix}`);
      for (const f of Object.keys(table.fields)) {
        if (Object.keys(t.fields).some((g) => t.prefix + g === table.prefix + f)) {
          throw new UcxError("UCX_TS_INVALID_ARGUMENT", `config variable ${table.prefix + f} is defined by '${t.name}' and '${table.name}'`);
        }
      }
    }
    this.tables.push(table);
  }

  list(): readonly ConfigTable[] {
    return this.tables;
  }

  /** The table and field of a full variable name, found by its prefix. */
  find(variable: string): { table: ConfigTable; field: string } | undefined {
    const table = [...this.tables].sort((a, b) => b.prefix.length - a.prefix.length).find((t) => variable.startsWith(t.prefix) && Object.hasOwn(t.fields, variable.slice(t.prefix.length)));
    return table ? { table, field: variable.slice(table.prefix.length) } : undefined;
  }

  /**
   * Every table's values from the defaults, then `env` (only the variables of a table), then
   * `overrides` (full variable names; an unknown one is refused so that a typo does not pass).
   */
  resolve(env: Readonly<Record<string, string | undefined>>, overrides: Readonly<Record<string, string | number>> = {}): ResolvedConfig {
    const values = new Map<string, Record<string, number | string>>();
    for (const t of this.tables) {
      const v: Record<string, number | string> = {};
      for (const [f, def] of Object.entries(t.fields)) {
        const raw = env[t.prefix + f];
        v[f] = raw === undefined || raw === "" ? def.default : parseValue(t.prefix + f, raw, def);
      }
      values.set(t.name, v);
    }
    for (const [variable, raw] of Object.entries(overrides)) {
      const hit = this.find(variable);
      if (!hit) throw new UcxError("UCX_TS_INVALID_ARGUMENT", `unknown collectives config variable ${variable}`);
      values.get(hit.table.name)![hit.field] = parseValue(variable, String(raw), hit.table.fields[hit.field]!);
    }
    return { table: (name) => values.get(name) ?? {} };
  }
}

export interface ResolvedConfig {
  table(name: string): Readonly<Record<string, number | string>>;
}

function parseValue(variable: string, raw: string, field: ConfigField): number | string {
  if (typeof field.default === "string") return raw.trim();
  const m = /^\s*([0-9.eE+]+)\s*(kib|mib|k|m)?\s*$/i.exec(raw);
  const unit = { k: 1e3, m: 1e6, kib: 1024, mib: 1048576 }[(m?.[2] ?? "").toLowerCase() as "k"] ?? 1;
  const value = m ? Number(m[1]) * unit : NaN;
  if (!Number.isFinite(value) || (field.min !== undefined && value < field.min) || (field.max !== undefined && value > field.max)) {
    throw new UcxError("UCX_TS_INVALID_ARGUMENT", `${variable}=${raw}: expected a number${field.min !== undefined ? ` from ${field.min}` : ""}${field.max !== undefined ? ` to ${field.max}` : ""}`);
  }
  return value;
}
