/**
 * The FFI floor of an active message (issue 21): what one `size`-byte AM costs through the same
 * backend (koffi, Deno.dlopen, bun:ffi) with none of ucx-ts's engine. Two workers in ONE process,
 * each its own context, a to b by worker address (error handling none: shared memory, as between
 * two processes); the AM handler, JavaScript called by UCX, fetches a rendezvous message with
 * ucp_am_recv_data_nbx into one fixed buffer (no callback: its request is checked after progress)
 * and copies nothing else; the sender keeps `window` ucp_am_send_nbx requests in flight and
 * polls them. Prints CPU and wall us per message, as bench/am-profile.ts does for ucx-ts.
 *
 *   <runtime> bench/am-floor.ts [size=65536] [window=16] [windows=2000]
 */
import process from "node:process";
import { callbackTypes, ptrIsError, UCX_CONSTANTS as C } from "../src/ffi/index.ts";
import { Context } from "../src/core/context.ts";
import { ucx } from "../src/core/library.ts";
import { OutSlots } from "../src/core/out-slots.ts";

const size = Number(process.argv[2] ?? 65536);
const window = Number(process.argv[3] ?? 16);
const windows = Number(process.argv[4] ?? 2000);
const u = ucx();
const out = new OutSlots(2);
const check = (s: number, what: string) => {
  if (s !== 0) throw new Error(`${what}: ${s}`);
};

function makeWorker() {
  const context = new Context({ features: ["am"] });
  const wp = u.struct("ucp_worker_params_t");
  wp.set("field_mask", C.UCP_WORKER_PARAM_FIELD_THREAD_MODE);
  wp.set("thread_mode", C.UCS_THREAD_MODE_SINGLE);
  check(u.ucp_worker_create(context.handle, u.addressOf(wp.bytes), out.address()), "ucp_worker_create");
  return { context, worker: out.pointer() };
}
const a = makeWorker();
const b = makeWorker();
check(u.ucp_worker_get_address(b.worker, out.address(0), out.address(1)), "ucp_worker_get_address");
const address = new Uint8Array(u.view(out.pointer(0), out.pointer(1))).slice();
const ep = (() => {
  const p = u.struct("ucp_ep_params_t");
  p.set("field_mask", C.UCP_EP_PARAM_FIELD_REMOTE_ADDRESS);
  p.set("address", u.addressOf(address));
  check(u.ucp_ep_create(a.worker, u.addressOf(p.bytes), out.address()), "ucp_ep_create");
  return out.pointer();
})();

const into = new Uint8Array(size);
const intoAddress = u.addressOf(into);
const param = u.struct("ucp_request_param_t");
const paramAddress = u.addressOf(param.bytes);
const recvParam = u.struct("ucp_request_param_t");
const recvParamAddress = u.addressOf(recvParam.bytes);
const fetches: number[] = [];
let arrived = 0;
const handler = u.callback(callbackTypes.ucp_am_recv_callback_t, (_arg: number, _h: number, _hl: number, data: number, length: number, recvParamPtr: number) => {
  arrived++;
  // ucp_am_recv_param_t's recv_attr is its first word: the rendezvous flag says where the data is.
  const attr = new Uint32Array(u.view(recvParamPtr, 8))[0]!;
  if (!(attr & C.UCP_AM_RECV_ATTR_FLAG_RNDV)) return 0; // eager: would be copied here
  const r = u.ucp_am_recv_data_nbx(b.worker, data, intoAddress, length, recvParamAddress);
  if (r !== 0 && !ptrIsError(r)) fetches.push(r);
  return 1; // UCS_INPROGRESS: UCX keeps the descriptor until the fetch is done
});
const hp = u.struct("ucp_am_handler_param_t");
hp.set("field_mask", C.UCP_AM_HANDLER_PARAM_FIELD_ID | C.UCP_AM_HANDLER_PARAM_FIELD_CB);
hp.set("id", 5);
hp.set("cb", handler.address);
check(u.ucp_worker_set_am_recv_handler(b.worker, u.addressOf(hp.bytes)), "ucp_worker_set_am_recv_handler");

const payload = new Uint8Array(size).fill(7);
const payloadAddress = u.addressOf(payload);
const sends: number[] = [];
let progressCalls = 0;
function oneWindow(): void {
  const target = arrived + window;
  for (let i = 0; i < window; i++) {
    const r = u.ucp_am_send_nbx(ep, 5, 0, 0, payloadAddress, size, paramAddress);
    if (r !== 0 && !ptrIsError(r)) sends.push(r);
  }
  while (arrived < target || sends.length > 0 || fetches.length > 0) {
    u.ucp_worker_progress(a.worker);
    u.ucp_worker_progress(b.worker);
    progressCalls += 2;
    for (const list of [sends, fetches])
      for (let i = list.length - 1; i >= 0; i--)
        if (u.ucp_request_check_status(list[i]!) !== 1) {
          u.ucp_request_free(list[i]!);
          list[i] = list[list.length - 1]!;
          list.pop();
        }
  }
}
for (let w = 0, until = performance.now() + 1000; w < windows && performance.now() < until; w++) oneWindow();
progressCalls = 0;
const c0 = process.cpuUsage();
const t0 = performance.now();
for (let w = 0; w < windows; w++) oneWindow();
const wallMs = performance.now() - t0;
const cpu = process.cpuUsage(c0);
const n = window * windows;
process.stdout.write(
  JSON.stringify({ floor: true, size, window, messages: n, wallUsPerMessage: (wallMs * 1000) / n, cpuUsPerMessage: (cpu.user + cpu.system) / n, GBps: (n * size) / (wallMs / 1000) / 1e9, progressPerMessage: progressCalls / n }) + "\n",
);
process.exit(0);
