/** The collectives (UCG), as the package exports them. */
export { UcgContext, configRegistry, type UcgContextOptions } from "./context.ts";
export { Group, type PlanCacheStats } from "./group.ts";
export { CollectiveRequest, type CollectiveSpec, type StartOptions, type CollectiveResult } from "./request.ts";
export { detectRte, parseRootAddress, type Rte } from "./rte.ts";
export { defineOp, PREDEFINED_OPS, type OpLike, type UserOp, type PredefinedOpName, type Combine } from "./op.ts";
export { DATATYPES, datatypeOf, type DatatypeName, type CollectiveArray } from "./datatype.ts";
export { COLLECTIVES, COLL_TYPES, type CollType } from "./coll-type.ts";
export { makeHeader, parseHeader } from "./channel.ts";
export { PLAN_TEMPLATES, DECISION_TREES, prune, decide, formatTree, templateOf, type DecisionTree } from "./ppool.ts";
export { launch, type LaunchOptions, type LaunchResult } from "./launcher.ts";
