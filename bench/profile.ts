/**
 * Where the time of one 8 B send+receive goes (issue 21), for one progress mode, on the runtime
 * that runs this file. One worker sends to itself through an endpoint to its own address (no
 * peer to wait for: every microsecond is this process's), `rounds` times: post a receive, send,
 * await both. Prints one JSON line.
 *
 *   <runtime> bench/profile.ts <mode> [rounds]                    wall time only (p50, p99)
 *   UCX_TS_PROFILE=1 <runtime> bench/profile.ts <mode> [rounds]   plus the breakdown
 *   <runtime> bench/profile.ts <mode> [rounds] --allocation      bytes allocated per round instead
 *   ... --am                         an active message per round instead (amSend, taken with
 *                                    worker.amRecv and released; UCXX's format, AM id 0)
 *   ... --requests                   recvRequest + sendRequest + progress() until done (polling
 *                                    or blocking: UcxRequests, no Promise but the round's own)
 *   ... --size=N                     N-byte messages instead of 8 (tag rounds)
 *
 * With --allocation the rounds run in chunks of 50, and a chunk's growth of the used heap
 * is what it allocated unless a collection ran inside it (the heap then shrinks or grows less):
 * the median chunk is taken (Node and Deno; not Bun). Load does not change these counts. On
 * Node it also runs V8's sampling heap profiler (objects the collector freed included) over
 * 20,000 more rounds and lists the functions that allocate the most, per round.
 *
 * With UCX_TS_PROFILE=1 (src/core/profile.ts) the application thread's time is split into
 * exclusive phases, and every C call is counted and timed. The time of a trivial C call
 * (ucs_status_string) through the same wrapped function table is measured too, so that the C
 * calls' time can be split into the runtime's per-call cost (count x that) and UCX's own.
 * `npm run bench -- --profile` runs this per runtime and mode, with and without the flag.
 */
import { Worker, type ProgressMode } from "../src/index.ts";
import { ucx } from "../src/core/library.ts";
import { copyTotals, functionNames, PHASE_NAMES, PROFILING, profileSnapshot, resetProfile } from "../src/core/profile.ts";

const args = process.argv.slice(2).filter((a) => !a.startsWith("--"));
const mode = (args[0] ?? "polling") as ProgressMode;
const rounds = Number(args[1] ?? 10000);
const WARM = 2000;

const worker = await Worker.create({ progressMode: mode, errorHandling: "none" });
const self = await worker.settled(worker.connect(await worker.settled(worker.address())));
const sizeArg = process.argv.find((a) => a.startsWith("--size="));
const size = sizeArg === undefined ? 8 : Number(sizeArg.slice("--size=".length));
if (!Number.isInteger(size) || size < 0) throw new Error(`--size=N takes a byte count, got ${sizeArg}`);
const out = new Uint8Array(size);
const into = new Uint8Array(size);

/** One send+receive through the endpoint to ourselves. */
async function tagOnce(): Promise<void> {
  const r = worker.recv(into, 3);
  await worker.settled(self.send(out, 3));
  await worker.settled(r);
}

/** --am: one active message to ourselves, taken and given back. */
async function amOnce(): Promise<void> {
  const r = worker.amRecv();
  await worker.settled(self.amSend(out));
  (await worker.settled(r)).release();
}

/** --requests: the send+receive through UcxRequests and progress() (polling, blocking: no Promise). */
async function requestOnce(): Promise<void> {
  const r = worker.recvRequest(into, 3);
  self.sendRequest(out, 3);
  while (!r.done) worker.progress();
}

const once = process.argv.includes("--am") ? amOnce : process.argv.includes("--requests") ? requestOnce : tagOnce;

for (let i = 0; i < WARM; i++) await once();

if (process.argv.includes("--allocation")) {
  for (let i = 0; i < 10 * WARM; i++) await once(); // optimised code, grown tables
  process.stdout.write(JSON.stringify({ mode, ...(once === amOnce ? { operation: "am" } : {}), rounds, ...(await allocation()) }) + "\n");
  await worker.close();
  process.exit(0);
}

/** Bytes allocated per round (see the head of this file). */
async function allocation(): Promise<Record<string, unknown>> {
  // JavaScriptCore's heap size moves in blocks, not by what was allocated.
  if ("Bun" in globalThis) return { bytesPerRound: null, note: "not measurable on Bun (its heap size does not count allocation)" };
  // Small chunks: a runtime with a small young generation (Deno's) collects every few hundred
  // KB, and the median must come from chunks without a collection.
  const CHUNK = 50;
  const perRound: number[] = [];
  for (let c = 0; c < rounds / CHUNK; c++) {
    const before = process.memoryUsage().heapUsed;
    for (let i = 0; i < CHUNK; i++) await once();
    const grew = process.memoryUsage().heapUsed - before;
    if (grew > 0) perRound.push(grew / CHUNK);
  }
  perRound.sort((a, b) => a - b);
  const result: Record<string, unknown> = { chunks: perRound.length, bytesPerRound: Math.round(perRound[perRound.length >> 1] ?? NaN) };
  if ("Deno" in globalThis) return result;
  interface Frame {
    callFrame: { functionName: string; url: string; lineNumber: number };
    selfSize: number;
    children: Frame[];
  }
  const { Session } = await import("node:inspector/promises");
  const session = new Session();
  session.connect();
  await session.post("HeapProfiler.enable");
  const sampling = { samplingInterval: 64, includeObjectsCollectedByMajorGC: true, includeObjectsCollectedByMinorGC: true };
  await session.post("HeapProfiler.startSampling", sampling as never);
  const sampled = 20000;
  for (let i = 0; i < sampled; i++) await once();
  const { profile } = (await session.post("HeapProfiler.stopSampling")) as unknown as { profile: { head: Frame } };
  session.disconnect();
  const bySite = new Map<string, number>();
  const walk = (n: Frame): void => {
    const key = `${n.callFrame.functionName || "(anonymous)"} ${n.callFrame.url.replace(/^.*\/(src|bench)\//, "$1/")}`;
    if (n.selfSize > 0) bySite.set(key, (bySite.get(key) ?? 0) + n.selfSize);
    for (const c of n.children) walk(c);
  };
  walk(profile.head);
  result.sites = [...bySite]
    .sort((a, b) => b[1] - a[1])
    .slice(0, 16)
    .map(([site, bytes]) => `${Math.round(bytes / sampled)} B ${site}`);
  return result;
}

/**
 * The cost of one trivial C call through the (wrapped, when profiling) table, in us:
 * ucs_status_string(UCS_OK), a table lookup in libucs returning a pointer, like the tag calls.
 * The fastest of 20 batches: on a shared machine a batch's mean carries whatever preempted it.
 */
function trivialCallUs(): number {
  const u = ucx();
  const n = 10000;
  let best = Infinity;
  for (let batch = 0; batch < 21; batch++) {
    resetProfile();
    const t0 = performance.now();
    for (let i = 0; i < n; i++) u.ucs_status_string(0);
    const wall = ((performance.now() - t0) * 1000) / n;
    // Profiling: as the wrapper saw it (its own timestamps included, like every call it times).
    const seen = PROFILING ? (profileSnapshot().calls.ucs_status_string!.ms * 1000) / n : wall;
    if (batch > 0) best = Math.min(best, seen); // batch 0 warms the call up
  }
  return best;
}
const callUs = trivialCallUs();

resetProfile();
const takeover0 = worker.takeoverStats;
const us = new Float64Array(rounds);
// Profiling: the running totals after every round, to take each phase's median over rounds.
const width = PHASE_NAMES.length + functionNames().length;
const totals = new Float64Array(PROFILING ? (rounds + 1) * width : 0);
if (PROFILING) copyTotals(totals, 0);
const cpu0 = process.cpuUsage();
const t0 = performance.now();
for (let i = 0; i < rounds; i++) {
  const t = performance.now();
  await once();
  us[i] = (performance.now() - t) * 1000;
  if (PROFILING) copyTotals(totals, (i + 1) * width);
}
const totalUs = (performance.now() - t0) * 1000;
const cpu = process.cpuUsage(cpu0);
const snapshot = PROFILING ? profileSnapshot() : undefined;
us.sort();
const at = (q: number) => us[Math.min(rounds - 1, Math.floor(q * rounds))]!;

const result: Record<string, unknown> = {
  mode,
  ...(once === amOnce ? { operation: "am" } : once === requestOnce ? { operation: "requests" } : {}),
  rounds,
  profiling: PROFILING,
  meanUs: totalUs / rounds,
  // The process's CPU time per round (all its threads): below meanUs, the rest was waiting.
  cpuUs: (cpu.user + cpu.system) / rounds,
  p50Us: at(0.5),
  p90Us: at(0.9),
  p99Us: at(0.99),
  p999Us: at(0.999),
  maxUs: us[rounds - 1],
  trivialCallUs: callUs,
};
// Thread mode with takeover: its counts per round (who drove UCX, event-loop turns, parks).
const takeover = worker.takeoverStats;
if (takeover && takeover0) result.takeoverPerRound = Object.fromEntries(Object.entries(takeover).map(([k, v]) => [k, (v - takeover0[k as keyof typeof takeover]) / rounds]));
if (snapshot) {
  /** Median over rounds of column `c`'s growth in one round, in us. */
  const median = (c: number) => {
    const d = new Float64Array(rounds);
    for (let i = 0; i < rounds; i++) d[i] = (totals[(i + 1) * width + c]! - totals[i * width + c]!) * 1000;
    d.sort();
    return d[rounds >> 1]!;
  };
  const mean = (ms: number) => (ms * 1000) / rounds;
  result.phasesUs = Object.fromEntries(PHASE_NAMES.map((name, c) => [name, { median: median(c), mean: mean(snapshot.phases[name]) }]));
  const names = functionNames();
  result.calls = Object.fromEntries(
    names
      .map((name, k) => [name, k] as const)
      .filter(([name]) => snapshot.calls[name]!.count > 0)
      .map(([name, k]) => [name, { perOp: snapshot.calls[name]!.count / rounds, usMedian: median(PHASE_NAMES.length + k), usMean: mean(snapshot.calls[name]!.ms) }]),
  );
}
process.stdout.write(JSON.stringify(result) + "\n");
await worker.close();
process.exit(0);
