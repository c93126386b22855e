/**
 * Parts of thread mode's takeover that need no UCX: the fast requests' idle scan
 * (engine/fast-requests.ts) against a stub of the C functions it calls, and the count of loops
 * parked on an event-loop turn (engine/event-loop.ts), which sets how often a spinning loop yields.
 */
import { suite } from "uvu";
import * as assert from "uvu/assert";
import type { Ucx } from "../../src/ffi/index.ts";
import { FastRequests } from "../../src/core/engine/fast-requests.ts";
import { FastKind, TakeoverState } from "../../src/core/engine/takeover-state.ts";
import { othersParked, parkedOn } from "../../src/core/engine/event-loop.ts";

const test = suite("core/takeover-parts");

const UCS_OK = 0;
const UCS_INPROGRESS = 1;

/** The C functions FastRequests calls, counted; `done` holds the requests that have completed. */
function stubUcx(done: Set<number>) {
  const checked: number[] = [];
  const freed: number[] = [];
  const u = {
    struct: () => ({ bytes: new Uint8Array(32) }),
    addressOf: () => 0,
    ucp_request_check_status: (r: number) => {
      checked.push(r);
      return done.has(r) ? UCS_OK : UCS_INPROGRESS;
    },
    ucp_tag_recv_request_test: () => UCS_OK,
    ucp_stream_recv_request_test: () => UCS_OK,
    ucp_request_free: (r: number) => void freed.push(r),
  };
  return { u: u as unknown as Ucx, checked, freed };
}

test("an idle scan checks each request at most once, however large its budget", () => {
  const done = new Set<number>();
  const { u, checked } = stubUcx(done);
  const fast = new FastRequests(u, TakeoverState.create(16));
  fast.add(1001, 1, FastKind.TagRecv, 0);
  const reports: number[] = [];
  assert.is(fast.checkSome(8, (id) => reports.push(id)), 0);
  assert.equal(checked, [1001], "one receive, one check (it was checked 8 times)");
  fast.add(1002, 2, FastKind.Send, 7);
  fast.add(1003, 3, FastKind.Send, 7);
  checked.length = 0;
  fast.checkSome(8, () => {});
  assert.is(checked.length, 3);
  assert.equal(new Set(checked), new Set([1001, 1002, 1003]));
  assert.equal(reports, []);
});

test("an idle scan with fewer budget than requests goes round robin, and reports and frees those done", () => {
  const done = new Set<number>();
  const { u, checked, freed } = stubUcx(done);
  const fast = new FastRequests(u, TakeoverState.create(16));
  for (let i = 1; i <= 5; i++) fast.add(1000 + i, i, FastKind.Send, 7);
  fast.checkSome(2, () => {});
  fast.checkSome(2, () => {});
  fast.checkSome(2, () => {});
  // Six checks over five requests: every one of them once before any twice.
  assert.equal(new Set(checked.slice(0, 5)).size, 5);
  done.add(1003);
  const reports: [number, number][] = [];
  for (let k = 0; k < 3 && reports.length === 0; k++) fast.checkSome(2, (id, status) => reports.push([id, status]));
  assert.equal(reports, [[3, UCS_OK]]);
  assert.equal(freed, [1003]);
  assert.is(fast.count, 4);
});

test("loops parked on an event-loop turn are counted while they wait, also when the wait fails", async () => {
  assert.is(othersParked(), false);
  let release!: () => void;
  const parked = parkedOn(new Promise<void>((r) => (release = r)));
  assert.is(othersParked(), true);
  let fail!: (e: Error) => void;
  const failing = parkedOn(new Promise<void>((_r, j) => (fail = j)));
  release();
  await parked;
  assert.is(othersParked(), true, "one still parked");
  fail(new Error("gone"));
  await failing.then(
    () => assert.unreachable("must reject"),
    (e: Error) => assert.is(e.message, "gone"),
  );
  assert.is(othersParked(), false);
});

test.run();
