/** The UCT section of `ucx-ts info`, checked against `ucx_info -d` on the same host. */
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { listUctTransports } from "../../src/core/uct/index.ts";
import { formatUctTransports } from "../../src/cli/uct-info.ts";
import { runScript } from "../helpers/spawn.ts";
import { skipWithReason } from "../helpers/skip.ts";
import { ucxInfoTransportBlocks, ucxTool } from "../helpers/ucx-tools.ts";

const test = suite("cli/uct-info");
const devices = ucxTool("ucx_info", ["-d"]);

interface UctEntry {
  transport: string;
  device: string;
  attributes?: { capabilities: string[]; am: { maxShort: number | string }; connectToInterface: boolean; connectToEndpoint: boolean };
}

if (devices === null) {
  skipWithReason(test, "info lists UCT transports as ucx_info -d does", "ucx_info (Debian package ucx-utils) is not installed");
} else {
  test("info lists UCT transports as ucx_info -d does: operations, am_short limit, connection modes", async () => {
    const r = await runScript("src/cli/index.ts", ["info", "--json", "--no-endpoints"]);
    assert.is(r.code, 0, r.stderr);
    const uct = JSON.parse(r.stdout).uct as UctEntry[];
    const blocks = ucxInfoTransportBlocks(devices);
    assert.equal(uct.map((t) => `${t.transport}/${t.device}`).sort(), [...blocks.keys()].sort());
    for (const t of uct) {
      const key = `${t.transport}/${t.device}`;
      const block = blocks.get(key)!;
      const a = t.attributes!;
      assert.ok(a, `${key} opened`);
      const theirs = block.find((l) => l.startsWith("connection:")) ?? "";
      assert.is(a.connectToInterface, theirs.includes("to iface"), `${key} ${theirs}`);
      assert.is(a.connectToEndpoint, theirs.includes("to ep"), `${key} ${theirs}`);
      for (const op of ["am_short", "am_bcopy", "am_zcopy", "put_short", "put_bcopy", "put_zcopy", "get_bcopy", "get_zcopy"]) {
        assert.is(a.capabilities.includes(op), block.some((l) => l.startsWith(`${op}:`)), `${key} ${op}`);
      }
      const amShort = block.find((l) => l.startsWith("am_short:"));
      if (amShort) {
        const m = /<= (\d+)(K?)/.exec(amShort)!;
        assert.is(a.am.maxShort, Number(m[1]) * (m[2] ? 1024 : 1), `${key} am_short limit`);
      }
    }
  });
}

test("the UCT section reads like ucx_info -d (formatted in this process)", () => {
  const text = formatUctTransports(listUctTransports());
  assert.match(text, /UCT components, memory domains and transports/);
  assert.match(text, /Transport: tcp\s+Device: lo\s+Type: network/);
  assert.match(text, /connection: to iface/);
  assert.match(text, /am_short <= \d+/);
});

test.run();
