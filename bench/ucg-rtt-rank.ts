// One rank of bench/ucg-rtt.ts (issue 23): the same two collectives processes (one UcgContext
// each: its worker, progress mode, error mode and endpoints) time one 8 B message's round trip
// and exchange over every path a collective's message can take, so that the difference between
// "a plain ep.send/worker.recv round trip" and "a collective's step" is measured between the same
// two processes instead of between a perf run and a collectives run:
//  - promise:  worker.recv + ep.send awaited through worker.settled() (the p2p row of bench/ucg.ts)
//  - step:     a plan step's calls (channel.post + channel.postSend, callbacks, pollNow's loop:
//              progress, sched_yield after an empty poll), no Promise
//  - spin:     the same posts, then a bare `while (!done) worker.progress()` (no yield, no clock)
//  - exchange: both ranks post a receive and a send at once and poll (step's calls), which is
//              what a 2-rank allreduce does, minus the group, request and instance
//  - allreduce: `await request.start()` of a persistent 8 B allreduce
// Rank 0 prints one JSON line "UCG_RTT {...}": per path, the median and p10 (us) and, with
// UCX_TS_PROFILE=1, the C calls per iteration.
import process from "node:process";
import { UcgContext } from "../src/ucg/index.ts";
import { makeHeader, MAX_GROUP_ID } from "../src/ucg/channel.ts";
import { CONTROL_COLL_TYPE } from "../src/ucg/coll-type.ts";
import { ucx } from "../src/core/library.ts";
import { PROFILING, profileSnapshot, resetProfile } from "../src/core/profile.ts";

const iters = Number(process.env.UCG_RTT_ITERS ?? "3000");
const ctx = await UcgContext.create({
  errorHandling: (process.env.UCG_BENCH_ERRORS ?? "none") as "peer" | "none",
  progressMode: (process.env.UCG_BENCH_PROGRESS || undefined) as "blocking" | "polling" | "hybrid" | undefined,
});
const world = ctx.world;
const channel = ctx.channel;
const worker = ctx.worker;
const rank = world.rank;
const peer = 1 - rank;
const G = MAX_GROUP_ID - 2;
const mine = Number(makeHeader(CONTROL_COLL_TYPE, rank, G));
const theirs = Number(makeHeader(CONTROL_COLL_TYPE, peer, G));
const out = new Uint8Array(8);
const into = new Uint8Array(8);
const yieldCore = ucx().sched_yield;
const fail = (e: unknown) => {
  throw e;
};

let got = 0;
const onRecv = () => void got++;
const onSend = () => {};
const notDone = () => got === 0;

const postRecv = () => {
  got = 0;
  channel.post(into, theirs, onRecv, fail);
};
const postSend = () => channel.postSend(peer, out, mine, onSend, fail);
/** Post a receive from the peer and a send to it, as a plan's step does (receive first). */
const postBoth = () => {
  postRecv();
  postSend();
};
const pollStep = () => {
  channel.pollNow(notDone);
  // Past the step's sync budget (a descheduled peer): go on polling and yielding, synchronously.
  while (got === 0) if (worker.progress() === 0) yieldCore();
};
const spinBare = () => {
  while (got === 0) worker.progress();
};

/** One round trip with the step's posts, waiting with `wait`: rank 0 sends first, rank 1 answers. */
const pingPong = (wait: () => void) => () => {
  if (rank === 0) {
    postBoth();
    wait();
  } else {
    postRecv();
    wait();
    postSend();
  }
};

type Path = (i: number) => Promise<void> | void;
const paths: Record<string, Path> = {
  promise: async () => {
    const ep = channel.endpointTo(peer);
    if (rank === 0) {
      const back = worker.settled(worker.recv(into, BigInt(theirs)));
      await worker.settled(ep.send(out, mine));
      await back;
    } else {
      await worker.settled(worker.recv(into, BigInt(theirs)));
      await worker.settled(ep.send(out, mine));
    }
  },
  step: pingPong(pollStep),
  spin: pingPong(spinBare),
  exchange: () => {
    postBoth();
    pollStep();
  },
};
const req = world.init("allreduce", { send: new Float64Array(1), recv: new Float64Array(1), op: "sum" });
paths.allreduce = () => req.start() as Promise<unknown> as Promise<void>;

const result: Record<string, unknown> = { ranks: world.size, mode: worker.progressMode, errors: process.env.UCG_BENCH_ERRORS ?? "none" };
const only = process.env.UCG_RTT_PATHS?.split(",");
for (const [name, run] of Object.entries(paths)) {
  if (only && !only.includes(name)) continue;
  await world.barrier();
  for (let i = 0; i < 300; i++) await run(i);
  await world.barrier();
  const us = new Float64Array(iters);
  if (PROFILING) resetProfile();
  for (let i = 0; i < iters; i++) {
    const t = performance.now();
    const p = run(i);
    if (p) await p;
    us[i] = (performance.now() - t) * 1000;
  }
  const snap = PROFILING ? profileSnapshot() : undefined;
  us.sort();
  const r2 = (x: number) => Math.round(x * 100) / 100;
  const row: Record<string, unknown> = { p50: r2(us[iters >> 1]!), p10: r2(us[Math.floor(iters * 0.1)]!) };
  if (snap) {
    row.cCalls = Object.fromEntries(Object.entries(snap.calls).filter(([, c]) => c.count > 0).map(([k, c]) => [k, r2(c.count / iters)]));
    row.phasesUs = Object.fromEntries(Object.entries(snap.phases).map(([k, ms]) => [k, r2((ms * 1000) / iters)]));
  }
  result[name] = row;
}
// Per rank: what posting one 8 B send to the peer costs (postSend alone, the peer receiving in
// turn), and the transports of the endpoint to it: the two ranks are not alike (rank 0 is the
// bootstrap's root), so both are reported.
{
  const posts = new Float64Array(iters);
  await world.barrier();
  for (let i = -300; i < iters; i++) {
    const wantOut = rank === 0;
    if (wantOut === (i % 2 === 0)) {
      const t = performance.now();
      channel.postSend(peer, out, mine, onSend, fail);
      if (i >= 0) posts[i] = (performance.now() - t) * 1000;
    } else {
      postRecv();
      pollStep();
      if (i >= 0) posts[i] = NaN;
    }
  }
  const mineUs = [...posts].filter((x) => !Number.isNaN(x)).sort((a, b) => a - b);
  const transports = (await worker.settled(channel.endpointTo(peer).transports())).join(",");
  const line = new TextEncoder().encode(JSON.stringify({ postSendP50: Math.round(mineUs[mineUs.length >> 1]! * 100) / 100, transports }).padEnd(200));
  const both = await world.allgather(line);
  result.perRank = [0, 1].map((r) => JSON.parse(new TextDecoder().decode(both.subarray(r * 200, r * 200 + 200)).trim()));
}
if (rank === 0) console.log(`UCG_RTT ${JSON.stringify(result)}`);
await world.barrier();
await ctx.close();
