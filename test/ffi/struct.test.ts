import { suite } from "uvu";
import * as assert from "uvu/assert";
import { C_SIZE, layouts, Struct, type LayoutDef } from "../../src/ffi/index.ts";
import { ucx } from "../../src/index.ts";

const test = suite("ffi/struct");

test("every layout is self-consistent: fields aligned, inside the struct, not overlapping", () => {
  for (const [name, layout] of Object.entries(layouts as Record<string, LayoutDef>)) {
    const spans = Object.entries(layout.fields).map(([field, f]) => {
      const size = C_SIZE[f.type] * (f.count ?? 1);
      assert.ok(f.offset % C_SIZE[f.type] === 0, `${name}.${field} misaligned`);
      assert.ok(f.offset + size <= layout.size, `${name}.${field} past the end`);
      return [f.offset, f.offset + size, field] as const;
    });
    spans.sort((a, b) => a[0] - b[0]);
    for (let i = 1; i < spans.length; i++) {
      assert.ok(spans[i]![0] >= spans[i - 1]![1], `${name}: ${spans[i - 1]![2]} overlaps ${spans[i]![2]}`);
    }
  }
});

test("fields round-trip for every scalar type, little-endian at the declared offsets", () => {
  const s = new Struct("ucp_request_param_t");
  s.set("op_attr_mask", 0x80000001).set("flags", 7).set("request", 0x7fff12345678).set("memory_type", -1);
  s.set("datatype", 2n ** 63n + 5n);
  assert.is(s.get("op_attr_mask"), 0x80000001);
  assert.is(s.get("request"), 0x7fff12345678);
  assert.is(s.get("memory_type"), -1);
  assert.is(s.get("datatype"), 2n ** 63n + 5n); // too big for a Number: stays a BigInt
  assert.is(s.view.getUint32(0, true), 0x80000001);
  assert.is(s.view.getUint8(8), 0x78);
  s.clear();
  assert.ok(s.bytes.every((b) => b === 0));
  assert.throws(() => s.set("no_such_field", 1), /no field 'no_such_field'/);
});

test("C reads JavaScript memory and JavaScript views C memory (addressOf, view, strlen)", () => {
  const u = ucx();
  const text = new TextEncoder().encode("ucx-ts\0");
  assert.is(u.strlen(u.addressOf(text)), 6);
  // SharedArrayBuffer memory is addressable too: the progress ring lives in one.
  const shared = new Uint8Array(new SharedArrayBuffer(16));
  shared.set(text);
  assert.is(u.strlen(u.addressOf(shared)), 6);
  assert.is(u.addressOf(new Uint8Array(0)), 0);

  const p = u.calloc(1, 32);
  try {
    const bytes = new Uint8Array(u.view(p, 32));
    assert.ok(bytes.every((b) => b === 0));
    bytes.set(text);
    assert.is(u.strlen(p), 6);
    assert.is(u.cString(p), "ucx-ts");
  } finally {
    u.free(p);
  }
});

test("a struct written in JavaScript is read by UCX: ucp_lib_query fills ucp_lib_attr_t", () => {
  const u = ucx();
  const attr = u.struct("ucp_lib_attr_t");
  attr.set("field_mask", 1);
  attr.set("max_thread_level", -7); // must be overwritten by UCX
  assert.is(u.ucp_lib_query(u.addressOf(attr.bytes)), 0);
  assert.ok([0, 1, 2].includes(attr.getNumber("max_thread_level")));
});

test("a struct array in C memory is read element by element (uct resource descriptors)", () => {
  const u = ucx();
  // ucp_tag_recv_info_t is 16 bytes: two elements laid out by hand in C memory.
  const p = u.calloc(2, layouts.ucp_tag_recv_info_t.size);
  try {
    const raw = new DataView(u.view(p, 32));
    raw.setBigUint64(16, 0xcafen, true);
    raw.setBigUint64(24, 1234n, true);
    const second = u.structAt("ucp_tag_recv_info_t", p, 1);
    assert.is(second.get("sender_tag"), 0xcafe);
    assert.is(second.get("length"), 1234);
  } finally {
    u.free(p);
  }
});

test.run();
