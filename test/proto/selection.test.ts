/**
 * The selection engine on hand-made cost lines: intersections, ties, parallel lines, protocols
 * that win nowhere, ranges, forced protocols, lookup boundaries, the fit, the configuration.
 */
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  buildTable,
  lookup,
  MAX_SIZE,
  SelectionGapError,
  fitCost,
  resolveProtocolConfig,
  optionsFromEnv,
  parseCalibration,
  loadCalibratedCosts,
  ProtocolSelector,
  formatProtoInfo,
  UcxError,
  type Candidate,
} from "../../src/index.ts";

const test = suite("proto/selection");
const all = (protocol: string, c: number, m: number, minSize = 0, maxSize = MAX_SIZE): Candidate<string> => ({ protocol, cost: { c, m }, minSize, maxSize });
const shape = (t: { maxSize: number; protocol: string }[]) => t.map((e) => [e.maxSize, e.protocol]);

test("two crossing lines: the cheap-start one up to the crossing, the cheap-per-byte one after", () => {
  // a: 1 + 0.01 s, b: 5 + 0.001 s; a(s) = b(s) at s = 4 / 0.009 = 444.4: b wins from 445 on.
  const t = buildTable([all("a", 1, 0.01), all("b", 5, 0.001)]);
  assert.equal(shape(t), [[444, "a"], [MAX_SIZE, "b"]]);
  assert.is(lookup(t, 444).protocol, "a");
  assert.is(lookup(t, 445).protocol, "b");
  assert.is(lookup(t, 0).protocol, "a");
  assert.is(lookup(t, MAX_SIZE).protocol, "b");
});

test("an exact tie goes to the smaller slope, from the tie on", () => {
  // a: 0 + 2 s, b: 100 + 1 s: equal at s = 100 exactly.
  const t = buildTable([all("a", 0, 2), all("b", 100, 1)]);
  assert.equal(shape(t), [[99, "a"], [MAX_SIZE, "b"]]);
  assert.is(lookup(t, 100).protocol, "b");
});

test("parallel lines: the lower one everywhere, the other nowhere", () => {
  assert.equal(shape(buildTable([all("high", 5, 0.5), all("low", 3, 0.5)])), [[MAX_SIZE, "low"]]);
});

test("identical lines: the first candidate", () => {
  assert.equal(shape(buildTable([all("first", 2, 0.1), all("second", 2, 0.1)])), [[MAX_SIZE, "first"]]);
});

test("a protocol above the lower envelope everywhere does not appear", () => {
  // mid is never below min(a, b): at the crossing of a and b (s = 100, time 100) it costs 150.
  const t = buildTable([all("a", 0, 1), all("mid", 50, 1), all("b", 90, 0.1)]);
  assert.equal(t.map((e) => e.protocol), ["a", "b"]);
  assert.ok(t.every((e) => e.protocol !== "mid"));
});

test("three protocols, each best on its own interval", () => {
  // small: 1 + 1 s; medium: 10 + 0.1 s; large: 100 + 0.01 s
  // small/medium cross at 10: medium from 10; medium/large cross at 1000: large from 1000.
  const t = buildTable([all("small", 1, 1), all("medium", 10, 0.1), all("large", 100, 0.01)]);
  assert.equal(shape(t), [[9, "small"], [999, "medium"], [MAX_SIZE, "large"]]);
});

test("size ranges: a protocol serves only its range, the next best takes over past it", () => {
  // inline is cheapest but only up to 192 bytes; bounce up to 65536; zcopy everywhere.
  const t = buildTable([all("inline", 1, 0, 0, 192), all("bounce", 2, 0.001, 0, 65536), all("zcopy", 20, 0.0001)]);
  // bounce vs zcopy cross at 18 / 0.0009 = 20000.
  assert.equal(shape(t), [[192, "inline"], [19999, "bounce"], [MAX_SIZE, "zcopy"]]);
  // A protocol whose range starts later enters where it begins.
  const late = buildTable([all("any", 10, 0.1), all("big", 0, 0, 1000, MAX_SIZE)]);
  assert.equal(shape(late), [[999, "any"], [MAX_SIZE, "big"]]);
});

test("the last entry reaches the limit, which may be set", () => {
  assert.is(buildTable([all("a", 1, 1)]).at(-1)!.maxSize, MAX_SIZE);
  assert.equal(shape(buildTable([all("a", 1, 1), all("b", 50, 0)], 1000)), [[48, "a"], [1000, "b"]]);
});

test("a size no protocol serves is an error, not a hole in the table", () => {
  const err = (() => {
    try {
      buildTable([all("a", 1, 0, 0, 100), all("b", 1, 0, 200, MAX_SIZE)]);
    } catch (e) {
      return e;
    }
  })();
  assert.instance(err, SelectionGapError);
  assert.is((err as SelectionGapError).size, 101);
});

test("a forced protocol wins wherever its range reaches; the others serve the rest", () => {
  const t = buildTable([all("inline", 1, 0, 0, 192), { ...all("bounce", 50, 1, 0, 65536), forced: true }, all("zcopy", 20, 0.0001)]);
  assert.equal(shape(t), [[65536, "bounce"], [MAX_SIZE, "zcopy"]]);
  assert.ok(t[0]!.forced);
  assert.not.ok(t[1]!.forced);
});

test("fitCost recovers a line from exact points and clamps what noise makes negative", () => {
  const line = fitCost([8, 1024, 65536, 1048576].map((size) => ({ size, time: 3 + 0.0002 * size })));
  assert.ok(Math.abs(line.c - 3) < 1e-6, `c ${line.c}`);
  assert.ok(Math.abs(line.m - 0.0002) < 1e-9, `m ${line.m}`);
  const flat = fitCost([{ size: 8, time: 5 }, { size: 100, time: 4 }]); // time falling with size: noise
  assert.is(flat.m, 0);
  assert.ok(flat.c > 4 && flat.c < 5);
  assert.throws(() => fitCost([]));
});

test("configuration from the environment: forced protocols, cost lines, pool, info", () => {
  const env = optionsFromEnv({
    UCX_TS_PROTO: "zcopy",
    UCX_TS_PROTO_STREAM_SEND: "bounce",
    UCX_TS_PROTO_COST_INLINE: "1.5, 0.001",
    UCX_TS_PROTO_BOUNCE_CHUNK: "4096",
    UCX_TS_PROTO_INFO: "1",
    UCX_TS_PROTO_CALIBRATION: "none",
  });
  const c = resolveProtocolConfig({}, env);
  assert.equal(c.force, { "tag-send": "zcopy", "stream-send": "bounce" });
  assert.equal(c.costs.inline, { c: 1.5, m: 0.001 });
  assert.is(c.bounceChunkSize, 4096);
  assert.is(c.info, true);
  assert.is(c.calibration, false);
  // The Worker's options win over the environment.
  const o = resolveProtocolConfig({ force: { "tag-send": "inline" }, costs: { inline: { c: 9, m: 0 } } }, env);
  assert.is(o.force["tag-send"], "inline");
  assert.equal(o.costs.inline, { c: 9, m: 0 });
});

test("bad protocol configuration is a clear UcxError", () => {
  const cases: [() => unknown, RegExp][] = [
    [() => optionsFromEnv({ UCX_TS_PROTO: "warp" }), /unknown protocol 'warp'/],
    [() => optionsFromEnv({ UCX_TS_PROTO_COST_ZCOPY: "fast" }), /UCX_TS_PROTO_COST_ZCOPY must be/],
    [() => optionsFromEnv({ UCX_TS_PROTO_COST_ZCOPY: "-1,0" }), /must be/],
    [() => optionsFromEnv({ UCX_TS_PROTO_BOUNCE_CHUNK: "lots" }), /UCX_TS_PROTO_BOUNCE_CHUNK must be an integer/],
    [() => resolveProtocolConfig({ force: { "tag-recv": "zcopy" } as never }, {}), /unknown operation 'tag-recv'/],
    [() => resolveProtocolConfig({ costs: { zcopy: { c: Number.NaN, m: 0 } } }, {}), /protocols.costs.zcopy/],
    [() => resolveProtocolConfig({ bounce: { chunkSize: 2 ** 30, chunks: 64 } }, {}), /at most 2 GiB/],
  ];
  for (const [f, message] of cases) {
    try {
      f();
      assert.unreachable(`accepted: ${message}`);
    } catch (e) {
      assert.instance(e, UcxError);
      assert.is((e as UcxError).code, "UCX_TS_INVALID_ARGUMENT");
      assert.match((e as Error).message, message);
    }
  }
});

test("a calibration file is read per progress mode; a broken one is ignored, not fatal", () => {
  const dir = mkdtempSync(join(tmpdir(), "ucx-ts-cal-"));
  try {
    const good = join(dir, "good.json");
    const file = { format: "ucx-ts-calibration/1", date: "2026-11-23", host: "h", cores: 2, ucx: "1.13.1", runtime: "node", modes: { polling: { zcopy: { c: 1, m: 0.0001 } } } };
    writeFileSync(good, JSON.stringify(file));
    assert.equal(loadCalibratedCosts(good, "polling"), { zcopy: { c: 1, m: 0.0001 } });
    assert.equal(loadCalibratedCosts(good, "thread"), {});
    assert.equal(loadCalibratedCosts(join(dir, "absent.json"), "thread"), {});
    const bad = join(dir, "bad.json");
    writeFileSync(bad, JSON.stringify({ ...file, modes: { polling: { warp: { c: 1, m: 0 } } } }));
    assert.throws(() => parseCalibration(JSON.stringify({ ...file, modes: { polling: { warp: { c: 1, m: 0 } } } })), /unknown protocol 'warp'/);
    assert.equal(loadCalibratedCosts(bad, "polling"), {});
    // A selector takes the file's lines (and says so), configuration over them.
    const s = new ProtocolSelector("polling", 192, { calibration: good });
    assert.is(s.calibrationPath, good);
    const zc = s.describe()[0]!.candidates.find((c) => c.protocol === "zcopy")!;
    assert.is(zc.source, "calibration");
    assert.equal(zc.cost, { c: 1, m: 0.0001 });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("a selector's tables follow its costs and are rebuilt by configure()", () => {
  const s = new ProtocolSelector("thread", 192, {
    calibration: false,
    costs: { inline: { c: 1, m: 0 }, bounce: { c: 2, m: 0.001 }, zcopy: { c: 20, m: 0.0001 }, "zcopy-reg": { c: 21, m: 0.0001 } },
  });
  assert.is(s.select("tag-send", 0), "inline");
  assert.is(s.select("tag-send", 192), "inline");
  assert.is(s.select("tag-send", 193), "bounce");
  assert.is(s.select("tag-send", 19999), "bounce");
  assert.is(s.select("tag-send", 20000), "zcopy");
  assert.is(s.select("stream-send", 2 ** 40), "zcopy");
  // zcopy-reg, 1 us dearer than zcopy on the same slope, wins nowhere and is listed as such.
  assert.match(formatProtoInfo(s), /\(zcopy-reg: 1 B \.\. max, 21\.00 us \+ 0\.100 ns\/B \[configuration\], wins nowhere\)/);
  s.configure({ calibration: false, force: "zcopy" });
  assert.is(s.select("tag-send", 8), "zcopy");
  assert.is(s.limits.bounceChunkSize, 65536, "the pool's chunk size stays what the worker was made with");
  // A configuration that fails leaves the tables as they were.
  assert.throws(() => s.configure({ force: "warp" as never }));
  assert.is(s.select("tag-send", 8), "zcopy");
  const text = formatProtoInfo(s);
  assert.match(text, /tag-send on host\/contig/);
  assert.match(text, /0 B  \.\.  +max  zcopy \(forced\)/);
});

test.run();
