// One rank of the collectives' timeline (bench/ucg-timeline.ts): where one small collective's
// time goes, across both ranks. Each rank stamps (process.hrtime: CLOCK_MONOTONIC, one clock for
// every process on the host) the call, each send's post and return, each receive's post and
// completion, and the moment the caller's `await` resumes; rank 0 gathers rank 1's stamps and
// prints, per collective, the medians of: the skew between the ranks' starts, posting, a
// message's flight (the sender's send returned -> the receiver's completion delivered), the
// wait on the peer, and the settlement (last completion -> the caller resumes).
// With UCG_TIMELINE_BYTES (default 8; alltoall: the whole send buffer) it also prints each rank's
// per-step times (the plan's post / wait / local phases: copies and reduces), and the sends per
// protocol and the registrations made per call (a large message's engine cost).
// Environment: UCG_TIMELINE_COLLS (allreduce,bcast,alltoall), UCG_TIMELINE_CALLS, UCG_TIMELINE_BYTES,
// UCG_TIMELINE_PLAN (an allreduce plan id), UCG_BENCH_PROGRESS.
import process from "node:process";
import { UcgContext } from "../src/ucg/index.ts";

const colls = (process.env.UCG_TIMELINE_COLLS ?? "allreduce,bcast,alltoall").split(",") as ("allreduce" | "bcast" | "alltoall")[];
const calls = Number(process.env.UCG_TIMELINE_CALLS ?? "400");
const bytes = Number(process.env.UCG_TIMELINE_BYTES ?? "8");
const plan = process.env.UCG_TIMELINE_PLAN ? Number(process.env.UCG_TIMELINE_PLAN) : undefined;
const ctx = await UcgContext.create({
  errorHandling: (process.env.UCG_BENCH_ERRORS ?? "peer") as "peer" | "none",
  progressMode: (process.env.UCG_BENCH_PROGRESS || undefined) as "blocking" | "polling" | "hybrid" | undefined,
});
const world = ctx.world;
const channel = ctx.channel;
const now = () => Number(process.hrtime.bigint()) / 1000; // us, CLOCK_MONOTONIC

// Stamps of the current call: [kind, time] (kind: "s0" send posted, "s1" send returned, "s2"
// send completed, "r0" receive posted, "r1" receive completed).
let recording = false;
let stamps: [string, number][] = [];
const postSend = channel.postSend.bind(channel);
channel.postSend = (handle, bytes, header, done, failed) => {
  if (!recording) return postSend(handle, bytes, header, done, failed);
  stamps.push(["s0", now()]);
  postSend(handle, bytes, header, () => {
    stamps.push(["s2", now()]);
    done();
  }, failed);
  stamps.push(["s1", now()]);
};
const post = channel.post.bind(channel);
channel.post = (bytes, header, done, failed) => {
  if (!recording) return post(bytes, header, done, failed);
  stamps.push(["r0", now()]);
  return post(bytes, header, (length) => {
    stamps.push(["r1", now()]);
    done(length);
  }, failed);
};

const barrier = world.init("barrier");
const out: Record<string, unknown> = { ranks: world.size, mode: ctx.worker.progressMode };
for (const coll of colls) {
  const n = Math.max(1, Math.floor(bytes / 8));
  const send = new Float64Array(coll === "alltoall" ? Math.max(1, Math.floor(n / world.size)) * world.size : n).fill(1);
  const recv = new Float64Array(send.length);
  const req = coll === "bcast" ? world.init("bcast", { recv: send, root: 0 }, { measurePhases: true }) : world.init(coll, { send, recv, op: "sum", plan: coll === "allreduce" ? plan : undefined }, { measurePhases: true });
  const rows: Row[] = [];
  // Small messages: 1,000 untimed calls (UCG_TIMELINE_WARMUP), as bench/ucg-rank.ts: after 100 V8 had
  // not optimized the step's path yet, and "send post (FFI)" measured 9-14 us of cold JavaScript.
  const warmup = bytes < 65536 ? Number(process.env.UCG_TIMELINE_WARMUP ?? 1000) : Math.min(100, calls);
  let protocols: Record<string, number> = {};
  let maps = 0;
  for (let i = -warmup; i < calls; i++) {
    if (i === 0) {
      protocols = { ...ctx.worker.protocolCounts };
      maps = ctx.worker.registrationStats.maps;
    }
    await barrier.start();
    stamps = [];
    recording = true;
    const start = now();
    await req.start();
    const end = now();
    recording = false;
    if (i >= 0) rows.push({ start, end, stamps, steps: req.phaseTimes!.map((t) => [t.transfers, t.post * 1000, t.wait * 1000, t.local * 1000]) });
  }
  const after = ctx.worker.protocolCounts as Record<string, number>;
  const perCall = Object.fromEntries(Object.entries(after).map(([k, v]) => [k, (v - (protocols[k] ?? 0)) / calls]).filter(([, v]) => v !== 0));
  const extra = { plan: req.plan.name, bytes: send.byteLength, sendsPerCall: perCall, registrationsPerCall: (ctx.worker.registrationStats.maps - maps) / calls };
  // Rank 1's rows to rank 0 (as JSON bytes through a bcast-sized exchange: a gather of lengths then bytes).
  const mine = new TextEncoder().encode(JSON.stringify(rows));
  const lengths = await world.allgather(new Float64Array([mine.length]));
  const longest = Math.max(...lengths);
  const padded = new Uint8Array(longest);
  padded.set(mine);
  const all = await world.allgather(padded);
  if (world.rank === 0) {
    const peers = Array.from({ length: world.size }, (_, r) => JSON.parse(new TextDecoder().decode(all.subarray(r * longest, r * longest + lengths[r]!))) as typeof rows);
    out[coll] = { ...extra, ...analyse(peers) };
  }
}
if (world.rank === 0) console.log(`UCG_TIMELINE ${JSON.stringify(out)}`);
await ctx.close();

/** One call on one rank: its start and end, the transfers' stamps, and each step's [transfers, post, wait, local] (us). */
interface Row {
  start: number;
  end: number;
  stamps: [string, number][];
  steps: [number, number, number, number][];
}

function analyse(peers: Row[][]) {
  const med = (a: number[]) => (a.length ? Math.round([...a].sort((x, y) => x - y)[a.length >> 1]! * 100) / 100 : null);
  const per: Record<string, number[]> = {};
  const add = (k: string, v: number) => (per[k] ??= []).push(v);
  for (let i = 0; i < peers[0]!.length; i++) {
    const rows = peers.map((p) => p[i]!);
    const first = Math.min(...rows.map((r) => r.start));
    rows.forEach((r, rank) => {
      const s = (k: string) => r.stamps.filter(([x]) => x === k).map(([, t]) => t);
      add(`r${rank} total`, r.end - r.start);
      add(`r${rank} start skew`, r.start - first);
      r.steps.forEach(([transfers, post, wait, local], j) => {
        if (transfers > 0) add(`r${rank} step ${j} post (${transfers} transfers)`, post);
        if (transfers > 0) add(`r${rank} step ${j} wait`, wait);
        if (local > 0.05 || transfers === 0) add(`r${rank} step ${j} local (copy/reduce)`, local);
      });
      const posts = [...s("s0"), ...s("r0")];
      if (posts.length) add(`r${rank} start->first post`, Math.min(...posts) - r.start);
      s("s0").forEach((t, j) => add(`r${rank} send post (FFI)`, s("s1")[j]! - t));
      s("s0").forEach((t, j) => s("s2")[j] !== undefined && add(`r${rank} send post->send done`, s("s2")[j]! - t));
      s("r0").forEach((t, j) => s("r1")[j] !== undefined && add(`r${rank} recv post->recv done`, s("r1")[j]! - t));
      const done = s("r1");
      if (done.length) {
        add(`r${rank} last completion->caller resumes`, r.end - Math.max(...done));
        // A receive's flight: the peers' send returns, matched in order (2 ranks: the other rank's).
        if (peers.length === 2) {
          const other = rows[1 - rank]!.stamps.filter(([x]) => x === "s1").map(([, t]) => t);
          done.forEach((t, j) => other[j] !== undefined && add(`r${rank} peer send returned->completion here`, t - other[j]!));
        }
      }
      if (!done.length) add(`r${rank} last post->caller resumes`, r.end - Math.max(...posts));
    });
  }
  return Object.fromEntries(Object.entries(per).sort().map(([k, v]) => [k, med(v)]));
}
