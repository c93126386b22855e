// A script for `ucx-ts run` tests: prints its rank variables; with PROBE_FAIL_RANK=r, rank r exits
// with status 3 after a moment while the others would run forever (the launcher must stop them);
// with PROBE_CPUS=1, only the CPUs it may run on (its affinity: the launcher's binding) and the
// collectives' progress mode it was started with (UCX_TS_UCG_PROGRESS, "unset" when absent).
import process from "node:process";
import { readFileSync } from "node:fs";
if (process.env.PROBE_CPUS === "1") {
  console.log(`cpus=${/^Cpus_allowed_list:\s*(\S+)/m.exec(readFileSync("/proc/self/status", "utf8"))?.[1]} progress=${process.env.UCX_TS_UCG_PROGRESS || "unset"}`);
  process.exit(0);
}
const rank = Number(process.env.UCX_TS_RANK);
console.log(`rank=${process.env.UCX_TS_RANK} size=${process.env.UCX_TS_SIZE} root=${process.env.UCX_TS_ROOT_ADDR} args=${process.argv.slice(2).join(",")}`);
console.error(`to stderr from ${rank}`);
const failing = process.env.PROBE_FAIL_RANK;
if (failing !== undefined) {
  if (Number(failing) === rank) setTimeout(() => process.exit(3), 300);
  else setInterval(() => {}, 1000);
}
