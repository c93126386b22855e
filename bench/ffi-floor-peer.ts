/**
 * The FFI floor: the smallest two-process ping-pong and windowed send that call the same UCX
 * functions through the same backend (koffi, Deno.dlopen, bun:ffi) as ucx-ts, with none of its
 * engine: no ring, no thread, no Promise, no request records. Every ucx-ts figure of
 * bench/run-p2p.mjs is shown against this one (issue 21: "measured against the runtime's own FFI
 * floor"); what ucx-ts costs above it is the engine's, what it costs above ucx_perftest is the FFI's.
 *
 *   <runtime> bench/ffi-floor-peer.ts server <errorHandling>
 *   <runtime> bench/ffi-floor-peer.ts client <errorHandling> <port> <plan-json>
 *
 * The two exchange worker addresses over a node:net socket (the server prints {"port"}), each
 * creates an endpoint to the other's address, then the client runs the plan's latency points
 * (tag 1 out, tag 2 back) and bandwidth points (a window of tag 3 sends, then tag 4, answered by
 * tag 5), and its active-message points (plan rows "am" and "amMany": a window of
 * ucp_am_send_nbx with UCXX's 14-byte plain header and UCP_AM_SEND_FLAG_REPLY, plus
 * UCP_AM_SEND_FLAG_EAGER where ucx-ts's default protocol asks for it (src/core/am/send-protocol.ts), as ucx-ts sends,
 * then tag 6 carrying how many have been sent in all, answered by tag 5 once that many arrived),
 * and prints one JSON line, in p2p-peer.ts's format. Tag 9 ends the server.
 * The AM handler does what any receiver of an eager message must, and no more: one memcpy of
 * the receive parameters (the rendezvous flag, the reply endpoint), one of the data into a fixed
 * buffer; a rendezvous message is fetched (ucp_am_recv_data_nbx) into that buffer.
 * Everything runs on the main thread and busy-polls ucp_worker_progress, as ucx_perftest does.
 *
 * UCX_TS_FLOOR_PROMISE=1 makes it the **Promise floor** instead: the least any API that hands out
 * one Promise per receive pays on this runtime. Each ping-pong receive (both sides) is posted
 * with a completion callback (UCX calling into JavaScript, as ucx-ts's receives do), and is a
 * Promise that a progress loop, started as a microtask, resolves once the callback fired
 * (ucp_tag_recv_request_test for the sender tag and length, ucp_request_free); the receiver
 * awaits it. Sends stay synchronous (ucx-ts resolves an eager send's Promise on its post). What
 * an ucx-ts round trip costs above this floor is its engine's; what this floor costs above the
 * FFI floor is the Promise and the callback, which no Promise-per-message API escapes
 * (issue 21's "polling at most 1.5x the floor" is measured against both).
 *
 * UCX_TS_FLOOR_CALLBACK=1 instead: the same receives with a completion callback, but no Promise:
 * the loop spins on ucp_worker_progress until the callback fired. What it costs above the FFI
 * floor is UCX calling into JavaScript once a receive (why direct-tags.ts polls its receives).
 */
import { createConnection, createServer, type Socket } from "node:net";
import process from "node:process";
import { callbackTypes, ptrIsError, runtime, UCX_CONSTANTS as C } from "../src/ffi/index.ts";
import { Context } from "../src/core/context.ts";
import { ucx } from "../src/core/library.ts";
import { OutSlots } from "../src/core/out-slots.ts";
import { amSendFlags, protocolFlags } from "../src/core/am/send-protocol.ts";
import { rttResults } from "./rtt-tail.ts";
import { windowTrace } from "./window-trace.ts";
import { warmUpSync } from "./warm-up.ts";
import { mark, Mark, resetTurnaround, TURNAROUND, turnaroundSnapshot } from "../src/core/turnaround.ts";
import { writeFileSync } from "node:fs";

const [role, errorHandling = "none", portText = "0", planText = "{}"] = process.argv.slice(2);
setTimeout(() => process.exit(3), 300_000).unref?.();
const u = ucx();
const UCS_OK = 0;
const UCS_INPROGRESS = 1;
/** The largest message of any plan point. */
const MAX_BYTES = 4 << 20;

// --- one worker, no engine ------------------------------------------------------------------------
const context = new Context({ features: ["tag", "am"] });
const out = new OutSlots(2);
const wp = u.struct("ucp_worker_params_t");
wp.set("field_mask", C.UCP_WORKER_PARAM_FIELD_THREAD_MODE);
wp.set("thread_mode", C.UCS_THREAD_MODE_SINGLE);
check(u.ucp_worker_create(context.handle, u.addressOf(wp.bytes), out.address()), "ucp_worker_create");
const worker = out.pointer();

check(u.ucp_worker_get_address(worker, out.address(0), out.address(1)), "ucp_worker_get_address");
const myAddress = new Uint8Array(u.view(out.pointer(0), out.pointer(1))).slice();

/**
 * The request parameters for sends (nothing set) and receives (recv_info, never an immediate
 * completion), and the receive info, held in one object that the hot functions below read their
 * addresses from. Not only the addresses: an address keeps nothing alive, and on Bun a module-level
 * struct that the loop no longer names was collected once the loop was JIT-compiled, and UCX then
 * read freed memory as its request parameters (the "Invalid data type" abort of
 * ucp_tag_send_nbx, and receives returning -2 or crashing in ucp_request_free, seen 2026-11-25).
 */
const scratch = (() => {
  const sendParam = u.struct("ucp_request_param_t");
  const recvParam = u.struct("ucp_request_param_t");
  recvParam.set("op_attr_mask", C.UCP_OP_ATTR_FLAG_NO_IMM_CMPL);
  const recvInfo = u.struct("ucp_tag_recv_info_t");
  // The same flags as an ucx-ts amSend of that size ("auto": eager up to 64 KiB), one parameter
  // struct per flag value seen.
  const amSendParams = new Map<number, { bytes: Uint8Array; address: number }>();
  const amSendParamFor = (size: number) => {
    const flags = amSendFlags(C.UCP_AM_SEND_FLAG_REPLY | protocolFlags("auto"), size);
    let p = amSendParams.get(flags);
    if (!p) {
      const param = u.struct("ucp_request_param_t");
      param.set("op_attr_mask", C.UCP_OP_ATTR_FIELD_FLAGS);
      param.set("flags", flags);
      p = { bytes: param.bytes, address: u.addressOf(param.bytes) as number };
      amSendParams.set(flags, p);
    }
    return p.address;
  };
  const amFetchParam = u.struct("ucp_request_param_t");
  const amHeader = new Uint8Array(14);
  const amStaging = new Uint8Array(16);
  const amInto = new Uint8Array(MAX_BYTES);
  return {
    amFetchParam,
    amHeader,
    amStaging,
    amInto,
    amSendParamFor,
    amFetchParamAddress: u.addressOf(amFetchParam.bytes),
    amHeaderAddress: u.addressOf(amHeader),
    amStagingAddress: u.addressOf(amStaging),
    amStagingWords: new Uint32Array(amStaging.buffer),
    amIntoAddress: u.addressOf(amInto),
    sendParam,
    recvParam,
    recvInfo,
    recvInfoWords: new Uint32Array(recvInfo.bytes.buffer, recvInfo.bytes.byteOffset, 4),
    sendParamAddress: u.addressOf(sendParam.bytes),
    recvParamAddress: u.addressOf(recvParam.bytes),
    recvInfoAddress: u.addressOf(recvInfo.bytes),
  };
})();

// --- the Promise floor (UCX_TS_FLOOR_PROMISE=1) ----------------------------------------------------
const PROMISE = process.env.UCX_TS_FLOOR_PROMISE === "1";
const CALLBACK = process.env.UCX_TS_FLOOR_CALLBACK === "1";
/** Set by the receive callback (inside ucp_worker_progress, or inside the post for a message already there). */
let fired = false;
const recvCallback = PROMISE || CALLBACK ? u.callback(callbackTypes.ucp_tag_recv_nbx_callback_t, () => void (fired = true)) : undefined;
if (recvCallback) {
  scratch.recvParam.set("op_attr_mask", C.UCP_OP_ATTR_FLAG_NO_IMM_CMPL | C.UCP_OP_ATTR_FIELD_CALLBACK);
  scratch.recvParam.set("cb", recvCallback.address);
}
type Received = { tag: number; length: number };
/** The receive the progress loop finishes, and its Promise's resolve. */
let awaitedRequest = 0;
let resolveAwaited: (r: Received) => void = () => undefined;
const capture = (resolve: (r: Received) => void) => void (resolveAwaited = resolve);
/** The progress loop: spin until the callback fired, then finish the receive and resolve its Promise. */
const driveAwaited = () => {
  while (!fired) u.ucp_worker_progress(worker);
  resolveAwaited(finishRecv(awaitedRequest));
};
/** UCX_TS_FLOOR_CALLBACK: a receive found done by its callback, synchronously. */
function recvByCallback(buffer: Uint8Array, tag: number, mask: number): Received {
  fired = false;
  const request = postRecv(buffer, tag, mask);
  if (ptrIsError(request)) throw new Error(`ucp_tag_recv_nbx failed: ${request}`);
  while (!fired) u.ucp_worker_progress(worker);
  return finishRecv(request);
}

/** A receive as a Promise, resolved by a progress loop that runs as the next microtask. */
function recvAwaited(buffer: Uint8Array, tag: number, mask: number): Promise<Received> {
  fired = false;
  awaitedRequest = postRecv(buffer, tag, mask);
  if (ptrIsError(awaitedRequest)) throw new Error(`ucp_tag_recv_nbx failed: ${awaitedRequest}`);
  const p = new Promise<Received>(capture);
  queueMicrotask(driveAwaited);
  return p;
}

// --- active messages: the least a receiver of them does ------------------------------------------
const AM_ID = 7;
let amArrived = 0;
/** Rendezvous fetches in flight (checked after progress). */
const amFetches: number[] = [];
const amHandler = u.callback(callbackTypes.ucp_am_recv_callback_t, (_arg: number, _h: number, _hl: number, data: number, length: number, param: number) => {
  amArrived++;
  u.memcpy(scratch.amStagingAddress, param, 16);
  if (!(scratch.amStagingWords[0]! & C.UCP_AM_RECV_ATTR_FLAG_RNDV)) {
    if (length > 0) u.memcpy(scratch.amIntoAddress, data, length);
    return UCS_OK;
  }
  const r = u.ucp_am_recv_data_nbx(worker, data, scratch.amIntoAddress, length, scratch.amFetchParamAddress);
  if (r !== 0 && !ptrIsError(r)) amFetches.push(r);
  return UCS_INPROGRESS; // UCX keeps the descriptor until the fetch is done
});
{
  const hp = u.struct("ucp_am_handler_param_t");
  hp.set("field_mask", C.UCP_AM_HANDLER_PARAM_FIELD_ID | C.UCP_AM_HANDLER_PARAM_FIELD_CB);
  hp.set("id", AM_ID);
  hp.set("cb", amHandler.address);
  check(u.ucp_worker_set_am_recv_handler(worker, u.addressOf(hp.bytes)), "ucp_worker_set_am_recv_handler");
}
/** Progress until `count` active messages arrived in all and every fetch is done. */
function waitActiveMessages(count: number): void {
  while (amArrived < count || amFetches.length > 0) {
    u.ucp_worker_progress(worker);
    for (let i = amFetches.length - 1; i >= 0; i--)
      if (u.ucp_request_check_status(amFetches[i]!) !== UCS_INPROGRESS) {
        u.ucp_request_free(amFetches[i]!);
        amFetches[i] = amFetches[amFetches.length - 1]!;
        amFetches.pop();
      }
  }
}

function check(status: number, what: string): void {
  if (status !== UCS_OK) throw new Error(`${what} failed: ${status}`);
}

/** Progress until `request` (a send's or a receive's) is done, then free it. */
function waitRequest(request: number, what: string): void {
  if (request === 0) return;
  if (ptrIsError(request)) throw new Error(`${what} failed: ${request}`);
  let status: number;
  while ((status = u.ucp_request_check_status(request)) === UCS_INPROGRESS) u.ucp_worker_progress(worker);
  u.ucp_request_free(request);
  check(status, what);
}

/** A posted receive; `finish` progresses until it is done and returns its sender tag (low word) and length. */
function postRecv(buffer: Uint8Array, tag: number, mask: number): number {
  return u.ucp_tag_recv_nbx(worker, u.addressOf(buffer), buffer.length, tag, mask, scratch.recvParamAddress);
}
function finishRecv(request: number): { tag: number; length: number } {
  if (ptrIsError(request)) throw new Error(`ucp_tag_recv_nbx failed: ${request}`);
  let status: number;
  while ((status = u.ucp_tag_recv_request_test(request, scratch.recvInfoAddress)) === UCS_INPROGRESS) u.ucp_worker_progress(worker);
  if (TURNAROUND) mark(Mark.Arrived);
  u.ucp_request_free(request);
  if (status !== UCS_OK) throw new Error(`receive failed: ${status} (tag ${scratch.recvInfoWords[0]}, length ${scratch.recvInfoWords[2]}, buffer at ${request})`);
  return { tag: scratch.recvInfoWords[0]!, length: scratch.recvInfoWords[2]! };
}

function send(ep: number, bytes: Uint8Array, tag: number): number {
  if (TURNAROUND) mark(Mark.Posted);
  return u.ucp_tag_send_nbx(ep, u.addressOf(bytes), bytes.length, tag, scratch.sendParamAddress);
}

// --- rendezvous over TCP: exchange addresses, connect both ways ------------------------------------
function readFrame(socket: Socket): Promise<Uint8Array> {
  return new Promise((resolve, reject) => {
    let got = Buffer.alloc(0);
    socket.on("data", (d: Buffer) => {
      got = Buffer.concat([got, d]);
      if (got.length >= 4 && got.length >= 4 + got.readUInt32LE(0)) resolve(new Uint8Array(got.subarray(4, 4 + got.readUInt32LE(0))));
    });
    socket.on("error", reject);
  });
}
function frame(bytes: Uint8Array): Buffer {
  const b = Buffer.alloc(4 + bytes.length);
  b.writeUInt32LE(bytes.length, 0);
  b.set(bytes, 4);
  return b;
}

let socket: Socket;
if (role === "server") {
  socket = await new Promise<Socket>((resolve) => {
    const server = createServer((s) => {
      server.close();
      resolve(s);
    });
    server.listen(0, "127.0.0.1", () => process.stdout.write(JSON.stringify({ port: (server.address() as { port: number }).port }) + "\n"));
  });
} else {
  socket = createConnection({ host: "127.0.0.1", port: Number(portText) });
  await new Promise((resolve) => socket.once("connect", resolve));
}
socket.write(frame(myAddress));
const peerAddress = await readFrame(socket);
socket.destroy();

const ep = (() => {
  const p = u.struct("ucp_ep_params_t");
  p.set("field_mask", C.UCP_EP_PARAM_FIELD_REMOTE_ADDRESS | C.UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE);
  p.set("address", u.addressOf(peerAddress));
  p.set("err_mode", errorHandling === "peer" ? C.UCP_ERR_HANDLING_MODE_PEER : C.UCP_ERR_HANDLING_MODE_NONE);
  check(u.ucp_ep_create(worker, u.addressOf(p.bytes), out.address()), "ucp_ep_create");
  return out.pointer();
})();

// --- the measured loops ---------------------------------------------------------------------------
const MAX = MAX_BYTES;
/**
 * UCX_TS_BENCH_RTT=<prefix> with UCX_TS_TURNAROUND=1: each side's turnaround marks over the latency
 * rows (src/core/turnaround.ts), written to <prefix>.floor-<runtime>-<role>.json, as p2p-peer.ts
 * writes ucx-ts's; the client's tag 10 (no answer) starts the server's count, which ends at the
 * next message that is not a ping.
 */
const rttPrefix = TURNAROUND ? process.env.UCX_TS_BENCH_RTT : undefined;
const writeTurnaround = (side: string) => {
  if (rttPrefix) writeFileSync(`${rttPrefix}.floor-${runtime}-${side}.json`, JSON.stringify({ side, turnaround: turnaroundSnapshot() }));
};
const trace = windowTrace(`floor-${role}`);
if (role === "server") {
  const buf = new Uint8Array(MAX);
  const ack = new Uint8Array(8);
  let counting = false;
  for (;;) {
    const { tag, length } = PROMISE ? await recvAwaited(buf, 0, 0) : CALLBACK ? recvByCallback(buf, 0, 0) : finishRecv(postRecv(buf, 0, 0));
    if (tag === 10) {
      resetTurnaround();
      counting = true;
      continue;
    }
    if (counting && tag !== 1) {
      writeTurnaround("server");
      counting = false;
    }
    if (tag === 9) {
      // The client waits for this reply before it exits: its end arrived. The flush lets the reply
      // leave; with error handling "peer" it may fail once the client has read it and gone.
      waitRequest(send(ep, ack, 10), "bye");
      const flush = u.ucp_ep_flush_nbx(ep, scratch.sendParamAddress);
      if (flush !== 0 && !ptrIsError(flush)) {
        while (u.ucp_request_check_status(flush) === UCS_INPROGRESS) u.ucp_worker_progress(worker);
        u.ucp_request_free(flush);
      }
      break;
    }
    if (tag === 1) waitRequest(send(ep, buf.subarray(0, length), 2), "echo");
    else if (tag === 6) {
      waitActiveMessages(new DataView(buf.buffer, 0, 8).getFloat64(0, true));
      waitRequest(send(ep, ack, 5), "ack");
      trace.mark("window");
    }
    else if (tag === 4) {
      waitRequest(send(ep, ack, 5), "ack");
      trace.mark("window");
    }
  }
} else {
  const plan = JSON.parse(planText) as { latency: [number, number][]; bandwidth: [number, number, number][]; am?: [number, number, number][]; amMany?: [number, number, number][] };
  const data = new Uint8Array(MAX).fill(7);
  const back = new Uint8Array(MAX);
  const results: { kind: string; size: number; value: number; iterations: number }[] = [];
  const roundTrip = (size: number) => {
    if (CALLBACK) {
      fired = false;
      const r = postRecv(back, 2, -1);
      waitRequest(send(ep, data.subarray(0, size), 1), "send");
      while (!fired) u.ucp_worker_progress(worker);
      finishRecv(r);
      return;
    }
    const r = postRecv(back, 2, -1);
    waitRequest(send(ep, data.subarray(0, size), 1), "send");
    finishRecv(r);
  };
  const roundTripAwaited = async (size: number) => {
    const r = recvAwaited(back, 2, -1);
    waitRequest(send(ep, data.subarray(0, size), 1), "send");
    await r;
  };
  // Warm up as p2p-peer.ts does (wire-up, JIT), for a second.
  for (const until = performance.now() + 1000; performance.now() < until; ) PROMISE ? await roundTripAwaited(8) : roundTrip(8);
  if (rttPrefix && plan.latency.length > 0) {
    waitRequest(send(ep, data.subarray(0, 0), 10), "count start");
    resetTurnaround();
  }
  for (const [size, iterations] of plan.latency) {
    const rtts: number[] = [];
    for (let i = 0; i < iterations + 20; i++) {
      const t0 = performance.now();
      if (PROMISE) await roundTripAwaited(size);
      else roundTrip(size);
      if (i >= 20) rtts.push((performance.now() - t0) * 1000);
    }
    // The tail too (issue 21: p99 at most 5x the median) and what kind of tail (rtt-tail.ts).
    results.push(...rttResults(size, iterations, rtts));
  }
  writeTurnaround("client");
  const ack = new Uint8Array(8);
  // Each windowed row warms up first, untimed, as p2p-peer.ts's rows do (warm-up.ts).
  for (const [size, window, rounds] of plan.bandwidth) {
    const round = () => {
      const sends: number[] = [];
      for (let i = 0; i < window; i++) sends.push(send(ep, data.subarray(0, size), 3));
      const a = postRecv(ack, 5, -1);
      for (const s of sends) waitRequest(s, "window send");
      waitRequest(send(ep, ack, 4), "round end");
      finishRecv(a);
    };
    warmUpSync(round);
    let bytes = 0;
    const t0 = performance.now();
    for (let r = 0; r < rounds; r++) {
      round();
      trace.mark(`bw/${size}`);
      bytes += size * window;
    }
    results.push({ kind: "bw_MBps", size, value: bytes / ((performance.now() - t0) / 1000) / 1e6, iterations: rounds * window });
  }
  // Active messages: the plan's AM sizes (rows "am" and "amMany", each size once), as ucx_perftest's ucp_am_bw.
  const amPoints = [...(plan.am ?? []), ...(plan.amMany ?? []).filter((p) => !(plan.am ?? []).some((q) => q[0] === p[0]))];
  const count = new Uint8Array(8);
  let amSent = 0;
  for (const [size, window, rounds] of amPoints) {
    const amParam = scratch.amSendParamFor(size);
    const round = () => {
      const sends: number[] = [];
      const a = postRecv(ack, 5, -1);
      for (let i = 0; i < window; i++) {
        const s = u.ucp_am_send_nbx(ep, AM_ID, scratch.amHeaderAddress, 14, u.addressOf(data), size, amParam);
        if (ptrIsError(s)) throw new Error(`ucp_am_send_nbx failed: ${s}`);
        if (s !== 0) sends.push(s);
      }
      amSent += window;
      for (const s of sends) waitRequest(s, "AM window send");
      new DataView(count.buffer).setFloat64(0, amSent, true);
      waitRequest(send(ep, count, 6), "AM round end");
      finishRecv(a);
    };
    warmUpSync(round);
    let bytes = 0;
    const t0 = performance.now();
    for (let r = 0; r < rounds; r++) {
      round();
      trace.mark(`am/${size}`);
      bytes += size * window;
    }
    results.push({ kind: "am_bw_MBps", size, value: bytes / ((performance.now() - t0) / 1000) / 1e6, iterations: rounds * window });
  }
  // The server answers the end before it exits (a flush here would fail with
  // UCS_ERR_CONNECTION_RESET under error handling "peer" once the server is gone).
  const bye = postRecv(ack, 10, -1);
  waitRequest(send(ep, new Uint8Array(1), 9), "end");
  finishRecv(bye);
  process.stdout.write(JSON.stringify(results) + "\n");
}
await trace.write();
// Closed only now: the handler is named here, so it lives (not collected) while UCX may call it.
amHandler.close();
recvCallback?.close();
process.exit(0);
