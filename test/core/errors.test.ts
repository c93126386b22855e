import { suite } from "uvu";
import * as assert from "uvu/assert";
import { check, Context, statusName, ucx, UcxError, UCS_STATUS, Worker } from "../../src/index.ts";

const test = suite("core/errors");

test("every exact UCS status maps to its own name", () => {
  for (const [name, value] of Object.entries(UCS_STATUS)) {
    if (/_(FIRST|LAST)_|UCS_ERR_LAST$/.test(name)) continue; // range bounds, not statuses
    assert.is(statusName(value), name);
  }
});

test("link and endpoint failure ranges get their range's name", () => {
  assert.is(statusName(-40), "UCS_ERR_LINK_FAILURE");
  assert.is(statusName(-59), "UCS_ERR_LINK_FAILURE");
  assert.is(statusName(-60), "UCS_ERR_ENDPOINT_FAILURE");
  assert.is(statusName(-80), "UCS_ERR_ENDPOINT_TIMEOUT"); // an exact status inside the range
  assert.is(statusName(-89), "UCS_ERR_ENDPOINT_FAILURE");
  assert.is(statusName(-30), "UCS_STATUS_-30");
});

test("check() passes UCS_OK and throws a UcxError carrying status, name and UCX's own text", () => {
  check(0, "nothing");
  const u = ucx();
  for (const status of [-2, -4, -9, -16, -25]) {
    try {
      check(status, "ucp_fake_call");
      assert.unreachable("check should have thrown");
    } catch (e) {
      assert.instance(e, UcxError);
      assert.instance(e, Error);
      const err = e as UcxError;
      assert.is(err.status, status);
      assert.is(err.code, statusName(status));
      // The text must be ucs_status_string's, read through the FFI.
      assert.is(err.statusText, u.cString(u.ucs_status_string(status)));
      assert.ok(err.message.includes("ucp_fake_call") && err.message.includes(err.code), err.message);
    }
  }
});

test("ucs_status_string through the FFI matches UCX's known texts", () => {
  const u = ucx();
  assert.is(u.cString(u.ucs_status_string(0)), "Success");
  assert.is(u.cString(u.ucs_status_string(-16)), "Request canceled");
  assert.is(u.cString(u.ucs_status_string(-9)), "Message truncated");
});

test("a configuration UCX refuses: the error carries the reason UCX logged (context and worker, polling and thread)", async () => {
  try {
    new Context({ config: { TLS: "nosuch" } });
    assert.unreachable("a context with TLS=nosuch was made");
  } catch (e) {
    assert.instance(e, UcxError);
    assert.is((e as UcxError).code, "UCS_ERR_NO_DEVICE");
    assert.match((e as Error).message, /UCX said: transport 'nosuch' is not available/);
  }
  for (const progressMode of ["polling", "thread"] as const) {
    try {
      const w = await Worker.create({ progressMode, config: { RNDV_THRESH: "banana" } });
      await w.close();
      assert.unreachable("a worker with RNDV_THRESH=banana was made");
    } catch (e) {
      assert.instance(e, UcxError, String(e));
      assert.is((e as UcxError).code, "UCS_ERR_INVALID_PARAM");
      assert.match((e as Error).message, /UCX said: Invalid value for RNDV_THRESH: 'banana'/);
    }
  }
});

test.run();
