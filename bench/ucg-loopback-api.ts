// The CPU cost of one small collective through the whole API (issue 23): bench/ucg-loopback.ts
// without a peer, but started as an application starts it, `await request.start()`: the group's
// queue, the request, the run's control, the Promise chain up to the caller, and the step.
// One process, one worker whose endpoint leads to itself: a 2-member group whose member 1 is this
// process again, its receives taking this process's own sends. No scheduling partner, so it means
// something on a loaded machine too (medians; the p10 is the unloaded cost).
//   node --import tsx bench/ucg-loopback-api.ts [blocking|polling|hybrid] [calls] [allreduce|bcast|barrier]
import process from "node:process";
import { loadavg } from "node:os";
import { Worker, type ProgressMode } from "../src/index.ts";
import { Channel, makeHeader } from "../src/ucg/channel.ts";
import { configRegistry } from "../src/ucg/context.ts";
import { Group } from "../src/ucg/group.ts";
import type { GroupContext } from "../src/ucg/group-context.ts";
import { PlanPool } from "../src/ucg/ppool.ts";
import { Topology } from "../src/ucg/topology.ts";
import type { Transport } from "../src/ucg/instance.ts";

const mode = (process.argv[2] ?? "blocking") as ProgressMode;
const calls = Number(process.argv[3] ?? 20000);
const coll = (process.argv[4] ?? "allreduce") as "allreduce" | "bcast" | "barrier";
const worker = await Worker.create({ progressMode: mode, errorHandling: "none" });
const channel = new Channel(worker, 0);
// Both members are this process (handle 0): member 1's endpoint leads back here.
channel.addEndpoint(0, await worker.settled(worker.connect(await worker.settled(worker.address()))));
channel.stepSpinMs = channel.drivesSteps ? Number(process.env.UCX_TS_UCG_STEP_SPIN_US ?? 2000) / 1000 : 0;
channel.stepSyncMs = Number(process.env.UCX_TS_UCG_STEP_SYNC_US ?? 200) / 1000;
const config = configRegistry().resolve(process.env, {});
const context: GroupContext<Group> = {
  rte: { rank: 0, size: 2, root: undefined, launcher: "single" },
  channel,
  topology: new Topology(["here", "here"]),
  ppool: new PlanPool(config),
  nextGroupId: 1,
  closed: false,
  addGroup: () => group,
  removeGroup: () => {},
};
const group = new Group(context, 7, [0, 0]);
// The group's transport, but a receive expects this rank's own header (it takes its own send).
const made = group.transportFor.bind(group);
group.transportFor = (collType: number): Transport => {
  const t = made(collType);
  const header = Number(makeHeader(collType, 0, 7));
  return { ...t, recv: (_peer, bytes, done, failed) => channel.post(bytes, header, done, failed) };
};
const data = new Float64Array([1]);
const req = coll === "bcast" ? group.init("bcast", { recv: data, root: 0 }) : coll === "barrier" ? group.init("barrier") : group.init("allreduce", { send: data, recv: new Float64Array(1), op: "sum" });
const us = new Float64Array(calls);
for (let i = -2000; i < calls; i++) {
  const t = performance.now();
  await req.start();
  if (i >= 0) us[i] = (performance.now() - t) * 1000;
}
us.sort();
const at = (q: number) => +us[Math.floor(calls * q)]!.toFixed(2);
console.log(JSON.stringify({ mode, coll, plan: req.plan.name, calls, load: loadavg()[0]!.toFixed(2), p10Us: at(0.1), p50Us: at(0.5), p90Us: at(0.9) }));
await channel.close();
await worker.close();
