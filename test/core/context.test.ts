import { suite } from "uvu";
import * as assert from "uvu/assert";
import { Context, UcxError } from "../../src/index.ts";
import { ucxVersionDefaults } from "../../src/core/ucx-version-defaults.ts";

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

test("no UCX version gets protocols v1 by default (a v1 receiver of a v2 sender's rendezvous AM lost data on 1.16)", () => {
  const memEventsOn = (name: string) => (name === "UCX_MEM_EVENTS" ? "yes" : undefined); // isolates PROTO_ENABLE
  for (const [major, minor] of [[1, 13], [1, 15], [1, 16], [1, 18], [2, 0]] as const) {
    assert.equal(ucxVersionDefaults({}, { major, minor }, memEventsOn), {}, `${major}.${minor}`);
  }
});

test("on UCX 1.16 and later, without memory events, rendezvous defaults to put_zcopy (a failed get-rendezvous crashes UCX without a registration cache)", () => {
  const v = (major: number, minor: number) => ({ major, minor });
  const env = (vars: Record<string, string>) => (name: string) => vars[name];
  assert.equal(ucxVersionDefaults({}, v(1, 16), env({ UCX_MEM_EVENTS: "no" })), { RNDV_SCHEME: "put_zcopy" });
  assert.equal(ucxVersionDefaults({}, v(1, 18), env({ UCX_MEM_EVENTS: "n" })), { RNDV_SCHEME: "put_zcopy" });
  assert.equal(ucxVersionDefaults({}, v(1, 13), env({ UCX_MEM_EVENTS: "no" })), {}, "1.13 has no such invalidation");
  assert.equal(ucxVersionDefaults({}, v(1, 16), env({ UCX_MEM_EVENTS: "yes" })), {}, "memory events on: the cache exists");
  assert.equal(ucxVersionDefaults({}, v(1, 16), env({})), {}, "UCX's own default is on");
  assert.equal(ucxVersionDefaults({ MEM_EVENTS: "yes" }, v(1, 16), env({ UCX_MEM_EVENTS: "no" })), {}, "the context's own MEM_EVENTS");
  assert.equal(ucxVersionDefaults({ RNDV_SCHEME: "get_zcopy" }, v(1, 16), env({ UCX_MEM_EVENTS: "no" })), {}, "the user's scheme wins");
  assert.equal(ucxVersionDefaults({}, v(1, 16), env({ UCX_MEM_EVENTS: "no", UCX_RNDV_SCHEME: "auto" })), {});
  // The real library and environment: whatever they are, a context is made with them and closed.
  const ctx = new Context({ features: ["tag", "amo64"] });
  ctx.close();
});

test.run();
