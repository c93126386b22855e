// Runs test/run.ts under Node (through tsx), Deno and Bun in turn, then prints the total of
// their closing lines. Usage: node scripts/run-tests.mjs [node|deno|bun ...] [-- filter]
import { spawnSync } from "node:child_process";

const bin = "node_modules/.bin";
const runners = {
  node: ["node", "--import", "tsx", "test/run.ts"],
  deno: [`${bin}/deno`, "run", "-A", "test/run.ts"],
  bun: [`${bin}/bun`, "test/run.ts"],
};
const argv = process.argv.slice(2);
const dash = argv.indexOf("--");
const chosen = (dash < 0 ? argv : argv.slice(0, dash)).filter((a) => a in runners);
const filter = dash < 0 ? [] : argv.slice(dash + 1);
const names = chosen.length > 0 ? chosen : Object.keys(runners);

let passed = 0;
let failed = 0;
let skipped = 0;
for (const name of names) {
  const [cmd, ...args] = runners[name];
  console.log(`\n== tests under ${name}`);
  // A whole runtime's run is bounded so one hang cannot eat CI's time.
  const r = spawnSync(cmd, [...args, ...filter], { stdio: ["ignore", "pipe", "inherit"], encoding: "utf8", timeout: 20 * 60_000 });
  process.stdout.write(r.stdout ?? "");
  const closing = /^(\w+): (\d+) passed, (\d+) failed, (\d+) skipped$/m.exec(r.stdout ?? "");
  if (!closing) {
    console.log(`${name}: runner ended without a closing line (status ${r.status}, signal ${r.signal}${r.error ? `, ${r.error.message}` : ""})`);
    failed += 1;
    continue;
  }
  passed += Number(closing[2]);
  failed += Number(closing[3]) + (r.status === 0 || Number(closing[3]) > 0 ? 0 : 1);
  skipped += Number(closing[4]);
}
console.log(`\ntotal: ${passed} passed, ${failed} failed, ${skipped} skipped`);
process.exit(failed > 0 ? 1 : 0);
