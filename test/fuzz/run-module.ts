/**
 * Child process for test/fuzz/hostile-peer-input.test.ts: runs the named fuzz modules one after
 * another in one process (two workers, thread or polling mode) and prints one JSON line per
 * module. A module that finds a wrong outcome throws: the process exits 1 naming the module and
 * the seed; one that crashes the process (an abort in UCX) shows as a signal.
 *
 *   run-module.ts <mode> <seed> <module>...
 * UCX_TS_FUZZ_SECONDS: time per module (default 0.5); a floor of inputs each whatever the time.
 */
import process from "node:process";
import { makeContext, type FuzzContext, type FuzzReport } from "./context.ts";
import { fuzzMultiHeaders } from "./multi-header.ts";
import { fuzzAmHeaders } from "./am-header.ts";
import { fuzzRkeys } from "./rkey.ts";
import { fuzzHello } from "./hello.ts";
import { fuzzTransferProtocol } from "./transfer-protocol.ts";
import { fuzzUcgBootstrap } from "./ucg-bootstrap.ts";
import { fuzzUctAddresses } from "./uct-address.ts";
import { fuzzAmAtomics } from "./am-atomic.ts";

/** Each module and the inputs it tries whatever the time (a session of the transfer protocol costs ~70 ms). */
const MODULES: Record<string, [(ctx: FuzzContext) => Promise<FuzzReport>, number]> = {
  "multi-header": [fuzzMultiHeaders, 100],
  "am-header": [fuzzAmHeaders, 100],
  rkey: [fuzzRkeys, 100],
  hello: [fuzzHello, 100],
  "transfer-protocol": [fuzzTransferProtocol, 16],
  "ucg-bootstrap": [fuzzUcgBootstrap, 300],
  "uct-address": [fuzzUctAddresses, 100],
  "am-atomic": [fuzzAmAtomics, 200],
};

const [mode = "thread", seedText = "1", ...names] = process.argv.slice(2);
const seconds = Number(process.env.UCX_TS_FUZZ_SECONDS || 0.5);
for (const name of names) {
  if (!MODULES[name]) throw new Error(`no fuzz module ${name}`);
  const [fuzz, minInputs] = MODULES[name];
  process.stderr.write(`fuzz ${name} (${mode}, seed ${seedText}) starting\n`);
  const ctx = await makeContext(Number(seedText), seconds * 1000, minInputs, mode as "thread");
  const started = Date.now();
  const report = await fuzz(ctx);
  await ctx.close();
  console.log(JSON.stringify({ module: name, ms: Date.now() - started, ...report }));
}
process.exit(0);
