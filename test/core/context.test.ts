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

test("on UCX 1.16 and later a context with atomics selects protocols v1 unless the user chose (software atomics need it with error handling)", () => {
  const none = () => false;
  const v = (major: number, minor: number) => ({ major, minor });
  assert.equal(ucxVersionDefaults(true, {}, v(1, 16), none), { PROTO_ENABLE: "n" });
  assert.equal(ucxVersionDefaults(true, {}, v(1, 18), none), { PROTO_ENABLE: "n" });
  assert.equal(ucxVersionDefaults(true, {}, v(2, 0), none), { PROTO_ENABLE: "n" });
  assert.equal(ucxVersionDefaults(true, {}, v(1, 15), none), {}, "1.15 and older default to v1 already");
  assert.equal(ucxVersionDefaults(true, {}, v(1, 13), none), {});
  assert.equal(ucxVersionDefaults(false, {}, v(1, 16), none), {}, "no atomics: v2 stays");
  assert.equal(ucxVersionDefaults(true, { PROTO_ENABLE: "y" }, v(1, 16), none), {}, "the context's config wins");
  assert.equal(ucxVersionDefaults(true, { UCX_PROTO_ENABLE: true }, v(1, 16), none), {});
  assert.equal(ucxVersionDefaults(true, {}, v(1, 16), (name) => name === "UCX_PROTO_ENABLE"), {}, "the environment wins");
  // The real library and environment: whatever they are, a context with atomics is made and closed.
  const ctx = new Context({ features: ["tag", "amo64"] });
  ctx.close();
});

test.run();
