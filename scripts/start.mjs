// `npm start`: the main job. Until the transfer demo lands, it prints the info report.
import { spawnSync } from "node:child_process";
const r = spawnSync("node", ["bin/ucx-ts.mjs", "info"], { stdio: "inherit" });
process.exit(r.status ?? 1);
