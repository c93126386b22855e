// `npm start`: the main job, after scripts/setup has installed what is missing and built dist/.
// The transfer demo: two processes exchange verified tagged messages of growing size over UCX,
// timed against node:net (see `node bin/ucx-ts.mjs demo --help`). Extra arguments go to it:
// `npm start -- --mode polling --max-size 1MiB`.
import { spawnSync } from "node:child_process";
const r = spawnSync(process.execPath, ["bin/ucx-ts.mjs", "demo", ...process.argv.slice(2)], { stdio: "inherit" });
if (r.error) console.error(`npm start: ${r.error.message}`);
process.exit(r.status ?? 1);
