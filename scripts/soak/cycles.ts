/**
 * Worker create/close cycles alone in a fresh process (worker-cycles.ts, what the soak runs after
 * its traffic), for telling a per-worker leak from allocator retention without minutes of soak
 * first: prints the cycle report as JSON, with the line through RSS after trim, malloc in use and
 * the JS heap every 20 cycles after warm-up. glibc's settings come from the environment (the soak
 * fixes the thresholds itself; here try MALLOC_ARENA_MAX=1, MALLOC_TRIM_THRESHOLD_=131072, ...).
 *
 *   node --expose-gc --import tsx scripts/soak/cycles.ts [cycles=1000] [polling|thread|hybrid|blocking]
 */
import process from "node:process";
import type { ProgressMode } from "../../src/index.ts";
import { workerCycles } from "./worker-cycles.ts";
import { allocatorEnv } from "./allocator.ts";

const [cyclesArg = "1000", modeArg = "polling"] = process.argv.slice(2);
const report = await workerCycles(Number(cyclesArg), modeArg as ProgressMode);
console.log(JSON.stringify({ allocator: allocatorEnv(), ...report }));
process.exit(0);
