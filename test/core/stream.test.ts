import { suite } from "uvu";
import * as assert from "uvu/assert";
import { UcxError } from "../../src/index.ts";
import { MODES, pair, pattern, samePattern, type Pair } from "../helpers/workers.ts";

for (const mode of MODES) {
  const test = suite(`core/stream (${mode})`);
  let p: Pair;
  test.before(async () => {
    p = await pair(mode);
  });
  test.after(async () => {
    await p?.close();
  });

  test("a stream receive waits for all its bytes, whatever the sends' boundaries", async () => {
    // b needs its own endpoint to a for the stream (streams are per endpoint pair).
    const ba = await p.run(p.a.address().then((addr) => p.b.connect(addr)));
    const whole = pattern(300_000, 3);
    const into = new Uint8Array(whole.length);
    const recv = ba.streamRecv(into);
    await p.run(Promise.all([p.ab.streamSend(whole.subarray(0, 1)), p.ab.streamSend(whole.subarray(1, 200_000)), p.ab.streamSend(whole.subarray(200_000))]));
    const n = await p.run(recv);
    assert.is(n, whole.length);
    assert.ok(samePattern(into, 3));
    // A zero-length stream receive completes at once with 0.
    assert.is(await p.run(ba.streamRecv(new Uint8Array(0))), 0);
    await p.run(ba.close());
  });

  test("a pending stream receive can be aborted", async () => {
    const ba = await p.run(p.a.address().then((addr) => p.b.connect(addr, { errorHandling: "peer" })));
    const ac = new AbortController();
    const pending = ba.streamRecv(new Uint8Array(64), { signal: ac.signal });
    setTimeout(() => ac.abort(), 20);
    const err = await p.run(pending.then(() => null, (e: UcxError) => e));
    assert.is(err?.code, "UCS_ERR_CANCELED");
    await p.run(ba.close({ force: true }));
  });

  test.run();
}
