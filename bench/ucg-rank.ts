// One rank of the collectives benchmark (bench/ucg.ts): allreduce, bcast and alltoall latency
// over sizes (median of a timed loop after warm-up, each iteration ending in lock-step because
// every collective synchronises), and the per-step time of one 8 B allreduce. Rank 0 prints one
// JSON line "UCG_BENCH {...}".
import process from "node:process";
import { UcgContext } from "../src/ucg/index.ts";

const sizes = (process.env.UCG_BENCH_SIZES ?? "8,1024,65536,1048576,4194304").split(",").map(Number);
const ctx = await UcgContext.create({ errorHandling: (process.env.UCG_BENCH_ERRORS ?? "peer") as "peer" | "none" });
const world = ctx.world;
const rows: { coll: string; bytes: number; us: number; plan: string }[] = [];
for (const coll of ["allreduce", "bcast", "alltoall"] as const) {
  for (const bytes of sizes) {
    const n = Math.max(1, Math.floor(bytes / 8));
    const send = new Float64Array(coll === "alltoall" ? Math.max(world.size, n - (n % world.size)) : n).fill(1);
    const recv = new Float64Array(send.length);
    const req = coll === "bcast" ? world.init("bcast", { recv: send, root: 0 }) : world.init(coll, { send, recv, op: "sum" });
    const iters = bytes >= 1 << 20 ? 10 : bytes >= 65536 ? 30 : 200;
    for (let i = 0; i < Math.min(20, iters); i++) await req.start();
    const times: number[] = [];
    for (let i = 0; i < iters; i++) {
      const t = performance.now();
      await req.start();
      times.push(performance.now() - t);
    }
    times.sort((a, b) => a - b);
    rows.push({ coll, bytes, us: Math.round(times[times.length >> 1]! * 1000 * 10) / 10, plan: req.plan.name });
  }
}
// Where one 8 B allreduce spends its time: each step (send+recv to one peer, then reduce).
const probe = world.init("allreduce", { send: new Float64Array(1), op: "sum" }, { measurePhases: true });
const steps: number[][] = [];
for (let i = 0; i < 200; i++) {
  await probe.start();
  steps.push(probe.phaseTimes!.map((t) => t * 1000));
}
const median = (a: number[]) => a.sort((x, y) => x - y)[a.length >> 1]!;
const perStep = steps[0]!.map((_, j) => Math.round(median(steps.map((s) => s[j]!)) * 10) / 10);
if (world.rank === 0) console.log(`UCG_BENCH ${JSON.stringify({ size: world.size, rows, allreduce8Steps: perStep, plan: probe.plan.name, messagesPerCall: ctx.channel.stats })}`);
await ctx.close();
