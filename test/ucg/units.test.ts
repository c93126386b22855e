/** The collectives' parts that need no processes: the channel's header, the rte, config tables, the decision trees, ops and datatypes. */
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { Channel, makeHeader, parseHeader } from "../../src/ucg/channel.ts";
import { detectRte } from "../../src/ucg/rte.ts";
import { ConfigRegistry } from "../../src/ucg/config.ts";
import { contextSettings } from "../../src/ucg/context-env.ts";
import { configRegistry } from "../../src/ucg/context.ts";
import { DECISION_TREES, PLAN_TEMPLATES, PlanPool, prune } from "../../src/ucg/ppool.ts";
import { resolveOp, defineOp } from "../../src/ucg/op.ts";
import { DATATYPES, datatypeOf } from "../../src/ucg/datatype.ts";
import { UcxError, Worker } from "../../src/index.ts";
import { dbtSegments } from "../../src/ucg/plans/dbt/dbt_segments.ts";
import { pollWhile, spinWhile } from "../../src/ucg/step-spin.ts";
import { PlanInstance, RunControl, type Transport } from "../../src/ucg/instance.ts";
import { normalize } from "../../src/ucg/request.ts";
import process from "node:process";
import { bindPolicy, bindPrefix, parseCpuList } from "../../src/ucg/binding.ts";
import { isOversubscribed, parseLaunchProgress, rankProgress } from "../../src/ucg/oversubscription.ts";

const test = suite("ucg/units");

const code = (f: () => unknown): string => {
  try {
    f();
  } catch (e) {
    assert.instance(e, UcxError);
    return (e as UcxError).code;
  }
  return "no error";
};

test("the channel header is reserved(12) | coll_type(8) | src_rank(24) | group_id(20), as the seed lays it out", () => {
  assert.is(makeHeader(0x12, 0x345678, 0x9abcd, 0xfed), (0xfedn << 52n) | (0x12n << 44n) | (0x345678n << 20n) | 0x9abcdn);
  assert.equal(parseHeader(makeHeader(4, 7, 1)), { reserved: 0, collType: 4, srcRank: 7, groupId: 1 });
  assert.is(makeHeader(0xff, 2 ** 24 - 1, 2 ** 20 - 1, 0xfff), 0xffffffffffffffffn);
  assert.is(code(() => makeHeader(1, 2 ** 24, 0)), "UCX_TS_INVALID_ARGUMENT");
  assert.is(code(() => makeHeader(1, 0, 2 ** 20)), "UCX_TS_INVALID_ARGUMENT");
  // A collective's tag keeps bits 48..63 clear: no scoped hello tag (scope >= 1 there) can equal it.
  assert.is(makeHeader(9, 2 ** 24 - 1, 2 ** 20 - 1) >> 48n, 0n);
});

test("rte: rank and size from ucx-ts run, Open MPI, PMIx, PMI and Slurm; UCX_TS_ROOT_ADDR required beyond one process", () => {
  const root = { UCX_TS_ROOT_ADDR: "10.1.2.3:13500" };
  assert.equal(detectRte({ UCX_TS_RANK: "2", UCX_TS_SIZE: "4", ...root }), { rank: 2, size: 4, root: { host: "10.1.2.3", port: 13500 }, launcher: "ucx-ts" });
  assert.is(detectRte({ OMPI_COMM_WORLD_RANK: "1", OMPI_COMM_WORLD_SIZE: "3", ...root }).launcher, "openmpi");
  assert.is(detectRte({ PMIX_RANK: "0", OMPI_COMM_WORLD_SIZE: "2", ...root }).launcher, "pmix");
  assert.is(detectRte({ PMI_RANK: "1", PMI_SIZE: "2", ...root }).launcher, "pmi");
  assert.equal(detectRte({ SLURM_PROCID: "5", SLURM_NTASKS: "8", UCX_TS_ROOT_ADDR: "[fe80::1]:99" }).root, { host: "fe80::1", port: 99 });
  assert.equal(detectRte({}), { rank: 0, size: 1, root: undefined, launcher: "single" });
  assert.is(code(() => detectRte({ UCX_TS_RANK: "0", UCX_TS_SIZE: "2" })), "UCX_TS_INVALID_ARGUMENT");
  assert.is(code(() => detectRte({ UCX_TS_RANK: "2", UCX_TS_SIZE: "2", ...root })), "UCX_TS_INVALID_ARGUMENT");
  assert.is(code(() => detectRte({ UCX_TS_RANK: "x", UCX_TS_SIZE: "2", ...root })), "UCX_TS_INVALID_ARGUMENT");
  assert.is(code(() => detectRte({ UCX_TS_RANK: "0", UCX_TS_SIZE: "2", UCX_TS_ROOT_ADDR: "nohost" })), "UCX_TS_INVALID_ARGUMENT");
});

test("config tables: duplicate names, prefixes and variables are refused; a variable finds its table by prefix", () => {
  const r = new ConfigRegistry();
  r.add({ name: "a", prefix: "UCX_TS_A_", fields: { X: { default: 1, doc: "" } } });
  assert.is(code(() => r.add({ name: "a", prefix: "UCX_TS_B_", fields: {} })), "UCX_TS_INVALID_ARGUMENT");
  assert.is(code(() => r.add({ name: "b", prefix: "UCX_TS_A_", fields: {} })), "UCX_TS_INVALID_ARGUMENT");
  assert.is(code(() => r.add({ name: "c", prefix: "UCX_TS_", fields: { A_X: { default: 2, doc: "" } } })), "UCX_TS_INVALID_ARGUMENT");
  r.add({ name: "d", prefix: "UCX_TS_", fields: { Y: { default: "", doc: "" } } });
  assert.is(r.find("UCX_TS_A_X")?.table.name, "a");
  assert.is(r.find("UCX_TS_Y")?.table.name, "d");
  const resolved = r.resolve({ UCX_TS_A_X: "64KiB" }, { UCX_TS_Y: "0,1" });
  assert.equal(resolved.table("a"), { X: 65536 });
  assert.equal(resolved.table("d"), { Y: "0,1" });
  assert.is(code(() => r.resolve({}, { UCX_TS_NOPE: 1 })), "UCX_TS_INVALID_ARGUMENT");
  assert.is(code(() => r.resolve({ UCX_TS_A_X: "lots" })), "UCX_TS_INVALID_ARGUMENT");
  // The built-in tables register without a clash.
  assert.ok(configRegistry().list().length >= 3);
  // The step spin: its own table, under the selection table's shorter prefix; bounded.
  assert.is(configRegistry().resolve({}).table("progress").SPIN_US, 2000);
  assert.is(configRegistry().resolve({ UCX_TS_UCG_STEP_SPIN_US: "0" }).table("progress").SPIN_US, 0);
  assert.is(code(() => configRegistry().resolve({ UCX_TS_UCG_STEP_SPIN_US: "-1" })), "UCX_TS_INVALID_ARGUMENT");
});

test("context settings: UCX_TS_BOOTSTRAP_TIMEOUT, UCX_TS_UCG_PROGRESS and UCX_TS_UCG_SHM are parsed, code options win, and a bad value is refused by name", () => {
  assert.equal(contextSettings({}), { bootstrapTimeoutMs: 30_000, progressMode: "blocking", sharedMemory: true });
  assert.equal(contextSettings({ UCX_TS_BOOTSTRAP_TIMEOUT: " 1500 ", UCX_TS_UCG_PROGRESS: "Hybrid", UCX_TS_UCG_SHM: "off" }), { bootstrapTimeoutMs: 1500, progressMode: "hybrid", sharedMemory: false });
  assert.equal(contextSettings({ UCX_TS_BOOTSTRAP_TIMEOUT: "", UCX_TS_UCG_PROGRESS: "", UCX_TS_UCG_SHM: "" }), contextSettings({}));
  assert.equal(contextSettings({ UCX_TS_UCG_PROGRESS: "hybrid", UCX_TS_UCG_SHM: "0" }, { progressMode: "polling", sharedMemory: true, bootstrapTimeoutMs: 10 }), { bootstrapTimeoutMs: 10, progressMode: "polling", sharedMemory: true });
  const refused = (env: Record<string, string>, given: Parameters<typeof contextSettings>[1], names: RegExp): void => {
    try {
      contextSettings(env, given);
    } catch (e) {
      assert.instance(e, UcxError);
      assert.is((e as UcxError).code, "UCX_TS_INVALID_ARGUMENT");
      assert.match((e as Error).message, names);
      return;
    }
    assert.unreachable(`accepted ${JSON.stringify(env)} ${JSON.stringify(given)}`);
  };
  // setTimeout would take each of these as "at once" and end the bootstrap before it began.
  for (const t of ["30s", "-5", "0", "abc", "1e3", "Infinity", "99999999999"]) refused({ UCX_TS_BOOTSTRAP_TIMEOUT: t }, {}, /UCX_TS_BOOTSTRAP_TIMEOUT='.*' is not valid/);
  refused({ UCX_TS_UCG_PROGRESS: "poll" }, {}, /UCX_TS_UCG_PROGRESS='poll' is not valid: give one of thread, polling, blocking, hybrid \(default blocking\)/);
  refused({ UCX_TS_UCG_SHM: "maybe" }, {}, /UCX_TS_UCG_SHM='maybe'/);
  for (const t of [NaN, -1, 0, Infinity, 2 ** 31]) refused({}, { bootstrapTimeoutMs: t }, /bootstrapTimeoutMs must be a positive number/);
  // An option given in code wins, and the variable it overrides is not read at all.
  assert.is(contextSettings({ UCX_TS_UCG_PROGRESS: "poll" }, { progressMode: "polling" }).progressMode, "polling");
});

test("a waiting step's spin polls while its step is pending, yields when a poll finds nothing, and gives up after its budget since the last event", async () => {
  let polls = 0;
  let events = 3;
  const worker = { closed: false, progress: () => (polls++, events > 0 ? (events--, 1) : 0) } as unknown as Worker;
  // Pending until the third poll: returns then, having polled three times.
  await spinWhile(worker, () => polls < 3, 1000);
  assert.is(polls, 3);
  // Never done, no more events: returns once 5 ms passed since the last event (not at once, not never).
  polls = 0;
  events = 1;
  const t0 = performance.now();
  await spinWhile(worker, () => true, 5);
  const took = performance.now() - t0;
  assert.ok(took >= 5 && took < 1000, `took ${took} ms`);
  // The event's poll and at least one empty one (under load one yield may outlast the budget).
  assert.ok(polls >= 2, `polled ${polls} times`);
});

test("blocking mode's step loop polls until its step is done, sleeps in wait() only past its busy budget, and never gives up (polling mode never sleeps)", async () => {
  let polls = 0;
  let waits = 0;
  const worker = { closed: false, progress: () => (polls++, 0), wait: (ms: number) => (waits++, assert.is(ms, 1), 0) } as unknown as Worker;
  // Busy budget 1 s: done after 5 empty polls, all yields, no sleep.
  await pollWhile(worker, () => polls < 5, 1000, true);
  assert.is(waits, 0);
  // Budget spent (negative: past it at once, whatever the clock's resolution): every empty poll
  // is followed by a sleep; it stops only when the step is done.
  polls = 0;
  await pollWhile(worker, () => polls < 5, -1, true);
  assert.is(waits, 5);
  // Polling mode (sleeps false) never calls wait(), whatever the budget.
  polls = waits = 0;
  await pollWhile(worker, () => polls < 5, -1, false);
  assert.is(waits, 0);
  assert.is(polls, 5);
});

test("a step that fails while its spin still runs (a peer died) rejects its request, and nothing is reported unhandled meanwhile", async () => {
  // Member 0 of a 2-member allreduce; its receive fails at once, while the spin keeps turning
  // the event loop (as step-spin.ts does): the step's rejection must wait for its await there.
  const n = normalize("allreduce", { send: new Float64Array(4), op: "sum" }, 0, 2);
  const template = PLAN_TEMPLATES.find((t) => t.coll === "allreduce" && t.configTable === undefined)!;
  const constant = template.build({ rank: 0, size: 2, count: n.count, root: n.root, commutative: true, elementSize: n.datatype.size }, {});
  const instance = new PlanInstance(constant, { send: n.send, recv: n.recv, scratch: n.datatype.create(constant.scratchCount) }, n.datatype, n.op);
  const died = new UcxError("UCS_ERR_ENDPOINT_TIMEOUT", "the peer died");
  const transport: Transport = {
    send: (_peer, _bytes, done) => done(),
    recv: (_peer, _bytes, _done, failed) => {
      void Promise.resolve().then(() => failed(died));
      return 1;
    },
    cancel: () => {},
    spin: async () => {
      for (let i = 0; i < 3; i++) await new Promise((r) => setTimeout(r, 5));
    },
  };
  const unhandled: unknown[] = [];
  const onUnhandled = (e: unknown) => unhandled.push(e);
  process.on("unhandledRejection", onUnhandled);
  try {
    let caught: unknown;
    await instance.execute(transport, new RunControl()).catch((e) => (caught = e));
    assert.is(caught, died);
    await new Promise((r) => setTimeout(r, 5));
    assert.equal(unhandled, []);
  } finally {
    process.off("unhandledRejection", onUnhandled);
  }
});

test("an abort fails a step that waits on a send alone (a rendezvous to a dead member's shared-memory endpoint never completes), and the send's late callback changes nothing", async () => {
  const n = normalize("allreduce", { send: new Float64Array(4), op: "sum" }, 0, 2);
  const template = PLAN_TEMPLATES.find((t) => t.coll === "allreduce" && t.configTable === undefined)!;
  const constant = template.build({ rank: 0, size: 2, count: n.count, root: n.root, commutative: true, elementSize: n.datatype.size }, {});
  const instance = new PlanInstance(constant, { send: n.send, recv: n.recv, scratch: n.datatype.create(constant.scratchCount) }, n.datatype, n.op);
  let lateSend: (() => void) | undefined;
  const cancelled: number[] = [];
  const transport: Transport = {
    send: (_peer, _bytes, done) => void (lateSend = done),
    recv: (_peer, _bytes, done) => {
      done(_bytes.length); // the peer's message was there: only the send is left
      return 7;
    },
    cancel: (id) => void cancelled.push(id),
  };
  const run = new RunControl();
  const died = new UcxError("UCS_ERR_ENDPOINT_TIMEOUT", "member 1 died");
  const result = instance.execute(transport, run).then(() => "resolved", (e: unknown) => e);
  await new Promise((r) => setTimeout(r, 5));
  assert.ok(lateSend, "the step posted its send");
  run.abort(died);
  assert.is(await Promise.race([result, new Promise((r) => setTimeout(() => r("still waiting 1 s after the abort"), 1000))]), died);
  lateSend!();
  assert.equal(cancelled, [7]);
});

test("a step whose messages come during pollNow completes there: no spin, no Promise awaited; one still pending past it awaits through the spin", async () => {
  // Member 0 of a 4-member allreduce (recursive doubling: two exchange steps). Its receives
  // complete only when pollNow (or the spin) "progresses", as channel.post's do inside progress().
  const run = async (answerInPollNow: boolean) => {
    const n = normalize("allreduce", { send: new Float64Array([1]), op: "sum" }, 0, 4);
    const template = PLAN_TEMPLATES.find((t) => t.name === "recursive_doubling/rd_allreduce")!;
    const constant = template.build({ rank: 0, size: 4, count: n.count, root: n.root, commutative: true, elementSize: n.datatype.size }, {});
    const instance = new PlanInstance(constant, { send: n.send, recv: n.recv, scratch: n.datatype.create(constant.scratchCount) }, n.datatype, n.op);
    const arrived: (() => void)[] = [];
    const deliver = () => arrived.splice(0).forEach((f) => f());
    let pollNows = 0;
    let spins = 0;
    const transport: Transport = {
      send: (_peer, _bytes, done) => done(),
      recv: (_peer, bytes, done) => {
        arrived.push(() => {
          new Float64Array(bytes.buffer, bytes.byteOffset, 1)[0] = 1;
          done(bytes.length);
        });
        return 1;
      },
      cancel: () => {},
      pollNow: (pending) => {
        pollNows++;
        if (answerInPollNow) deliver();
        assert.is(pending(), !answerInPollNow);
      },
      spin: async (pending) => {
        spins++;
        await undefined;
        deliver();
        assert.not.ok(pending());
      },
    };
    await instance.execute(transport, new RunControl());
    // Each peer "sends" 1: 1 + 1 after the first exchange, + 1 after the second.
    assert.equal([...n.recv], [3]);
    return { pollNows, spins };
  };
  assert.equal(await run(true), { pollNows: 2, spins: 0 });
  assert.equal(await run(false), { pollNows: 2, spins: 2 });
});

test("plan transfers on a blocking worker: a small send is done before postSend returns (zero-copy by the cost table or not), a receive reports inside the progress() that delivers it, a long message fails it UCS_ERR_MESSAGE_TRUNCATED", async () => {
  const worker = await Worker.create({ progressMode: "blocking", errorHandling: "none" });
  try {
    const channel = new Channel(worker, 0);
    channel.addEndpoint(1, await worker.settled(worker.connect(await worker.settled(worker.address()))));
    const events: string[] = [];
    const into = new Uint8Array(8);
    channel.post(into, 7, (length) => events.push(`recv ${length}`), (e) => events.push(`recv failed ${(e as UcxError).code}`));
    channel.postSend(1, Uint8Array.of(1, 2, 3, 4, 5, 6, 7, 8), 7, () => events.push("send"), () => events.push("send failed"));
    assert.equal(events, ["send"]);
    // Completions arrive inside progress(): no await between the poll and the callback.
    for (let i = 0; i < 100_000 && events.length < 2; i++) worker.progress();
    assert.equal(events, ["send", "recv 8"]);
    assert.equal([...into], [1, 2, 3, 4, 5, 6, 7, 8]);
    // Large: by its Promise (the buffer stays with UCX until then), and still intact.
    const big = new Uint8Array(1 << 20).map((_, i) => i & 0xff);
    const bigInto = new Uint8Array(big.length);
    events.length = 0;
    channel.post(bigInto, 8, (length) => events.push(`recv ${length}`), () => events.push("recv failed"));
    channel.postSend(1, big, 8, () => events.push("send"), () => events.push("send failed"));
    for (let i = 0; i < 100_000 && events.length < 2; i++) {
      worker.progress();
      await undefined;
    }
    assert.equal(events.sort(), ["recv 1048576", "send"]);
    assert.ok(bigInto.every((b, i) => b === (i & 0xff)));
    // Too long for the receive's buffer.
    events.length = 0;
    channel.post(new Uint8Array(4), 9, () => events.push("recv"), (e) => events.push(`recv failed ${(e as UcxError).code}`));
    channel.postSend(1, new Uint8Array(8), 9, () => {}, () => {});
    for (let i = 0; i < 100_000 && events.length < 1; i++) worker.progress();
    assert.equal(events, ["recv failed UCS_ERR_MESSAGE_TRUNCATED"]);
    await channel.close();
  } finally {
    await worker.close();
  }
});

test("decision trees: member-count questions are settled per group; the pick follows commutativity, size and UCX_TS_<COLL>_PLAN", () => {
  assert.equal(prune(DECISION_TREES.barrier, 8), { plan: 0 });
  assert.equal(prune(DECISION_TREES.barrier, 5), { plan: 1 });
  assert.equal(prune(DECISION_TREES.alltoall, 2), { plan: 0 });
  const pool = new PlanPool(configRegistry().resolve({}));
  const pick = (coll: "allreduce" | "alltoall" | "reduce_scatter", size: number, bytes: number, commutative = true) => pool.select(coll, size, { commutative, bytes, count: bytes / 8 }).name;
  assert.is(pick("allreduce", 4, 8), "recursive_doubling/rd_allreduce");
  assert.is(pick("allreduce", 4, 1 << 20), "sra/sra_allreduce");
  assert.is(pick("allreduce", 5, 1 << 20), "ring/ring_allreduce");
  assert.is(pick("allreduce", 2, 1 << 20), "ring/ring_allreduce");
  assert.is(pick("allreduce", 4, 1 << 20, false), "recursive_doubling/rd_allreduce");
  assert.is(pick("alltoall", 8, 8), "bruck/bruck_alltoall");
  // The double binary trees are opt-in by threshold (ppool.ts says why).
  assert.is(pool.select("bcast", 3, { commutative: true, bytes: 1 << 20, count: 1 << 20 }).name, "knomial/kn_bcast");
  const trees = new PlanPool(configRegistry().resolve({}, { UCX_TS_UCG_BCAST_DBT_BYTES: "256KiB", UCX_TS_UCG_REDUCE_DBT_BYTES: "256KiB" }));
  const reduce = (size: number, bytes: number, commutative: boolean) => trees.select("reduce", size, { commutative, bytes, count: bytes / 8 }).name;
  assert.is(reduce(8, 1 << 20, true), "dbt/dbt_reduce");
  assert.is(reduce(8, 1 << 20, false), "knomial/kn_reduce");
  assert.is(reduce(2, 1 << 20, true), "knomial/kn_reduce");
  assert.is(trees.select("bcast", 3, { commutative: true, bytes: 1 << 20, count: 1 << 20 }).name, "dbt/dbt_bcast");
  assert.is(pick("alltoall", 8, 4096), "pairwise/pairwise_alltoall");
  assert.is(pick("reduce_scatter", 3, 64, false), "recursive_doubling/rd_reduce_scatter");
  const forced = new PlanPool(configRegistry().resolve({ UCX_TS_ALLREDUCE_PLAN: "1" }));
  assert.is(forced.select("allreduce", 4, { commutative: true, bytes: 8, count: 1 }).name, "ring/ring_allreduce");
  assert.is(code(() => forced.select("allreduce", 4, { commutative: false, bytes: 8, count: 1 })), "UCX_TS_UNSUPPORTED");
  assert.is(code(() => new PlanPool(configRegistry().resolve({ UCX_TS_BCAST_PLAN: "7" }))), "UCX_TS_INVALID_ARGUMENT");
});

test("ops and datatypes: every predefined op on every type, C's wrapping, typed errors for what does not exist", () => {
  const i32 = new Int32Array([2 ** 30, -5]);
  resolveOp("prod", DATATYPES.int32).combine(i32, new Int32Array([4, 3]), i32);
  assert.equal(Array.from(i32), [0, -15]); // 2^32 wraps to 0, as int32_t does
  const u8 = new Uint8Array([250]);
  resolveOp("sum", DATATYPES.uint8).combine(u8, new Uint8Array([10]), u8);
  assert.is(u8[0], 4);
  const big = new BigInt64Array([2n ** 62n]);
  resolveOp("sum", DATATYPES.int64).combine(big, new BigInt64Array([2n ** 62n]), big);
  assert.is(big[0], -(2n ** 63n));
  const land = new BigUint64Array([3n, 0n]);
  resolveOp("land", DATATYPES.uint64).combine(land, new BigUint64Array([5n, 1n]), land);
  assert.equal(Array.from(land), [1n, 0n]);
  assert.is(code(() => resolveOp("bxor", DATATYPES.float64)), "UCX_TS_INVALID_ARGUMENT");
  assert.is(code(() => resolveOp("avg" as never, DATATYPES.float64)), "UCX_TS_INVALID_ARGUMENT");
  assert.is(code(() => datatypeOf([1, 2])), "UCX_TS_INVALID_ARGUMENT");
  assert.is(code(() => datatypeOf(new Uint8ClampedArray(1))), "UCX_TS_INVALID_ARGUMENT");
  assert.is(code(() => defineOp(() => {}, {} as never)), "UCX_TS_INVALID_ARGUMENT");
});

test("dbtSegments cuts a vector into two halves of segments that cover it once, in order, each within the segment size", () => {
  for (const [count, elementSize, segmentBytes] of [[0, 8, 64], [1, 8, 64], [7, 4, 8], [1000, 8, 64], [1001, 1, 100], [5, 8, 1]] as const) {
    const cut = dbtSegments(count, elementSize, segmentBytes);
    const perSegment = Math.max(1, Math.floor(segmentBytes / elementSize));
    let next = 0;
    let largest = 0;
    for (const which of [0, 1] as const) {
      assert.ok(cut.segments[which] >= 1, `${count}: half ${which} has ${cut.segments[which]} segments`);
      for (let j = 0; j < cut.segments[which]; j++) {
        const s = cut.segment(which, j);
        assert.is(s.offset, next, `${count}/${elementSize}/${segmentBytes}: half ${which} segment ${j} starts at ${s.offset}, expected ${next}`);
        assert.ok(s.count <= perSegment, `${count}: segment of ${s.count} > ${perSegment}`);
        next += s.count;
        largest = Math.max(largest, s.count);
      }
      // The first half is the larger one (rounded up), as both trees' plans expect.
      if (which === 0) assert.is(next, Math.ceil(count / 2));
    }
    assert.is(next, count);
    assert.is(cut.largest, largest);
  }
});

test("binding: CPU lists parse or are refused, a rank gets the r-th allowed CPU only with a core per rank, UCX_TS_BIND_TO is checked", () => {
  assert.equal(parseCpuList("0-3,6,8-9\n"), [0, 1, 2, 3, 6, 8, 9]);
  assert.equal(parseCpuList("5"), [5]);
  for (const bad of ["", "a", "3-1", "1,,2", "-1"]) assert.is(parseCpuList(bad), undefined, bad);
  assert.equal(bindPrefix(1, 2, "core", [4, 6], "/usr/bin/taskset"), ["/usr/bin/taskset", "-c", "6"]);
  assert.equal(bindPrefix(1, 3, "core", [4, 6], "/usr/bin/taskset"), []);
  assert.equal(bindPrefix(1, 2, "none", [4, 6], "/usr/bin/taskset"), []);
  assert.equal(bindPrefix(1, 2, "core", undefined, "/usr/bin/taskset"), []);
  assert.equal(bindPrefix(1, 2, "core", [4, 6], undefined), []);
  assert.is(bindPolicy({}), "core");
  assert.is(bindPolicy({ UCX_TS_BIND_TO: "none" }), "none");
  assert.throws(() => bindPolicy({ UCX_TS_BIND_TO: "socket" }), (e: unknown) => e instanceof UcxError && e.code === "UCX_TS_INVALID_ARGUMENT");
});

test("oversubscription: more ranks than allowed CPUs get polling progress unless a mode is given or UCX_TS_UCG_PROGRESS is set; a CPU per rank gets nothing", () => {
  const two = [0, 1];
  assert.ok(isOversubscribed(3, two));
  assert.not.ok(isOversubscribed(2, two));
  assert.is(rankProgress(3, two, undefined, {}), "polling");
  assert.is(rankProgress(8, two, "auto", { UCX_TS_UCG_PROGRESS: "" }), "polling");
  assert.is(rankProgress(2, two, undefined, {}), undefined);
  assert.is(rankProgress(1, [5], "auto", {}), undefined);
  // The caller's choice wins: a mode given, or the variable (passed on to the ranks as it is).
  assert.is(rankProgress(8, two, "blocking", {}), "blocking");
  assert.is(rankProgress(8, two, "blocking", { UCX_TS_UCG_PROGRESS: "hybrid" }), "blocking");
  assert.is(rankProgress(2, two, "polling", {}), "polling");
  assert.is(rankProgress(8, two, undefined, { UCX_TS_UCG_PROGRESS: "blocking" }), undefined);
  assert.is(parseLaunchProgress(" Polling "), "polling");
  assert.is(parseLaunchProgress("auto"), "auto");
  for (const bad of [undefined, "", "spin", "poll"]) assert.is(code(() => parseLaunchProgress(bad)), "UCX_TS_INVALID_ARGUMENT", String(bad));
});

test.run();
