/**
 * `npm run soak -- --minutes N`: mixed traffic between this process and 1 to 3 peer processes
 * (peer.ts) through authenticated hello connections: tag (single messages and sendMany / recvMany
 * windows), stream, multi-buffer and active-message echoes, put/get and fetch-add, sizes 0 B to 16 MiB, every byte checked; meanwhile faults are
 * injected at random: endpoints closed under traffic (the peer connects again), peer processes
 * killed with SIGKILL (a new one takes the slot), receives aborted. Every error must come from
 * a connection a fault was injected into, or be an injected abort; anything else (or a byte that
 * differs, or an operation that never ends) fails the soak. RSS and open file descriptors are
 * sampled throughout, with their growth per 100k operations after warm-up; then Worker
 * create/close cycles in this process. Prints a table and, last, one JSON line; exit 1 on failure.
 *
 * Options: --minutes N | --seconds N (default 1 minute), --peers 1..3 (default 2), --lanes N
 * (operations in flight, default 4), --cycles N (Worker create/close cycles per progress mode,
 * each worker serving its address and a memory mapping first, default 1000: worker-cycles.ts),
 * --cycle-modes polling,thread,hybrid (the modes cycled, one after the other; default these three),
 * --seed N, --fault-every-ms N (mean time between faults, default 2000; 0: no faults), --kinds
 * tag,stream,... (only these operation kinds; default all: to compare each kind's growth),
 * --max-size N (bytes; caps every payload, default 16 MiB), --collectives N (ranks per collectives
 * job, default 3; 0: none), --malloc fixed|dynamic (glibc's mmap and trim thresholds fixed at
 * 128 KiB in every process of the soak, the default, or left dynamic: allocator.ts), --gpu
 * stand-in|real|off (GPU traffic beside the host traffic, default off: gpu.ts), --gpu-max-size N
 * (bytes, default 4 MiB), --gpu-share F (the share of operations that are GPU ones, default 0.3), --gpu-kinds (some of gpu-tag,gpu-am,gpu-multi: what that share draws from). Meanwhile
 * jobs of N ranks run seeded random collectives, every result checked, some losing a rank to
 * SIGKILL (collectives.ts).
 *
 * The leak figure: every few seconds after warm-up (the first quarter) the lanes pause until
 * nothing is in flight and RSS is read after a GC and malloc_trim(0) ("at rest"); a least-squares
 * line through those readings against operations done gives the growth per 100k operations with
 * its 95 % interval (regression.ts), and the verdict says "under 1 MiB" only if the whole
 * interval is.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { readdirSync, readlinkSync } from "node:fs";
import { randomBytes } from "node:crypto";
import process from "node:process";
import { fileURLToPath } from "node:url";
import { Worker, UcxError, markCloseOnExec, runtime, type Endpoint, type Listener, type ProgressMode, PROGRESS_MODES } from "../../src/index.ts";
import { seededRandom } from "./random.ts";
import { decode, fromHex, OP_KINDS, type OpKind, TAG, toHex, type Intro, COUNTER_OFFSET } from "./protocol.ts";
import { anonymousGrowth, growth, leastOfThree, mappings, newSpaceMiB, round, rssByMapping, sample, SampleLog, type Mapping, type Sample } from "./samples.ts";
import { type Connection, CorruptionError, Lock, lingeringOps, runOp } from "./traffic.ts";
import { CYCLE_BOUND_MIB_PER_1000, workerCycles, type CycleReport } from "./worker-cycles.ts";
import { allocatorEnv, applyAllocator, type MallocChoice } from "./allocator.ts";
import { fitLine, verdict, type Fit } from "./regression.ts";
import { collectivesLane, type CollectivesReport } from "./collectives.ts";
import { outstandingDeviceBufferStacks } from "../../src/core/cuda/device-buffer.ts";
import { deviceReceiveToAbort, GPU_DEFAULT_MAX, GPU_SHARE, GpuTraffic, type GpuChoice, unsettledGpuOperations } from "./gpu.ts";
import { chooseCudart } from "./gpu-library.ts";
import { GPU_KINDS, type GpuKind } from "./protocol.ts";
import { soakScript } from "./files.ts";
import { heapSnapshotsOption, HeapSnapshots } from "./heap-snapshots.ts";

function option(name: string, fallback: number): number {
  const i = process.argv.indexOf(`--${name}`);
  if (i < 0) return fallback;
  const v = Number(process.argv[i + 1]);
  if (!Number.isFinite(v) || v < 0) throw new Error(`--${name} needs a number, got ${process.argv[i + 1]}`);
  return v;
}

/** `--NAME a,b,...`: some of `all` (default all of them); anything else is refused, saying what is allowed. */
function listOption<T extends string>(name: string, all: readonly T[]): readonly T[] {
  const i = process.argv.indexOf(`--${name}`);
  if (i < 0) return all;
  const chosen = (process.argv[i + 1] ?? "").split(",").filter((k) => k !== "");
  const wrong = chosen.filter((k) => !(all as readonly string[]).includes(k));
  if (chosen.length === 0 || wrong.length > 0) throw new Error(`--${name} takes some of ${all.join(",")}, got ${process.argv[i + 1]}`);
  return chosen as T[];
}

/** `--NAME a`: one of `all`, or undefined where the option is absent; anything else is refused. */
function choiceOption<T extends string>(name: string, all: readonly T[]): T | undefined {
  const i = process.argv.indexOf(`--${name}`);
  if (i < 0) return undefined;
  const v = process.argv[i + 1];
  if (!(all as readonly (string | undefined)[]).includes(v)) throw new Error(`--${name} takes one of ${all.join(", ")}, got ${v}`);
  return v as T;
}

const USAGE = `Usage: npm run soak -- [--minutes N | --seconds N] [--peers 1..3] [--lanes N] [--cycles N]
  [--cycle-modes polling,thread,hybrid] [--seed N] [--fault-every-ms N] [--kinds tag,request,stream,multi,am,rma,atomic] [--max-size BYTES] [--collectives RANKS]
  [--progress thread|polling|hybrid|blocking] [--malloc fixed|dynamic] [--gpu stand-in|real|off] [--gpu-max-size BYTES] [--gpu-share 0..1] [--gpu-kinds gpu-tag,gpu-am,gpu-multi] [--heap-snapshots DIR]
(defaults: 1 minute, 2 peers, 4 lanes, the coordinator in the runtime's default progress mode, 1000 worker cycles in each of polling, thread and hybrid modes, faults every 2000 ms on average, all kinds, 16 MiB,
 collective jobs of 3 ranks (0: none), glibc's mmap and trim thresholds fixed at 128 KiB unless MALLOC_*_ or
 GLIBC_TUNABLES are set, no GPU traffic)
--gpu stand-in|real: ${GPU_SHARE * 100} % of the operations (--gpu-share) move GPU memory (DeviceBuffers) too: tag echoes device<->device and
 host<->device, active messages with device data, multi-buffer batches of device frames received with deviceFrames "device"
 (the chunked pipeline), 0 B to --gpu-max-size (default ${GPU_DEFAULT_MAX / 2 ** 20} MiB), every byte copied back and compared, under
 the same faults plus GPU receives aborted in flight; the report adds GPU operations, bytes, the pinned pool's high-water mark
 and device memory outstanding, which must be back to zero at the end. stand-in: test/cuda/standin-cudart.c compiled with cc
 (a C compiler needed); real: UCX_TS_CUDART, else CUDA's usual places, else the loader path (a GPU needed).`;
const KNOWN_OPTIONS = ["minutes", "seconds", "peers", "lanes", "cycles", "cycle-modes", "seed", "fault-every-ms", "kinds", "max-size", "collectives", "malloc", "gpu", "gpu-max-size", "gpu-share", "gpu-kinds", "heap-snapshots", "progress"];
// A mistyped or unknown option would otherwise be ignored and a whole soak run with the defaults.
if (process.argv.includes("--help") || process.argv.includes("-h")) {
  console.log(USAGE);
  process.exit(0);
}
const unknown = process.argv.slice(2).filter((a) => a.startsWith("-") && !KNOWN_OPTIONS.includes(a.replace(/^--/, "")));
if (unknown.length > 0) {
  console.error(`soak: unknown option ${unknown.join(", ")}\n${USAGE}`);
  process.exit(2);
}

const seconds = option("seconds", 60 * option("minutes", 1));
const peers = Math.min(3, Math.max(1, option("peers", 2)));
const lanes = Math.max(1, option("lanes", 4));
const cycles = option("cycles", 1000);
// The progress modes whose workers are cycled: thread and hybrid ones start a thread each (engine/thread-pool.ts).
const cycleModes = listOption<ProgressMode>("cycle-modes", ["polling", "thread", "hybrid"]);
// The coordinator's own worker: the runtime's default mode unless --progress names one, so a growth
// can be pinned on the progress thread (polling mode has none) or acquitted of it.
const coordinatorMode = choiceOption<ProgressMode>("progress", PROGRESS_MODES);
const seed = option("seed", Date.now() % 1e9);
const faultEveryMs = option("fault-every-ms", 2000);
const kinds = listOption("kinds", OP_KINDS);
const maxSize = Math.max(1, option("max-size", 16 * 2 ** 20));
const collectiveRanks = Math.min(8, option("collectives", 3));
const mallocChoice = choiceOption<MallocChoice>("malloc", ["fixed", "dynamic"]) ?? "fixed";
// Before any worker or peer exists: the thresholds apply to allocations made after the call.
const allocator = applyAllocator(mallocChoice);
const gpuChoice = choiceOption<GpuChoice>("gpu", ["stand-in", "real", "off"]) ?? "off";
// libcudart is named before anything touches CUDA, and the peers inherit the choice (UCX_TS_CUDART).
// Every DeviceBuffer's allocation stack while it is out (device-buffer.ts), printed if the
// wind-down finds any still out: read at the first allocation, after this line.
if (gpuChoice !== "off") process.env.UCX_TS_DEBUG_DEVICE_BUFFERS ??= "1";
const gpu = gpuChoice === "off" ? undefined : new GpuTraffic(gpuChoice, chooseCudart(gpuChoice), Math.max(1, option("gpu-max-size", GPU_DEFAULT_MAX)));
/** The share of the lanes' operations that are GPU ones (taken out of the same time, not added to it). */
const gpuShare = Math.min(1, option("gpu-share", GPU_SHARE));
// Which GPU operations the GPU share draws from.
const gpuKinds = listOption("gpu-kinds", GPU_KINDS);
/** With --heap-snapshots DIR (Node): the JS heap at the first at-rest reading, at 90 % of the run and wound down (heap-snapshots.ts). */
const heapSnapshots = ((dir) => (dir === undefined ? undefined : new HeapSnapshots(dir)))(heapSnapshotsOption(process.argv));
const OP_TIMEOUT_MS = 60_000;
const rand = seededRandom(seed);
const root = fileURLToPath(new URL("../../", import.meta.url));
const secret = new Uint8Array(randomBytes(32));

const stats = {
  ops: 0,
  bytesVerified: 0,
  byKind: Object.fromEntries(OP_KINDS.map((k) => [k, 0])) as Record<OpKind, number>,
  faults: { "endpoint closed": 0, "peer killed": 0, "receive aborted": 0 } as Record<string, number>,
  /** Errors from faulted connections and aborts, by fault and code: all expected. */
  expected: {} as Record<string, number>,
  /** Anything else: the soak fails. */
  unexpected: {} as Record<string, number>,
  firstUnexpected: [] as string[],
  connections: 0,
  /** Milliseconds from each peer's SIGKILL to its endpoint's failure being reported (onError). */
  killSeenMs: [] as number[],
};
const bump = (m: Record<string, number>, k: string) => (m[k] = (m[k] ?? 0) + 1);

/**
 * V8's young-generation flags this process was started with (`npm run soak` fixes the semi-space
 * size: samples.ts newSpaceMiB), passed on to Node peers so that every process of the soak runs
 * with the same heap. Deno's --v8-flags and Bun (no semi-spaces) are not passed on.
 */
const youngGenerationFlags = process.execArgv.filter((a) => /^--(min-|max-)?semi-space-size=/.test(a));

function peerArgv(args: string[]): [string, string[]] {
  const script = soakScript("peer");
  return runtime === "deno"
    ? [process.execPath, ["run", "-A", script, ...args]]
    : runtime === "bun"
      ? [process.execPath, [script, ...args]]
      : [process.execPath, [...youngGenerationFlags, ...(script.endsWith(".ts") ? ["--import", "tsx"] : []), script, ...args]];
}

/** The sockets (by inode) this process holds now. */
function socketTargets(pid: number | "self"): Set<string> {
  const found = new Set<string>();
  try {
    for (const fd of readdirSync(`/proc/${pid}/fd`)) {
      if (Number(fd) <= 2) continue; // a child's stdio is its own socketpair end
      try {
        const t = readlinkSync(`/proc/${pid}/fd/${fd}`);
        if (t.startsWith("socket:")) found.add(t);
      } catch {
        // closed while listed
      }
    }
  } catch {
    // the child is gone already
  }
  return found;
}

interface Slot {
  index: number;
  child: ChildProcess | undefined;
  conn: Connection | undefined;
}

// A rejection nobody handles is a failure of the soak (the library let an error escape), counted
// and shown rather than ending the process, so the rest of the run still reports.
process.on("unhandledRejection", (e: unknown) => {
  bump(stats.unexpected, `unhandled rejection: ${e instanceof UcxError ? e.code : (e as Error)?.name}`);
  if (stats.firstUnexpected.length < 5) stats.firstUnexpected.push(`unhandled rejection: ${(e as Error)?.message}`);
});

const worker = await Worker.create({ errorHandling: "peer", ...(coordinatorMode ? { progressMode: coordinatorMode } : {}) });
const slots: Slot[] = Array.from({ length: peers }, (_, index) => ({ index, child: undefined, conn: undefined }));
let listener: Listener;

/**
 * A peer starts with none of this process's UCX sockets: UCX 1.13 opens them without
 * FD_CLOEXEC, and an inherited one kept a connection UCX had closed open in the peer and in UCX's
 * epoll set (SIGSEGV in uct_tcp_iface_progress, docs/testing.md, Soak). ucx-ts marks them
 * close-on-exec itself (close-on-exec.ts); `markCloseOnExec()` right before the spawn covers
 * the connections UCX opened on its own since its last sweep, and the check after it (the spawn
 * returns once the child has exec'd) counts any socket the child still shares with this process.
 */
function spawnPeer(slot: Slot): void {
  const [cmd, args] = peerArgv([String(listener.port), String(slot.index), toHex(secret)]);
  markCloseOnExec();
  // (with --gpu the environment names the libcudart: gpu-library.ts)
  const child = spawn(cmd, args, { cwd: root, env: { ...process.env }, stdio: ["pipe", "ignore", "inherit"] });
  child.on("error", () => {});
  slot.child = child;
  if (child.pid !== undefined) {
    const ours = socketTargets("self");
    const shared = [...socketTargets(child.pid)].filter((t) => ours.has(t));
    if (shared.length > 0) {
      bump(stats.unexpected, "peer inherited this process's sockets");
      if (stats.firstUnexpected.length < 5) stats.firstUnexpected.push(`peer ${child.pid} inherited ${shared.join(" ")}`);
    }
  }
}

/**
 * Adds to an unexpected failure whether its peer process was still running half a second later.
 * Over tcp UCX 1.13.1 names every broken connection UCS_ERR_ENDPOINT_TIMEOUT (uct_tcp_ep_set_failed:
 * the peer's side closed or reset it; on one host no timer of UCX's runs out), so a peer that
 * crashed (a UCX assertion: its stderr is the soak's) and a failure with a live peer read the
 * same without this.
 */
function notePeerState(at: number, peer: ChildProcess | undefined): void {
  setTimeout(() => {
    const state = !peer ? "no peer process" : peer.exitCode !== null || peer.signalCode !== null ? `its peer (pid ${peer.pid}) had exited (${peer.signalCode ?? `code ${peer.exitCode}`})` : `its peer (pid ${peer.pid}) was still running`;
    stats.firstUnexpected[at] += `; ${state}`;
  }, 500).unref?.();
}

/** When each connection's peer was killed: how long the library takes to report it. */
const killedAt = new WeakMap<Connection, number>();

async function onConnection(ep: Endpoint): Promise<void> {
  try {
    const buf = new Uint8Array(4096);
    const { length } = await ep.recv(buf, TAG.INTRO);
    const intro = decode<Intro>(buf.subarray(0, length));
    const slot = slots[intro.slot];
    if (!slot || slot.child?.pid !== intro.pid) return void ep.close({ force: true }).catch(() => {}); // a killed peer's late connect
    const rkey = await ep.unpackRkey(fromHex(intro.rkey));
    const counter = (await ep.atomic("add", intro.address + COUNTER_OFFSET, rkey, 0n, { fetch: true })) as bigint;
    slot.conn = { slot: slot.index, ep, rkey, address: intro.address, counter, faulted: undefined, stream: new Lock(), am: new Lock(), rma: new Lock(), settled: (p) => worker.settled(p) };
    // A failed endpoint (its peer killed) stays in the worker, with UCX's endpoint, its error, its
    // receive drain and hello link, until it is closed: as an application must, the soak closes
    // it once the failure is reported, after the library's drain window (~0.5 s: docs/guide.md,
    // "Peer failure") so that receives on it still take that path. Left open, each killed peer's
    // endpoint stayed in the worker's table for good with its error, receive drain, AM inbox and
    // hello link's socket objects (a few KiB of JS heap; heap snapshots, 2026-11-26: 8 endpoints
    // held after 100 s, 2 of them live), and UCX's endpoint with it.
    const conn = slot.conn;
    ep.onError = () => {
      if (conn.faulted === "peer killed" && killedAt.has(conn)) stats.killSeenMs.push(Date.now() - killedAt.get(conn)!);
      setTimeout(() => void ep.close({ force: true }).catch(() => {}), 1000);
    };
    stats.connections++;
  } catch (e) {
    // A peer killed while introducing itself.
    bump(stats.expected, `introduction lost: ${(e as UcxError).code ?? (e as Error).name}`);
    await ep.close({ force: true }).catch(() => {});
  }
}

listener = await worker.listen({ host: "127.0.0.1", port: 0, auth: { secret }, onConnection: (ep) => void onConnection(ep), onError: () => {} });
for (const s of slots) spawnPeer(s);

// The clock starts when every peer has connected once (a peer process takes seconds to start).
for (const until = Date.now() + 60_000; slots.some((s) => !s.conn) && Date.now() < until; ) await new Promise((r) => setTimeout(r, 20));
if (slots.some((s) => !s.conn)) throw new Error("soak: the peers did not connect within 60 s");
const started = Date.now();
const deadline = started + seconds * 1000;
let nextId = 1;
/** Every few seconds (sampler), at most ~120 a run, or one each 5 s in longer ones. */
const sampleEvery = Math.max(250, Math.min(5000, (seconds * 1000) / 120));
/** Sized for the run up front: the samples add nothing to the JS heap they measure (samples.ts SampleLog). */
const sampleLog = new SampleLog((seconds * 1000) / sampleEvery + 8);

function withTimeout<T>(p: Promise<T>, what: string): Promise<T> {
  let timer: ReturnType<typeof setTimeout>;
  return Promise.race([
    p.finally(() => clearTimeout(timer)),
    new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`${what} did not end within ${OP_TIMEOUT_MS} ms`)), OP_TIMEOUT_MS))),
  ]);
}

/** Set while the sampler takes its at-rest reading after warm-up: lanes start nothing new. */
let paused = false;
let inFlight = 0;
/**
 * Readings with nothing in flight (the lanes paused), from a quarter of the run (the end of
 * warm-up) on, about REST_READINGS of them spread over the rest (at most one a second): the line
 * through them is the leak figure. Each costs a pause until the operations in flight end (up to
 * 16 MiB each), then three GCs, trims and reads 50 ms apart (each figure their least: samples.ts
 * leastOfThree): ~0.2-0.6 s, a few per cent of the run.
 */
const REST_READINGS = 40;
/** Readings that found operations or their leftovers still in the library after 30 s. */
const notAtRest: Sample[] = [];
interface RestPoint {
  sample: Sample;
  /** V8's young generation then (MiB; samples.ts newSpaceMiB). */
  newSpaceMiB: number | undefined;
  byMapping: Record<string, number>;
  /** Kept for the first and last readings only (compared): ~600 objects, in the JS heap read. */
  mappings: Mapping[];
}
const rests: RestPoint[] = [];
async function restPoint(keepMappings: boolean): Promise<RestPoint> {
  const s = await leastOfThree(started, stats.ops, () => new Promise((r) => setTimeout(r, 50)));
  // Where the RSS lies at every reading (a few figures): which kind of memory moved when RSS did.
  const byMapping = rssByMapping();
  // With --gpu: the pinned pool's memory (kept for reuse, resident), which grows to the traffic's
  // working set of size classes (up to 512 MiB) and so reads as RSS growth early on.
  if (gpu) byMapping.gpuPinned = round(gpu.report().pinned.pinnedBytes / 2 ** 20);
  return { sample: s, newSpaceMiB: newSpaceMiB(), byMapping, mappings: keepMappings ? mappings() : [] };
}

async function lane(): Promise<void> {
  while (Date.now() < deadline) {
    if (paused) {
      await new Promise((r) => setTimeout(r, 10));
      continue;
    }
    const live = slots.filter((s) => s.conn && !s.conn.faulted);
    if (live.length === 0) {
      await new Promise((r) => setTimeout(r, 20));
      continue;
    }
    const conn = live[Math.floor(rand() * live.length)]!.conn!;
    // With --gpu, a share of the operations are GPU ones (the draw only then: a seed's host traffic is as before without it).
    const gpuKind: GpuKind | undefined = gpu && rand() < gpuShare ? gpuKinds[Math.floor(rand() * gpuKinds.length)] : undefined;
    const kind = gpuKind ?? kinds[Math.floor(rand() * kinds.length)]!;
    const id = nextId++;
    inFlight++;
    try {
      const bytes = await withTimeout(gpuKind ? gpu!.run(gpuKind, conn, id, rand) : runOp(kind as OpKind, conn, id, rand, maxSize), `${kind} ${id}`);
      stats.ops++;
      if (!gpuKind) stats.byKind[kind as OpKind]++;
      stats.bytesVerified += bytes;
    } catch (e) {
      const code = e instanceof UcxError ? e.code : (e as Error).name;
      if (e instanceof CorruptionError || !conn.faulted) {
        bump(stats.unexpected, `${kind}: ${code}`);
        if (stats.firstUnexpected.length < 5) notePeerState(stats.firstUnexpected.push(`${kind} ${id}: ${(e as Error).message}`) - 1, slots[conn.slot]?.child);
      } else bump(stats.expected, `${conn.faulted}: ${code}`);
    } finally {
      inFlight--;
    }
    if (stats.ops % 64 === 0) await new Promise((r) => setTimeout(r, 0)); // let sampling and faults in
  }
}

/** An aborted receive on a live connection: it must reject as aborted, and nothing else. */
async function abortReceive(conn: Connection): Promise<void> {
  const ac = new AbortController();
  const id = nextId++;
  // With --gpu, half of them receive into device memory (a staged receive, or the multi-buffer pipeline).
  const device = gpu !== undefined && rand() < 0.5;
  const multi = rand() < 0.5;
  const r = device
    ? deviceReceiveToAbort(conn.ep, 2 ** 33 + id, ac.signal, multi)
    : !multi
      ? conn.ep.recv(new Uint8Array(64), 2 ** 33 + id, undefined, { signal: ac.signal })
      : conn.ep.recvMulti(2 ** 33 + id, { signal: ac.signal });
  setTimeout(() => ac.abort(new Error("soak fault")), Math.floor(rand() * 50));
  try {
    await r;
    bump(stats.unexpected, "aborted receive resolved");
  } catch (e) {
    const code = (e as UcxError).code;
    if ((e as Error).name === "AbortError" && code === "UCS_ERR_CANCELED") bump(stats.expected, "receive aborted: UCS_ERR_CANCELED");
    else if (conn.faulted) bump(stats.expected, `${conn.faulted}: ${code}`);
    else bump(stats.unexpected, `aborted receive: ${code}`);
  }
}

async function faults(): Promise<void> {
  while (faultEveryMs > 0 && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, faultEveryMs * 2 * rand()));
    if (Date.now() >= deadline) break;
    // With --gpu, a quarter of the faults abort the echo receive of a GPU operation in flight (a
    // staged receive, an AM, a pipelined batch: whichever is on the wire) and close its connection.
    if (gpu && gpu.receives.size > 0 && rand() < 0.25) {
      const victim = [...gpu.receives][Math.floor(rand() * gpu.receives.size)]!;
      const slot = slots.find((s) => s.conn === victim.conn);
      if (slot && !victim.conn.faulted) {
        bump(stats.faults, "GPU receive aborted in flight");
        victim.conn.faulted = "GPU receive aborted in flight";
        slot.conn = undefined;
        victim.abort.abort(new Error("soak fault"));
        await victim.conn.ep.close({ force: true }).catch(() => {});
        continue;
      }
    }
    const slot = slots[Math.floor(rand() * slots.length)]!;
    const conn = slot.conn;
    const r = rand();
    if (r < 0.4 && conn) {
      bump(stats.faults, "receive aborted");
      await abortReceive(conn);
    } else if (r < 0.8 && conn) {
      bump(stats.faults, "endpoint closed");
      conn.faulted = "endpoint closed";
      slot.conn = undefined;
      await conn.ep.close({ force: true }).catch(() => {});
    } else if (slot.child && conn) {
      bump(stats.faults, "peer killed");
      if (conn) conn.faulted = "peer killed";
      slot.conn = undefined;
      killedAt.set(conn, Date.now());
      slot.child.kill("SIGKILL");
      spawnPeer(slot);
    }
  }
}

async function sampler(): Promise<void> {
  const every = sampleEvery;
  const restEvery = Math.max(1000, (seconds * 750) / REST_READINGS);
  let nextSample = Date.now();
  let nextRest = started + seconds * 250; // warm-up over
  while (Date.now() < deadline) {
    if (Date.now() >= nextSample) {
      sampleLog.push(sample(started, stats.ops));
      nextSample += every;
    }
    if (Date.now() >= nextRest) {
      // Let every operation end, and what a failed one left posted, then read RSS at rest; the
      // lanes wait meanwhile. A reading that still finds some after 30 s is kept but left out of
      // the line (it is not at rest).
      paused = true;
      for (const until = Date.now() + 30_000; (inFlight > 0 || lingeringOps() > 0) && Date.now() < until; ) await new Promise((r) => setTimeout(r, 10));
      // Only the first reading keeps its mapping list (compared with the wound-down one's).
      const point = await restPoint(rests.length === 0);
      const atRest = !(inFlight > 0 || lingeringOps() > 0);
      if (atRest) rests.push(point);
      else notAtRest.push(point.sample);
      // One line per reading as it is taken: a soak that UCX aborts (its tcp assertions,
      // docs/upstream-reports.md) otherwise dies with every reading unprinted.
      const r = point.sample;
      process.stderr.write(`soak: reading at ${round(r.seconds)} s${atRest ? "" : " (not at rest)"}: ${r.ops} ops, RSS after trim ${round(r.trimmedRssMiB)} MiB, malloc in use ${round(r.mallocInUseMiB)} MiB, JS heap ${round(r.heapMiB)} MiB, fds ${r.fds}\n`);
      // After the reading (a snapshot allocates: the readings after it carry some of that).
      if (heapSnapshots && rests.length > 0 && (rests.length === 1 || Date.now() >= started + seconds * 900)) heapSnapshots.write(rests.length === 1 ? "first-rest" : "late-rest");
      paused = false;
      nextRest = Date.now() + restEvery;
    }
    await new Promise((r) => setTimeout(r, Math.max(0, Math.min(nextSample, nextRest, deadline) - Date.now())));
  }
  sampleLog.push(sample(started, stats.ops));
}

// The collectives' jobs draw from their own generator: the p2p traffic of a seed stays as it was.
const collectivesDone: Promise<CollectivesReport | undefined> =
  collectiveRanks > 0 ? collectivesLane({ ranks: collectiveRanks, deadline, seed, rand: seededRandom(seed + 1), faults: faultEveryMs > 0 }) : Promise.resolve(undefined);
await Promise.all([...Array.from({ length: lanes }, lane), faults(), sampler()]);
const trafficSeconds = (Date.now() - started) / 1000;
process.stderr.write(`soak: traffic done after ${round(trafficSeconds)} s; closing\n`);
const ucg = await collectivesDone;

// Wind down: peers stop (stdin closes), connections close.
for (const s of slots) {
  s.child?.stdin?.end();
  await s.conn?.ep.close({ force: true }).catch(() => {});
}
await listener.close();
// What failed operations left posted on the killed peers' endpoints ends when the library fails them.
for (const until = Date.now() + 30_000; lingeringOps() > 0 && Date.now() < until; ) await new Promise((r) => setTimeout(r, 10));
// Active messages nobody received: an echo that came after its operation had failed, on an
// endpoint closed since, is queued with the senders that have no endpoint here, where only
// worker.amRecv() takes it. The soak, as an application must, takes them and lets their memory
// go (a GPU echo's DeviceBuffer among them: left there, it was counted out after the wind-down).
const unclaimed = { messages: 0, device: 0, errors: 0 };
for (let i = 0; i < 100_000; i++) {
  // An error queued ahead (a receive error of a failed endpoint) is taken like a message; the
  // timeout (nothing queued any more) ends it.
  const m = await worker.amRecv({ signal: AbortSignal.timeout(20) }).catch((e: UcxError) => e);
  if (m instanceof UcxError) {
    if (m.name === "AbortError") break;
    unclaimed.errors++;
    continue;
  }
  unclaimed.messages++;
  if (m.device) {
    unclaimed.device++;
    m.device.free();
  }
  m.release();
}
if (unclaimed.messages + unclaimed.errors > 0) process.stderr.write(`soak: ${unclaimed.messages} active message(s) left unreceived after the wind-down (${unclaimed.device} with device data), taken and freed; ${unclaimed.errors} receive error(s) queued with them\n`);
// GPU memory: every pinned staging buffer back in the pool and every DeviceBuffer freed once
// the operations have settled (a failed receive's pinned buffer comes back when UCX reports it).
const gpuLeft = async () => {
  if (!gpu) return undefined;
  for (const until = Date.now() + 10_000; (gpu.outstanding().pinned > 0 || gpu.outstanding().device > 0) && Date.now() < until; ) await new Promise((r) => setTimeout(r, 10));
  return gpu.outstanding();
};
const gpuWound = await gpuLeft();
// GPU memory still out after the wind-down: name the operations whose parts never settled, and
// what the worker still holds, before the close settles them (the close cancels everything).
if (gpuWound !== undefined && (gpuWound.pinned > 0 || gpuWound.device > 0)) {
  process.stderr.write(`soak: GPU memory out after wind-down (${gpuWound.pinned} pinned, ${gpuWound.device} DeviceBuffers); worker requests pending ${worker.pendingRequests}, lingering ops ${lingeringOps()}; unsettled GPU operations:\n${unsettledGpuOperations().map((l) => `  ${l}\n`).join("") || "  none\n"}`);
  // With UCX_TS_DEBUG_DEVICE_BUFFERS=1 (the soak sets it with --gpu): who allocated them.
  for (const stack of outstandingDeviceBufferStacks()) process.stderr.write(`soak: DeviceBuffer still out, ${stack}\n`);
}
// Every connection is closed and nothing is in flight: what the runtime still holds now (after a
// GC) is kept for nobody, unlike a sample taken under traffic (payloads in flight up to 128 MiB).
const woundPoint = await restPoint(true);
heapSnapshots?.write("wound-down");
const wound = woundPoint.sample;
await worker.close();
for (const s of slots) s.child?.kill("SIGKILL");
const gpuClosed = await gpuLeft();
const gpuReport = gpu?.report();
const gpuLeaked = gpuWound !== undefined && (gpuWound.pinned !== 0 || gpuWound.device !== 0 || gpuClosed!.pinned !== 0 || gpuClosed!.device !== 0);

process.stderr.write("soak: closed; worker cycles\n");
const samples: Sample[] = sampleLog.toArray();
const grow = growth(samples, 0.25);
// The leak figure: RSS after GC and malloc_trim(0) with nothing in flight (the lanes paused for
// each reading) after warm-up. Under traffic the samples swing by tens of MiB with the payloads in
// flight (up to 128 MiB) and the free memory glibc keeps (11-54 MiB seen), which a slope over
// minutes cannot tell from growth. The reading with every connection closed (the peers gone) is
// another state, lower: it gives the end-to-end figure beside the fit, not a point of it.
const TARGET_MIB_PER_100K = 1;
const rest = rests[0]?.sample ?? samples[0]!;
const per100k = (from: Sample, k: "trimmedRssMiB" | "mallocInUseMiB") => (stats.ops > from.ops ? round(((wound[k] - from[k]) / (stats.ops - from.ops)) * 100_000) : 0);
/** A fit through the at-rest readings (from `fromOps` on), in units per 100k operations. */
function restFit(k: "trimmedRssMiB" | "rssLessV8FreeMiB" | "mallocInUseMiB" | "heapMiB" | "fds", fromOps = 0) {
  const f = fitLine(rests.filter((r) => r.sample.ops >= fromOps).map((r) => [r.sample.ops, r.sample[k]] as const));
  return f ? per100kFit(f) : undefined;
}
const per100kFit = (f: Fit) => ({
  readings: f.n,
  slope: round(f.slope * 1e5),
  stdErr: round(f.stdErr * 1e5),
  adjustedStdErr: round(f.adjustedStdErr * 1e5),
  lag1: round(f.lag1),
  dof: round(f.dof),
  low: round(f.low * 1e5),
  high: round(f.high * 1e5),
  verdict: verdict({ ...f, low: f.low * 1e5, high: f.high * 1e5 }, TARGET_MIB_PER_100K),
});
// The second half alone (from the first reading at half time): whether what the first quarter
// after warm-up gained keeps growing or levels off. Reported beside the whole fit.
const halfOps = rests.find((r) => r.sample.seconds >= seconds / 2)?.sample.ops;
const atRest = {
  readingsAfterWarmup: rests.length,
  /** Left out of the line: the pause ran out before everything in flight had ended. */
  notAtRest: notAtRest.map((r) => ({ seconds: round(r.seconds), ops: r.ops, rssMiB: round(r.trimmedRssMiB) })),
  fit: restFit("trimmedRssMiB"),
  secondHalfFit: halfOps === undefined ? undefined : restFit("trimmedRssMiB", halfOps),
  rssLessV8FreeFit: restFit("rssLessV8FreeMiB"),
  /**
   * RSS less the other threads' JS heaps (a thread-mode worker's progress thread, tsx's loader
   * threads: isolate-pages.ts), which the soak's GC does not reach and V8 collects only when
   * their own allocation limits are reached: what the main thread and native memory did.
   */
  rssLessOtherHeapsFit: rests.every((r) => r.byMapping["v8Pages.otherThreads"] !== undefined)
    ? (() => {
        const f = fitLine(rests.map((r) => [r.sample.ops, r.sample.trimmedRssMiB - r.byMapping["v8Pages.otherThreads"]!] as const));
        return f ? per100kFit(f) : undefined;
      })()
    : undefined,
  /** With --gpu: RSS less the pinned pool (its cache of staging buffers, resident, filling up to its working set). */
  rssLessPinnedFit: gpu
    ? (() => {
        const f = fitLine(rests.map((r) => [r.sample.ops, r.sample.trimmedRssMiB - (r.byMapping.gpuPinned ?? 0)] as const));
        return f ? per100kFit(f) : undefined;
      })()
    : undefined,
  mallocFit: restFit("mallocInUseMiB"),
  jsHeapFit: restFit("heapMiB"),
  fdsFit: restFit("fds"),
  fds: rests.length ? { first: rests[0]!.sample.fds, last: rests.at(-1)!.sample.fds, max: Math.max(...rests.map((r) => r.sample.fds)), wound: wound.fds } : undefined,
  startMiB: round(rest.trimmedRssMiB),
  minMiB: round(Math.min(...rests.map((r) => r.sample.trimmedRssMiB))),
  maxMiB: round(Math.max(...rests.map((r) => r.sample.trimmedRssMiB))),
  lastMiB: round(rests.at(-1)?.sample.trimmedRssMiB ?? rest.trimmedRssMiB),
  endMiB: round(wound.trimmedRssMiB),
  ops: stats.ops - rest.ops,
  miBPer100kOps: per100k(rest, "trimmedRssMiB"),
  // The same moments, malloc's bytes in use (UCX's and the runtime's native allocations).
  mallocStartMiB: round(rest.mallocInUseMiB),
  mallocEndMiB: round(wound.mallocInUseMiB),
  mallocMiBPer100kOps: per100k(rest, "mallocInUseMiB"),
  readings: [...rests, woundPoint].map(({ sample: r, byMapping }) => ({ seconds: round(r.seconds), ops: r.ops, rssMiB: round(r.trimmedRssMiB), mallocInUseMiB: round(r.mallocInUseMiB), jsHeapMiB: round(r.heapMiB), arrayBuffersMiB: round(r.arrayBuffersMiB), v8FreeMiB: round(r.v8FreeMiB), rssLessV8FreeMiB: round(r.rssLessV8FreeMiB), fds: r.fds, byMapping })),
};
const fitText = (f: ReturnType<typeof per100kFit> | undefined, unit: string) =>
  f ? `${f.slope >= 0 ? "+" : ""}${f.slope} ± ${f.adjustedStdErr} ${unit} per 100k ops (95 % interval ${f.low} to ${f.high}; ${f.readings} readings, residual lag-1 autocorrelation ${f.lag1}, plain std. error ${f.stdErr})` : "too few readings";
const verdictText = (f: ReturnType<typeof per100kFit> | undefined) =>
  !f || f.verdict === "too few readings"
    ? "too few readings for a verdict"
    : f.verdict === "under"
      ? `under ${TARGET_MIB_PER_100K} MiB per 100k ops (the whole 95 % interval is)`
      : f.verdict === "over"
        ? `OVER ${TARGET_MIB_PER_100K} MiB per 100k ops (the whole 95 % interval is)`
        : `not resolved: the 95 % interval includes ${TARGET_MIB_PER_100K} MiB per 100k ops (more operations or steadier readings needed)`;
/** Each kind of mapping's line through the at-rest readings, per 100k ops: which one RSS's growth lies in. */
const mappingSlopes = Object.keys(rests[0]?.byMapping ?? {}).map((k) => {
  const f = fitLine(rests.map((r) => [r.sample.ops, r.byMapping[k] ?? 0] as const));
  return f ? `${k} ${f.slope >= 0 ? "+" : ""}${round(f.slope * 1e5)} ± ${round(f.adjustedStdErr * 1e5)}` : `${k} ?`;
});
const restMappings = rests[0]?.byMapping ?? {};
const woundMappings = woundPoint.byMapping;
const anonymousGrew = rests[0] ? anonymousGrowth(rests[0].mappings, woundPoint.mappings) : [];
const cycleReports: CycleReport[] = [];
for (const mode of cycles > 0 ? cycleModes : []) {
  process.stderr.write(`soak: worker cycles (${mode})\n`);
  cycleReports.push(await workerCycles(cycles, mode));
}
// Each mode's cycles: no fd more, RSS within 8 MiB + 16 KiB a cycle (allocator noise, not a
// leak), and malloc's bytes in use within 1 MiB (~1 KiB a cycle over 900: a Context, worker or
// thread left behind per cycle is more; measured -2.3 MiB over 900 polling cycles after a
// 10-minute soak), and OS threads within a few more (a thread per worker never ended is one a
// cycle; the runtimes start and end pool threads of their own, Deno's blocking pool among them).
const cycleGrew = (c: CycleReport) =>
  c.fds.growth > 0 || c.threads.growth > Math.max(4, c.cycles / 10) || (c.cycles >= 200 && (c.rssMiB.growth > 8 + c.cycles / 64 || c.mallocInUseMiB.growth > 1));
const cyclesGrew = cycleReports.some(cycleGrew);
const ucgFailed = ucg !== undefined && (Object.keys(ucg.unexpected).length > 0 || ucg.collectives === 0);
const gpuIdle = gpu !== undefined && gpu.ops === 0;
const failed = Object.keys(stats.unexpected).length > 0 || stats.ops === 0 || cyclesGrew || ucgFailed || gpuLeaked || gpuIdle;

// glibc's allocator settings, which decide how much freed memory RSS keeps (docs/testing.md#soak):
// the same figures read differently with and without them, so the report names them.
const mallocSettings = allocatorEnv();

const newSpace = rests.map((r) => r.newSpaceMiB).filter((x) => x !== undefined);
const youngGeneration =
  newSpace.length === 0
    ? "not reported by this runtime"
    : `V8 new space ${Math.min(...newSpace)}-${Math.max(...newSpace)} MiB over the at-rest readings (${youngGenerationFlags.join(" ") || "V8's own sizing: it grows and shrinks, and RSS with it"})`;
function killSeenText(): string {
  const t = [...stats.killSeenMs].sort((a, b) => a - b);
  const kills = stats.faults["peer killed"] ?? 0;
  if (t.length === 0) return kills > 0 ? `none of ${kills} killed peers' endpoints reported failed` : "no peer killed";
  const q = (f: number) => t[Math.min(t.length - 1, Math.floor(f * t.length))];
  return `${t.length} of ${kills} killed peers' endpoints reported failed (onError), after ${q(0.5)} ms (median), ${q(0.9)} ms (90th percentile), ${t.at(-1)} ms (max)`;
}
/** One mode's worker cycles in the table: the figures after warm-up against the end, then the fitted lines. */
function cycleLines(c: CycleReport): string[] {
  const lines = [
    `worker cycles     ${c.cycles} (${c.mode}; address, memMap, packRkey, unmap each) in ${c.seconds} s: RSS ${c.rssMiB.afterWarmup} -> ${c.rssMiB.end} MiB (${c.rssMiB.growth}; after malloc_trim ${c.trimmedRssMiB.afterWarmup} -> ${c.trimmedRssMiB.end}, ${c.trimmedRssMiB.growth}; malloc in use ${c.mallocInUseMiB.afterWarmup} -> ${c.mallocInUseMiB.end}, ${c.mallocInUseMiB.growth}), fds ${c.fds.afterWarmup} -> ${c.fds.end} (${c.fds.growth}), mappings ${c.maps.afterWarmup} -> ${c.maps.end} (${c.maps.growth}), threads ${c.threads.afterWarmup} -> ${c.threads.end} (${c.threads.growth})`,
  ];
  if (c.fit)
    lines.push(
      `worker cycles (${c.mode}), growth per 1,000 cycles (line through ${c.fit.readings.length} readings after warm-up, 95 % interval; "under" ${CYCLE_BOUND_MIB_PER_1000} MiB only if the whole interval is): ` +
        (["trimmedRssMiB", "mallocInUseMiB", "heapMiB", "fds"] as const)
          .map((k) => {
            const f = c.fit![k];
            const name = { trimmedRssMiB: "RSS after trim", mallocInUseMiB: "malloc in use", heapMiB: "JS heap", fds: "fds" }[k];
            return f ? `${name} ${f.slope} ± ${f.adjustedStdErr} (${f.low} to ${f.high}): ${f.verdict}` : `${name} ?`;
          })
          .join("; "),
    );
  return lines;
}
const lines = [
  `soak: ${round(trafficSeconds)} s, ${peers + 1} processes (${peers} peers), ${lanes} lanes, seed ${seed}, ${runtime}, ${worker.progressMode} progress`,
  `allocator         ${allocator}`,
  `young generation  ${youngGeneration}`,
  `operations        ${stats.ops}  (${OP_KINDS.map((k) => `${k} ${stats.byKind[k]}`).join(", ")})`,
  `bytes verified    ${stats.bytesVerified} (${round(stats.bytesVerified / 2 ** 30)} GiB)`,
  `connections       ${stats.connections}`,
  `faults injected   ${Object.entries(stats.faults).map(([k, v]) => `${k} ${v}`).join(", ")}`,
  `kills seen        ${killSeenText()}`,
  `errors, expected  ${Object.entries(stats.expected).map(([k, v]) => `${k} ${v}`).join("; ") || "none"}`,
  `errors, UNEXPECTED ${Object.entries(stats.unexpected).map(([k, v]) => `${k} ${v}`).join("; ") || "none"}`,
  ...stats.firstUnexpected.map((m) => `  ${m}`),
  `RSS after warm-up ${grow.rssMiB.first} -> ${grow.rssMiB.last} MiB (max ${grow.rssMiB.max}), ${grow.rssMiBPer100kOps} MiB per 100k ops (${grow.samples} samples, ${grow.opsAfterWarmup} ops); of it JS heap ${grow.heapMiBPer100kOps}, array buffers ${grow.arrayBuffersMiBPer100kOps} MiB per 100k ops`,
  `RSS after malloc_trim(0) ${grow.trimmedRssMiB.first} -> ${grow.trimmedRssMiB.last} MiB (max ${grow.trimmedRssMiB.max}), ${grow.trimmedRssMiBPer100kOps} MiB per 100k ops (what glibc kept free is not counted); malloc in use ${grow.mallocInUseMiB.first} -> ${grow.mallocInUseMiB.last} MiB, ${grow.mallocInUseMiBPer100kOps} MiB per 100k ops`,
  `at rest           RSS after GC and malloc_trim, nothing in flight, ${atRest.readingsAfterWarmup} readings after warm-up (${atRest.notAtRest.length} more left out: still busy after 30 s) over ${atRest.ops} ops: ${atRest.startMiB} first, ${atRest.minMiB}-${atRest.maxMiB}, ${atRest.lastMiB} last, ${atRest.endMiB} MiB with every connection closed`,
  `at rest, growth   RSS ${fitText(atRest.fit, "MiB")}`,
  `at rest, verdict  ${verdictText(atRest.fit)}`,
  `at rest, 2nd half RSS ${fitText(atRest.secondHalfFit, "MiB")}`,
  `at rest, RSS less V8's free heap ${fitText(atRest.rssLessV8FreeFit, "MiB")}: ${verdictText(atRest.rssLessV8FreeFit)}`,
  `at rest, JS heaps resident pages (MiB; isolate-pages.ts) ${rests[0]?.byMapping["v8Pages.main"] === undefined ? "not told on this runtime" : `main thread ${restMappings["v8Pages.main"]} -> ${woundMappings["v8Pages.main"]}, other threads (progress thread, loaders) ${restMappings["v8Pages.otherThreads"]} -> ${woundMappings["v8Pages.otherThreads"]}; RSS less the other threads' heaps ${fitText(atRest.rssLessOtherHeapsFit, "MiB")}: ${verdictText(atRest.rssLessOtherHeapsFit)}`}`,
  ...(gpu ? [`at rest, RSS less the GPU pinned pool (${restMappings.gpuPinned} -> ${woundMappings.gpuPinned} MiB) ${fitText(atRest.rssLessPinnedFit, "MiB")}: ${verdictText(atRest.rssLessPinnedFit)}`] : []),
  `at rest, others   malloc in use ${fitText(atRest.mallocFit, "MiB")}; JS heap ${fitText(atRest.jsHeapFit, "MiB")}; fds ${atRest.fds ? `${atRest.fds.first} -> ${atRest.fds.last} (max ${atRest.fds.max}, ${atRest.fds.wound} wound down)` : "?"}, ${fitText(atRest.fdsFit, "fds")}`,
  `at rest, end to end ${atRest.startMiB} -> ${atRest.endMiB} MiB: ${atRest.miBPer100kOps} MiB per 100k ops; malloc in use ${atRest.mallocStartMiB} -> ${atRest.mallocEndMiB} MiB, ${atRest.mallocMiBPer100kOps} MiB per 100k ops`,
  `at rest, readings (ops/RSS/V8 free heap MiB) ${atRest.readings.map((r) => `${r.ops}/${r.rssMiB}/${r.v8FreeMiB}`).join(" ")}`,
  `at rest by mapping (MiB) ${Object.keys(woundMappings).map((k) => `${k} ${restMappings[k] ?? "?"} -> ${woundMappings[k]}`).join(", ")}`,
  `at rest by mapping, growth per 100k ops ${mappingSlopes.join(", ") || "?"}`,
  `anonymous mappings grown most ${anonymousGrew.join("; ") || "none by 256 KiB"}`,
  ...(heapSnapshots ? [`heap snapshots    ${[...heapSnapshots.written.values()].join(" ")} (what grew: scripts/soak/heap-diff.ts A B; the readings after the first carry its allocations)`] : []),
  `connections closed: RSS ${round(wound.rssMiB)} MiB (${round(wound.trimmedRssMiB)} after malloc_trim), JS heap ${round(wound.heapMiB)} MiB, array buffers ${round(wound.arrayBuffersMiB)} MiB (worker still open)`,
  `fds after warm-up ${grow.fds.first} -> ${grow.fds.last} (max ${grow.fds.max}), ${grow.fdsPer100kOps} per 100k ops`,
  "samples (s, ops, RSS MiB, RSS after trim MiB, malloc in use MiB, heap MiB, array buffers MiB, fds): " + samples.filter((_, i) => i % Math.max(1, Math.floor(samples.length / 10)) === 0).map((s) => `${round(s.seconds)}/${s.ops}/${round(s.rssMiB)}/${round(s.trimmedRssMiB)}/${round(s.mallocInUseMiB)}/${round(s.heapMiB)}/${round(s.arrayBuffersMiB)}/${s.fds}`).join("  "),
  ...(ucg
    ? [
        `collectives       ${ucg.collectives} in ${ucg.jobs} jobs of ${ucg.ranks} ranks (${ucg.killedJobs} lost a rank), ${ucg.elementsVerified} elements verified`,
        `  errors, expected  ${Object.entries(ucg.expected).map(([k, v]) => `${k} ${v}`).join("; ") || "none"}`,
        `  errors, UNEXPECTED ${Object.entries(ucg.unexpected).map(([k, v]) => `${k} ${v}`).join("; ") || "none"}`,
        ...ucg.firstUnexpected.map((m) => `    ${m}`),
        ucg.longestCleanJob
          ? `  rank 0 of the longest clean job: ${ucg.longestCleanJob.collectives} collectives in ${ucg.longestCleanJob.seconds} s, RSS after trim ${ucg.longestCleanJob.trimmedRssMiB.first} -> ${ucg.longestCleanJob.trimmedRssMiB.last} MiB after warm-up, ${ucg.longestCleanJob.miBPer100k} MiB per 100k collectives`
          : "  no clean job long enough for a growth figure",
      ]
    : ["collectives       skipped"]),
  ...(gpuReport
    ? [
        `GPU               ${gpuReport.choice} libcudart ${gpuReport.library}, ${gpuReport.path} path, payloads 0 B to ${gpuReport.maxSize} B, ${gpuShare * 100} % of the operations`,
        `  operations      ${gpuReport.ops} (${Object.entries(gpuReport.byKind).map(([k, v]) => `${k} ${v}`).join(", ")}; legs ${Object.entries(gpuReport.legs).map(([k, v]) => `${k} ${v}`).join(", ")})`,
        `  bytes verified  ${gpuReport.bytesVerified} (${round(gpuReport.bytesVerified / 2 ** 30)} GiB; in the total above)`,
        `  pinned pool     high-water ${gpuReport.pinned.peakBytes} B handed out at once; ${gpuReport.pinned.pinnedBytes} B pinned (${gpuReport.pinned.cachedBytes} B kept for reuse); out after wind-down ${gpuWound!.pinned}, after worker close ${gpuClosed!.pinned} (${gpuReport.pinned.outstandingBytes} B)`,
        `  device memory   ${gpuReport.device.allocated} DeviceBuffers allocated (${gpuReport.device.allocatedBytes} B), ${gpuReport.device.freed} freed, peak ${gpuReport.device.peakBytes} B; outstanding after wind-down ${gpuWound!.device}, after worker close ${gpuClosed!.device} (${gpuReport.device.outstandingBytes} B)${gpuLeaked ? ": LEAKED" : ""}`,
      ]
    : ["GPU               off (--gpu stand-in|real)"]),
  ...(cycleReports.length === 0 ? ["worker cycles     skipped"] : cycleReports.flatMap(cycleLines)),
  failed ? "soak: FAILED" : "soak: passed",
];
process.stderr.write(lines.join("\n") + "\n");
console.log(JSON.stringify({ ok: !failed, seconds: round(trafficSeconds), peers, seed, unclaimedActiveMessages: unclaimed, progressMode: worker.progressMode, allocator, mallocSettings, youngGeneration, ...stats, growth: grow, woundDown: wound, atRest, restMappings, woundMappings, anonymousGrew, cycles: cycleReports, collectives: ucg, gpu: gpuReport && { ...gpuReport, outstandingAfterWindDown: gpuWound, outstandingAfterClose: gpuClosed, leaked: gpuLeaked } }));
process.exit(failed ? 1 : 0);
