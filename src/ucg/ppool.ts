/**
 * The plan pool (seed: "ppool"): the registered plan templates, and which one serves a call.
 * Selection is a decision tree (the seed replaced scoring by one) over named decision points:
 * member count (a power of two? at most N?), whether the op is commutative, message size. Tests
 * on the member count are settled once per group at its creation (`prune`), so a call only walks
 * what depends on its own arguments. `UCX_TS_<COLL>_PLAN=id[,id...]` limits a collective to the
 * plans with those stable ids: the tree's pick when it is allowed, else the first allowed plan
 * that can run the call.
 */
import { UcxError } from "../core/errors.ts";
import { COLLECTIVES, type CollType } from "./coll-type.ts";
import type { ConfigTable, ResolvedConfig } from "./config.ts";
import type { PlanTemplate } from "./plans/base/plan_base.ts";
import { rdAllreducePlan } from "./plans/recursive_doubling/rd_allreduce_plan.ts";
import { rdBarrierPlan } from "./plans/recursive_doubling/rd_barrier_plan.ts";
import { rdAllgatherPlan } from "./plans/recursive_doubling/rd_allgather_plan.ts";
import { rdReduceScatterPlan } from "./plans/recursive_doubling/rd_reduce_scatter_plan.ts";
import { knBcastPlan } from "./plans/knomial/kn_bcast_plan.ts";
import { dbtBcastPlan } from "./plans/dbt/dbt_bcast_plan.ts";
import { dbtReducePlan } from "./plans/dbt/dbt_reduce_plan.ts";
import { DBT_CONFIG } from "./plans/dbt/dbt.ts";
import { knReducePlan } from "./plans/knomial/kn_reduce_plan.ts";
import { knGatherPlan } from "./plans/knomial/kn_gather_plan.ts";
import { knScatterPlan } from "./plans/knomial/kn_scatter_plan.ts";
import { knBarrierPlan } from "./plans/knomial/kn_barrier_plan.ts";
import { KNOMIAL_CONFIG } from "./plans/knomial/knomial.ts";
import { ringAllreducePlan } from "./plans/ring/ring_allreduce_plan.ts";
import { sraAllreducePlan } from "./plans/sra/sra_allreduce_plan.ts";
import { sraKnomialAllreducePlan } from "./plans/sra/sra_knomial_allreduce_plan.ts";
import { SRA_CONFIG } from "./plans/sra/sra.ts";
import { swAllreducePlan } from "./plans/sliding_window/sw_allreduce_plan.ts";
import { SW_CONFIG } from "./plans/sliding_window/sliding_window.ts";
import { ringAllgatherPlan } from "./plans/ring/ring_allgather_plan.ts";
import { ringReduceScatterPlan } from "./plans/ring/ring_reduce_scatter_plan.ts";
import { pairwiseAlltoallPlan } from "./plans/pairwise/pairwise_alltoall_plan.ts";
import { bruckAlltoallPlan } from "./plans/bruck/bruck_alltoall_plan.ts";

/** Every built-in template, in registration order (config tables follow the same order). */
export const PLAN_TEMPLATES: readonly PlanTemplate[] = [
  rdBarrierPlan, knBarrierPlan,
  knBcastPlan, dbtBcastPlan,
  knReducePlan, dbtReducePlan,
  rdAllreducePlan, ringAllreducePlan, sraAllreducePlan, sraKnomialAllreducePlan, swAllreducePlan,
  rdAllgatherPlan, ringAllgatherPlan,
  knGatherPlan,
  knScatterPlan,
  pairwiseAlltoallPlan, bruckAlltoallPlan,
  ringReduceScatterPlan, rdReduceScatterPlan,
];

/** The context's selection thresholds: table "selection", prefix UCX_TS_UCG_. */
export const SELECTION_CONFIG: ConfigTable = {
  name: "selection",
  prefix: "UCX_TS_UCG_",
  fields: {
    ALLREDUCE_RING_BYTES: { default: 32 * 1024, min: 0, doc: "allreduce vectors above this many bytes take the ring (commutative ops)" },
    ALLGATHER_RING_BYTES: { default: 64 * 1024, min: 0, doc: "allgather results above this many bytes take the ring" },
    // The double binary trees pipeline in steps, each a wake-up of every process on this 2-core
    // VM's loopback tcp: there they lost to the k-nomial tree at every size measured (4 ranks,
    // bcast 1 MiB 18.5 ms against 3.7, 4 MiB 110 against 7.6; bench:ucg 2026-11-25), so they
    // are opt-in until a machine with cores to spare shows where they win.
    BCAST_DBT_BYTES: { default: 2 ** 40, min: 0, doc: "bcast data above this many bytes takes the double binary tree (from 3 members; default: never)" },
    REDUCE_DBT_BYTES: { default: 2 ** 40, min: 0, doc: "reduce vectors above this many bytes take the double binary tree (from 3 members, commutative ops; default: never)" },
    ALLTOALL_BRUCK_BYTES: { default: 256, min: 0, doc: "alltoall blocks up to this many bytes take Bruck (from 3 members)" },
    // The sliding window beat the tree's pick (ring at 2 ranks, SRA at 4) in 6 of 12 points at
    // 1 and 4 MiB over three runs and lost the other 6, within this 2-core VM's noise
    // (bench:ucg --allreduce-plans, 2026-11-26; docs/collectives.md has the table), so it is
    // opt-in: by this threshold, by UCX_TS_ALLREDUCE_PLAN=4 or spec.plan.
    ALLREDUCE_SW_BYTES: { default: 2 ** 40, min: 0, doc: "allreduce vectors above this many bytes take the sliding window (any op; default: never)" },
  },
};

/** The plan lists: table "plans", prefix UCX_TS_, variables UCX_TS_<COLL>_PLAN. */
export const PLAN_LIST_CONFIG: ConfigTable = {
  name: "plans",
  prefix: "UCX_TS_",
  fields: Object.fromEntries(COLLECTIVES.map((c) => [`${c.toUpperCase()}_PLAN`, { default: "", doc: `plan ids ${c} may use, comma-separated (default: all)` }])),
};

export const PLAN_CONFIG_TABLES: readonly ConfigTable[] = [PLAN_LIST_CONFIG, SELECTION_CONFIG, KNOMIAL_CONFIG, DBT_CONFIG, SRA_CONFIG, SW_CONFIG];

// --- the decision tree --------------------------------------------------------------------

/** A decision point. Those on the member count are settled per group (prune). */
export type DecisionPoint =
  | { readonly kind: "members_power_of_two" }
  | { readonly kind: "members_at_most"; readonly value: number }
  | { readonly kind: "commutative" }
  | { readonly kind: "bytes_at_most"; readonly threshold: string }
  | { readonly kind: "count_at_least_members" };

export type DecisionTree = { readonly plan: number } | { readonly point: DecisionPoint; readonly yes: DecisionTree; readonly no: DecisionTree };

const leaf = (plan: number): DecisionTree => ({ plan });
const ask = (point: DecisionPoint, yes: DecisionTree, no: DecisionTree): DecisionTree => ({ point, yes, no });

/** The trees, one per collective; leaves are plan ids of that collective. */
export const DECISION_TREES: Readonly<Record<CollType, DecisionTree>> = {
  barrier: ask({ kind: "members_power_of_two" }, leaf(0), leaf(1)),
  bcast: ask({ kind: "members_at_most", value: 2 }, leaf(0), ask({ kind: "bytes_at_most", threshold: "BCAST_DBT_BYTES" }, leaf(0), leaf(1))),
  reduce: ask(
    { kind: "members_at_most", value: 2 },
    leaf(0),
    ask({ kind: "commutative" }, ask({ kind: "bytes_at_most", threshold: "REDUCE_DBT_BYTES" }, leaf(0), leaf(1)), leaf(0)),
  ),
  allreduce: ask(
    { kind: "bytes_at_most", threshold: "ALLREDUCE_SW_BYTES" },
    ask(
      { kind: "commutative" },
      ask(
        { kind: "bytes_at_most", threshold: "ALLREDUCE_RING_BYTES" },
        leaf(0),
        // Large: the ring's n - 1 steps against SRA's 2 log2 n; SRA when no fold is needed.
        ask({ kind: "count_at_least_members" }, ask({ kind: "members_power_of_two" }, ask({ kind: "members_at_most", value: 2 }, leaf(1), leaf(2)), leaf(1)), leaf(0)),
      ),
      leaf(0),
    ),
    // Very large, any op (rank order kept for a non-commutative one): the sliding window.
    leaf(4),
  ),
  allgather: ask({ kind: "bytes_at_most", threshold: "ALLGATHER_RING_BYTES" }, leaf(0), leaf(1)),
  gather: leaf(0),
  scatter: leaf(0),
  alltoall: ask({ kind: "members_at_most", value: 2 }, leaf(0), ask({ kind: "bytes_at_most", threshold: "ALLTOALL_BRUCK_BYTES" }, leaf(1), leaf(0))),
  reduce_scatter: ask({ kind: "commutative" }, leaf(0), leaf(1)),
};

/** What a call brings to the tree. `bytes`: the vector for allreduce, the result for allgather, one block for alltoall. */
export interface CallFacts {
  readonly commutative: boolean;
  readonly bytes: number;
  readonly count: number;
}

/** The tree with every member-count question answered for `size` members. */
export function prune(tree: DecisionTree, size: number): DecisionTree {
  if ("plan" in tree) return tree;
  const p = tree.point;
  if (p.kind === "members_power_of_two") return prune((size & (size - 1)) === 0 ? tree.yes : tree.no, size);
  if (p.kind === "members_at_most") return prune(size <= p.value ? tree.yes : tree.no, size);
  return { point: p, yes: prune(tree.yes, size), no: prune(tree.no, size) };
}

export function decide(tree: DecisionTree, facts: CallFacts, size: number, thresholds: Readonly<Record<string, number | string>>): number {
  let t = tree;
  while (!("plan" in t)) {
    const p = t.point;
    const yes =
      p.kind === "commutative" ? facts.commutative
      : p.kind === "bytes_at_most" ? facts.bytes <= Number(thresholds[p.threshold])
      : p.kind === "count_at_least_members" ? facts.count >= size
      : p.kind === "members_power_of_two" ? (size & (size - 1)) === 0
      : size <= p.value;
    t = yes ? t.yes : t.no;
  }
  return t.plan;
}

export function describePoint(p: DecisionPoint, thresholds?: Readonly<Record<string, number | string>>): string {
  switch (p.kind) {
    case "members_power_of_two": return "member count a power of two?";
    case "members_at_most": return `member count <= ${p.value}?`;
    case "commutative": return "op commutative?";
    case "count_at_least_members": return "elements >= member count?";
    case "bytes_at_most": return `bytes <= ${thresholds ? thresholds[p.threshold] : ""} (UCX_TS_UCG_${p.threshold})?`;
  }
}

/** The tree as indented lines, leaves named. */
export function formatTree(coll: CollType, tree: DecisionTree, thresholds: Readonly<Record<string, number | string>>, indent = "  "): string[] {
  if ("plan" in tree) return [`${indent}-> ${tree.plan} ${templateOf(coll, tree.plan)?.name ?? "?"}`];
  return [
    `${indent}${describePoint(tree.point, thresholds)}`,
    `${indent}  yes:`, ...formatTree(coll, tree.yes, thresholds, indent + "    "),
    `${indent}  no:`, ...formatTree(coll, tree.no, thresholds, indent + "    "),
  ];
}

export function templateOf(coll: CollType, id: number): PlanTemplate | undefined {
  return PLAN_TEMPLATES.find((t) => t.coll === coll && t.id === id);
}

/** Parses `UCX_TS_<COLL>_PLAN`: "" = every plan, else ids that must exist. */
export function allowedPlans(coll: CollType, value: string | number | undefined): readonly number[] | undefined {
  const text = String(value ?? "").trim();
  if (text === "") return undefined;
  const ids = text.split(",").map((s) => Number(s.trim()));
  for (const id of ids) {
    if (!Number.isInteger(id) || !templateOf(coll, id)) {
      const known = PLAN_TEMPLATES.filter((t) => t.coll === coll).map((t) => `${t.id} (${t.name})`).join(", ");
      throw new UcxError("UCX_TS_INVALID_ARGUMENT", `UCX_TS_${coll.toUpperCase()}_PLAN=${text}: ${coll} has plans ${known}`);
    }
  }
  return ids;
}

/** The plan pool of a context: the trees pruned per member count, and the choice per call. */
export class PlanPool {
  private readonly pruned = new Map<number, Record<CollType, DecisionTree>>();

  constructor(private readonly config: ResolvedConfig) {
    // Check the plan lists at once: a typo in UCX_TS_<COLL>_PLAN fails at context creation.
    for (const c of COLLECTIVES) allowedPlans(c, this.config.table("plans")[`${c.toUpperCase()}_PLAN`]);
  }

  get thresholds(): Readonly<Record<string, number | string>> {
    return this.config.table("selection");
  }

  tunables(template: PlanTemplate): Readonly<Record<string, number>> {
    return (template.configTable ? this.config.table(template.configTable) : {}) as Readonly<Record<string, number>>;
  }

  /** The trees for groups of `size` members (done once per size, at group creation). */
  treesFor(size: number): Record<CollType, DecisionTree> {
    let trees = this.pruned.get(size);
    if (!trees) {
      trees = Object.fromEntries(COLLECTIVES.map((c) => [c, prune(DECISION_TREES[c], size)])) as Record<CollType, DecisionTree>;
      this.pruned.set(size, trees);
    }
    return trees;
  }

  select(coll: CollType, size: number, facts: CallFacts, forced?: number): PlanTemplate {
    const runnable = (t: PlanTemplate | undefined) => t !== undefined && (facts.commutative || !t.commutativeOnly);
    if (forced !== undefined) {
      const t = templateOf(coll, forced);
      if (!t) throw new UcxError("UCX_TS_INVALID_ARGUMENT", `${coll} has no plan ${forced} (ucx-ts ucg-info lists them)`);
      if (!runnable(t)) throw new UcxError("UCX_TS_UNSUPPORTED", `plan ${forced} (${t.name}) runs commutative ops only`);
      return t;
    }
    const pick = decide(this.treesFor(size)[coll], facts, size, this.thresholds);
    const allowed = allowedPlans(coll, this.config.table("plans")[`${coll.toUpperCase()}_PLAN`]);
    if (!allowed || allowed.includes(pick)) return templateOf(coll, pick)!;
    for (const id of allowed) {
      const t = templateOf(coll, id);
      if (runnable(t)) return t!;
    }
    throw new UcxError(
      "UCX_TS_UNSUPPORTED",
      `UCX_TS_${coll.toUpperCase()}_PLAN=${allowed.join(",")} allows no plan that can run this ${coll} (${facts.commutative ? "" : "non-"}commutative op)`,
    );
  }
}
