import { suite } from "uvu";
import * as assert from "uvu/assert";
import { Context, UcxError } from "../../src/index.ts";
import { atomicsOverActiveMessages, memoryUnits, requestHandlesFrom } from "../../src/core/ucx-version-gaps.ts";

const test = suite("core/context");

test("a context with default features reports host memory and prints its resources", () => {
  const ctx = new Context();
  try {
    assert.ok(ctx.memoryTypes.includes("host"));
    const info = ctx.printInfo();
    assert.match(info, /# UCP context/);
    assert.match(info, /tcp\/lo/); // tcp over loopback is always there
  } finally {
    ctx.close();
  }
});

test("config overrides apply to the context: TLS=tcp leaves only tcp resources", () => {
  const ctx = new Context({ config: { TLS: "tcp" } });
  try {
    const resources = ctx.printInfo().split("\n").filter((l) => /# +resource/.test(l));
    assert.ok(resources.length > 0, "no resources printed");
    for (const line of resources) assert.match(line, /tcp\//, line);
  } finally {
    ctx.close();
  }
  // The same with the UCX_ prefix, and the default context still sees shared memory.
  const again = new Context({ config: { UCX_TLS: "tcp" } });
  again.close();
  const all = new Context();
  try {
    assert.match(all.printInfo(), /(sysv|posix)\/memory/);
  } finally {
    all.close();
  }
});

test("a config value UCX cannot parse is a UcxError with UCX's status, naming the setting", () => {
  try {
    new Context({ config: { RNDV_THRESH: "lots" } });
    assert.unreachable();
  } catch (e) {
    assert.instance(e, UcxError);
    assert.is((e as UcxError).code, "UCS_ERR_INVALID_PARAM");
    assert.is((e as UcxError).status, -5);
    assert.match((e as UcxError).message, /RNDV_THRESH=lots/);
  }
});

test("an unknown feature is refused before UCX sees it", () => {
  try {
    new Context({ features: ["tag", "teleport" as never] });
    assert.unreachable();
  } catch (e) {
    assert.is((e as UcxError).code, "UCX_TS_INVALID_ARGUMENT");
  }
});

test("close is idempotent and a closed context refuses use with UCX_TS_CLOSED", () => {
  const ctx = new Context({ features: ["tag"] });
  ctx.close();
  ctx.close();
  assert.ok(ctx.closed);
  assert.throws(() => ctx.handle, (e: UcxError) => e.code === "UCX_TS_CLOSED");
  assert.throws(() => ctx.memoryTypes, (e: UcxError) => e.code === "UCX_TS_CLOSED");
});

test("on UCX 1.16 and later without a registration cache, sends and receives from 4 KiB get their own memory handle (a failed rendezvous crashes UCX otherwise)", () => {
  const v = (major: number, minor: number) => ({ major, minor });
  const env = (vars: Record<string, string>) => (name: string) => vars[name];
  const off = env({ UCX_MEM_EVENTS: "no" });
  assert.equal(requestHandlesFrom({}, undefined, v(1, 16), off), 4096);
  assert.equal(requestHandlesFrom({}, undefined, v(1, 18), env({ UCX_MEM_EVENTS: "n" })), 4096);
  assert.equal(requestHandlesFrom({}, undefined, v(2, 0), off), 4096);
  assert.equal(requestHandlesFrom({}, undefined, v(1, 13), off), Infinity, "1.13 has no such invalidation");
  assert.equal(requestHandlesFrom({}, undefined, v(1, 15), off), Infinity, "nor has 1.15");
  assert.equal(requestHandlesFrom({}, undefined, v(1, 16), env({ UCX_MEM_EVENTS: "yes" })), Infinity, "memory events on: the cache exists");
  assert.equal(requestHandlesFrom({}, undefined, v(1, 16), env({})), Infinity, "UCX's own default is on");
  assert.equal(requestHandlesFrom({}, undefined, v(1, 16), env({ UCX_RCACHE_ENABLE: "n" })), 4096, "no cache asked for");
  assert.equal(requestHandlesFrom({ MEM_EVENTS: "yes" }, undefined, v(1, 16), off), Infinity, "the context's own MEM_EVENTS");
  assert.equal(requestHandlesFrom({ UCX_MEM_EVENTS: "no" }, undefined, v(1, 16), env({})), 4096, "the context's own, with the prefix");
  assert.equal(requestHandlesFrom({ RNDV_THRESH: "1k" }, undefined, v(1, 16), off), 1024, "a lower rendezvous threshold lowers it");
  assert.equal(requestHandlesFrom({}, undefined, v(1, 16), env({ UCX_MEM_EVENTS: "no", UCX_RNDV_THRESH: "0" })), 0);
  assert.equal(requestHandlesFrom({ RNDV_THRESH: "64k" }, undefined, v(1, 16), off), 4096, "a higher one does not raise it");
  assert.equal(requestHandlesFrom({ RNDV_THRESH: "auto" }, undefined, v(1, 16), off), 4096);
  assert.equal(requestHandlesFrom({}, "1", v(1, 13), env({})), 4096, "UCX_TS_REQUEST_HANDLES=1: on any UCX");
  assert.equal(requestHandlesFrom({}, "0", v(1, 16), off), Infinity, "UCX_TS_REQUEST_HANDLES=0: never");
  assert.equal(memoryUnits("8192"), 8192);
  assert.equal(memoryUnits("8k"), 8192);
  assert.equal(memoryUnits("2MB"), 2 << 20);
  assert.equal(memoryUnits("inf"), undefined);
  assert.equal(memoryUnits(undefined), undefined);
  // The real library and environment: whatever they are, a context is made with them and closed.
  const ctx = new Context({ features: ["tag", "amo64"] });
  ctx.close();
});

test("on UCX 1.16 and later under protocols v2, atomics on peer-error-handling endpoints go over active messages (UCX has no protocol for them)", () => {
  const v = (major: number, minor: number) => ({ major, minor });
  const env = (vars: Record<string, string>) => (name: string) => vars[name];
  assert.is(atomicsOverActiveMessages({}, undefined, v(1, 16), env({})), true, "v2 is 1.16's default");
  assert.is(atomicsOverActiveMessages({}, undefined, v(1, 20), env({})), true);
  assert.is(atomicsOverActiveMessages({}, undefined, v(2, 0), env({})), true);
  assert.is(atomicsOverActiveMessages({}, undefined, v(1, 15), env({})), false, "1.15 and older: protocols v1 by default");
  assert.is(atomicsOverActiveMessages({}, undefined, v(1, 13), env({ UCX_PROTO_ENABLE: "y" })), false, "no such gap before 1.16");
  assert.is(atomicsOverActiveMessages({}, undefined, v(1, 16), env({ UCX_PROTO_ENABLE: "n" })), false, "v1 chosen: UCX's own atomics work");
  assert.is(atomicsOverActiveMessages({ PROTO_ENABLE: "no" }, undefined, v(1, 16), env({})), false, "the context's own choice");
  assert.is(atomicsOverActiveMessages({ UCX_PROTO_ENABLE: "y" }, undefined, v(1, 16), env({ UCX_PROTO_ENABLE: "n" })), true, "the context's beats the environment's");
  assert.is(atomicsOverActiveMessages({}, "1", v(1, 13), env({})), true, "UCX_TS_ATOMICS_OVER_AM=1: on any UCX");
  assert.is(atomicsOverActiveMessages({}, "0", v(1, 16), env({})), false, "UCX_TS_ATOMICS_OVER_AM=0: never");
});

test.run();
