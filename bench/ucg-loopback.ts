// The CPU cost of one collective step on this engine, without a peer to wait for (issue 23): one
// process, one worker whose endpoint leads to itself, rank 0's 2-member allreduce plan over a
// transport whose receive takes the process's own send (same header). What remains is the
// step's own work: posting, progress rounds, completions, the reduce, the Promise machinery.
// No scheduling partner, so it means something on a loaded machine too (medians).
//   node --import tsx bench/ucg-loopback.ts [blocking|polling|hybrid] [calls]
import process from "node:process";
import { loadavg } from "node:os";
import { Worker, type ProgressMode } from "../src/index.ts";
import { Channel, makeHeader } from "../src/ucg/channel.ts";
import { PlanInstance, RunControl, type Transport } from "../src/ucg/instance.ts";
import { normalize } from "../src/ucg/request.ts";
import { PLAN_TEMPLATES } from "../src/ucg/ppool.ts";

const mode = (process.argv[2] ?? "blocking") as ProgressMode;
const calls = Number(process.argv[3] ?? 20000);
const syncUs = Number(process.env.UCX_TS_UCG_STEP_SYNC_US ?? 200);
const worker = await Worker.create({ progressMode: mode, errorHandling: "none" });
const channel = new Channel(worker, 0);
channel.addEndpoint(1, await worker.settled(worker.connect(await worker.settled(worker.address()))));
channel.stepSpinMs = channel.drivesSteps ? 2 : 0;
channel.stepSyncMs = syncUs / 1000;
const header = Number(makeHeader(1, 0, 7));
const transport: Transport = {
  send: (_peer, bytes, done, failed) => channel.postSend(1, bytes, header, done, failed),
  recv: (_peer, bytes, done, failed) => channel.post(bytes, header, done, failed),
  cancel: (id) => channel.cancel(id),
  spin: channel.drivesSteps ? channel.spin : undefined,
  pollNow: channel.drivesSteps && channel.stepSyncMs > 0 ? channel.pollNow : undefined,
};
const n = normalize("allreduce", { send: new Float64Array([1]), op: "sum" }, 0, 2);
const template = PLAN_TEMPLATES.find((t) => t.name === "recursive_doubling/rd_allreduce")!;
const constant = template.build({ rank: 0, size: 2, count: n.count, root: n.root, commutative: true, elementSize: n.datatype.size }, {});
const instance = new PlanInstance(constant, { send: n.send, recv: n.recv, scratch: n.datatype.create(constant.scratchCount) }, n.datatype, n.op);
const control = new RunControl();
const us = new Float64Array(calls);
for (let i = -2000; i < calls; i++) {
  const t = performance.now();
  await instance.execute(transport, control);
  if (i >= 0) us[i] = (performance.now() - t) * 1000;
}
us.sort();
console.log(JSON.stringify({ mode, syncUs, calls, load: loadavg()[0]!.toFixed(2), p10Us: +us[Math.floor(calls * 0.1)]!.toFixed(2), p50Us: +us[calls >> 1]!.toFixed(2), p90Us: +us[Math.floor(calls * 0.9)]!.toFixed(2), result: n.recv[0] }));
await channel.close();
await worker.close();
