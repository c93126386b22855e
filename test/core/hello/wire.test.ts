import { suite } from "uvu";
import * as assert from "uvu/assert";
import {
  AUTH_BYTES,
  encodeChallenge,
  encodeGreeting,
  encodeProof,
  encodeRefusal,
  HEADER_BYTES,
  HelloKind,
  HelloProtocolError,
  HelloReader,
  MAX_BODY,
  RefuseCode,
} from "../../../src/core/hello/wire.ts";
import { clientProof, listenerProof, proofMatches, secretBytes } from "../../../src/core/hello/auth.ts";
import { ScopeTable } from "../../../src/core/hello/scopes.ts";
import { ConnectionSequences, fillerModes, MAX_PAIRING_GAP } from "../../../src/core/hello/pairing.ts";
import type { UcxError } from "../../../src/index.ts";
import { scopedMaskWords, scopedTagWords, unscopedTag, wholeScope } from "../../../src/core/tag.ts";

const test = suite("core/hello wire format and scopes");

const address = Uint8Array.from({ length: 300 }, (_, i) => (i * 7) & 255);

test("a hello round-trips, delivered whole or a byte at a time, and its bytes are as documented", () => {
  const bytes = encodeGreeting(HelloKind.Hello, { errorHandling: "peer", scope: 0x1234, address });
  assert.equal([...bytes.subarray(0, HEADER_BYTES)], [0x55, 0x58, 0x54, 0x48, 3, 1, 0, 0, 304 & 255, 304 >> 8, 0, 0]);
  assert.equal([...bytes.subarray(12, 16)], [1, 0, 0x34, 0x12]);
  for (const step of [bytes.length, 1, 5, 13]) {
    const r = new HelloReader();
    let m;
    for (let at = 0; at < bytes.length; at += step) {
      assert.is(m, undefined, "complete before its last byte");
      m = r.push(bytes.subarray(at, at + step));
    }
    assert.ok(m && m.kind === HelloKind.Hello && "greeting" in m);
    assert.equal([m.greeting.errorHandling, m.greeting.scope, [...m.greeting.address]], ["peer", 0x1234, [...address]]);
  }
  const refusal = new HelloReader().push(encodeRefusal("no"));
  assert.equal(refusal, { kind: HelloKind.Refuse, code: 0, reason: "no" });
});

test("garbage is refused at its first wrong byte, before anything is allocated", () => {
  const cases: [string, Uint8Array, RegExp][] = [
    ["0xff", new Uint8Array([0xff]), /magic/],
    ["a UCX sockcm-like prefix", new Uint8Array([0x55, 0x58, 0x00]), /magic/],
    ["version 1 (no authentication)", new Uint8Array([0x55, 0x58, 0x54, 0x48, 1]), /version 1, this side speaks 3/],
    ["version 2 (no pairing counts)", new Uint8Array([0x55, 0x58, 0x54, 0x48, 2]), /version 2, this side speaks 3/],
    ["an unknown kind", new Uint8Array([0x55, 0x58, 0x54, 0x48, 3, 9]), /kind 9/],
    ["reserved bits", new Uint8Array([0x55, 0x58, 0x54, 0x48, 3, 1, 0, 4]), /reserved/],
  ];
  for (const [what, bytes, message] of cases) {
    assert.throws(() => new HelloReader().push(bytes), (e: Error) => e instanceof HelloProtocolError && message.test(e.message), what);
  }
});

test("a length over MAX_BODY is refused from the header alone; bytes past the end and bodies without an address are refused", () => {
  const header = new Uint8Array([0x55, 0x58, 0x54, 0x48, 3, 1, 0, 0, 0, 0, 0, 0]);
  new DataView(header.buffer).setUint32(8, MAX_BODY + 1, true);
  assert.throws(() => new HelloReader().push(header), /exceeds/);
  new DataView(header.buffer).setUint32(8, 0xffffffff, true);
  assert.throws(() => new HelloReader().push(header), /exceeds/);
  const hello = encodeGreeting(HelloKind.Hello, { errorHandling: "none", scope: 1, address });
  const extra = new Uint8Array(hello.length + 1);
  extra.set(hello);
  assert.throws(() => new HelloReader().push(extra), /after the end/);
  const short = new Uint8Array([0x55, 0x58, 0x54, 0x48, 3, 1, 0, 0, 4, 0, 0, 0, 1, 0, 1, 0]);
  assert.throws(() => new HelloReader().push(short), /no worker address/);
  const badMode = encodeGreeting(HelloKind.Hello, { errorHandling: "none", scope: 1, address });
  badMode[12] = 2;
  assert.throws(() => new HelloReader().push(badMode), /error-handling mode 2/);
});

test("challenge, proof and accept: pairing counts and modes, with and without authentication, round-trip; bad lengths and flags are refused", () => {
  const nonce = Uint8Array.from({ length: AUTH_BYTES }, (_, i) => i + 1);
  const hello = new HelloReader().push(encodeGreeting(HelloKind.Hello, { errorHandling: "peer", scope: 7, address, auth: nonce }));
  assert.ok(hello && hello.kind === HelloKind.Hello);
  assert.equal([...hello.greeting.auth!], [...nonce]);
  assert.equal([...hello.greeting.address], [...address]);
  assert.is(hello.greeting.pairing, undefined);
  for (const auth of [nonce, undefined]) {
    const r = new HelloReader();
    const challenge = r.push(encodeChallenge(70_000, address, auth));
    assert.ok(challenge && challenge.kind === HelloKind.Challenge);
    assert.equal([challenge.count, challenge.nonce && [...challenge.nonce], [...challenge.identity]], [70_000, auth && [...auth], [...address]]);
    r.next();
    // Eleven modes: a bitmap of two bytes, the last one partly used.
    const modes = Array.from({ length: 11 }, (_, i) => (i % 3 === 0 ? "peer" : "none") as "peer" | "none");
    const proofBytes = encodeProof({ count: 12, modes }, auth);
    assert.equal([...proofBytes.subarray(12, 24)], [auth ? 1 : 0, 0, 0, 0, 12, 0, 0, 0, 11, 0, 0, 0]);
    assert.equal([...proofBytes.subarray(24, 26)], [0b01001001, 0b00000010]);
    const proof = r.push(proofBytes);
    assert.ok(proof && proof.kind === HelloKind.Proof);
    assert.equal(proof.pairing, { count: 12, modes });
    assert.equal(proof.proof && [...proof.proof], auth && [...auth]);
    const accept = new HelloReader().push(encodeGreeting(HelloKind.Accept, { errorHandling: "none", scope: 9, address, auth, pairing: { count: 5, modes: ["peer"] } }));
    assert.ok(accept && accept.kind === HelloKind.Accept);
    assert.equal([accept.greeting.pairing, accept.greeting.auth && [...accept.greeting.auth], accept.greeting.address.length], [{ count: 5, modes: ["peer"] }, auth && [...auth], address.length]);
  }
  assert.equal(new HelloReader().push(encodeRefusal("who?", RefuseCode.AuthFailed)), { kind: HelloKind.Refuse, code: RefuseCode.AuthFailed, reason: "who?" });
  // A proof of the wrong length, a challenge without identity, unknown flags, an auth flag
  // without room for its nonce, an accept without pairing or a hello with one, a mode bit past
  // the last mode, too many modes: each a HelloProtocolError.
  const fullProof = encodeProof({ count: 1, modes: [] }, nonce);
  const shortProof = fullProof.subarray(0, fullProof.length - 1).slice();
  new DataView(shortProof.buffer).setUint32(8, shortProof.length - HEADER_BYTES, true);
  assert.throws(() => new HelloReader().push(shortProof), /proof of 43 bytes, not 44/);
  const bare = encodeChallenge(0, address.subarray(0, 1), nonce).slice(0, -1);
  new DataView(bare.buffer).setUint32(8, bare.length - HEADER_BYTES, true);
  assert.throws(() => new HelloReader().push(bare), /no listener identity/);
  const flags = encodeGreeting(HelloKind.Hello, { errorHandling: "none", scope: 1, address });
  flags[13] = 0x84;
  assert.throws(() => new HelloReader().push(flags), /unknown hello flags/);
  const noRoom = encodeGreeting(HelloKind.Hello, { errorHandling: "none", scope: 1, address: address.subarray(0, 20) });
  noRoom[13] = 1;
  assert.throws(() => new HelloReader().push(noRoom), /no worker address/);
  const helloWithPairing = encodeGreeting(HelloKind.Hello, { errorHandling: "none", scope: 1, address, pairing: { count: 0, modes: [] } });
  assert.throws(() => new HelloReader().push(helloWithPairing), /a hello with a pairing block/);
  const acceptWithout = encodeGreeting(HelloKind.Accept, { errorHandling: "none", scope: 1, address });
  assert.throws(() => new HelloReader().push(acceptWithout), /an accept without its pairing block/);
  const stray = encodeProof({ count: 3, modes: ["none", "peer", "none"] });
  stray[HEADER_BYTES + 12]! |= 0x80;
  assert.throws(() => new HelloReader().push(stray), /past the last mode/);
  const many = encodeProof({ count: 3, modes: [] });
  new DataView(many.buffer).setUint16(HEADER_BYTES + 8, MAX_PAIRING_GAP + 1, true);
  assert.throws(() => new HelloReader().push(many), /more than 64/);
  assert.throws(() => encodeProof({ count: 1, modes: new Array(MAX_PAIRING_GAP + 1).fill("none") }), RangeError);
});

test("pairing: counts and modes per peer; fillers from the side behind; a count past the target is a crossing", () => {
  const s = new ConnectionSequences();
  assert.is(s.count("a"), 0);
  s.record("a", "peer");
  s.record("a", "none");
  s.record("b", "none");
  assert.equal([s.count("a"), s.count("b"), s.modes("a", 1, 2)], [2, 1, ["none"]]);
  // Behind by two: fillers take the other side's modes for those numbers.
  assert.equal(fillerModes(1, 3, { from: 1, modes: ["peer", "none"] }), ["peer", "none"]);
  assert.equal(fillerModes(3, 3, { from: 3, modes: [] }), []);
  // The modes start at the number the other side counted from.
  assert.equal(fillerModes(2, 3, { from: 1, modes: ["peer", "none"] }), ["none"]);
  assert.throws(() => fillerModes(4, 3, { from: 3, modes: [] }), (e: UcxError) => e.code === "UCX_TS_PAIRING_CROSSED");
  assert.throws(() => fillerModes(1, 3, { from: 1, modes: ["peer"] }), (e: UcxError) => e.code === "UCX_TS_PROTOCOL_ERROR");
  const big = new ConnectionSequences();
  for (let i = 0; i <= MAX_PAIRING_GAP; i++) big.record("c", "none");
  assert.throws(() => big.modes("c", 0, MAX_PAIRING_GAP + 1), (e: UcxError) => e.code === "UCX_TS_LIMIT_EXCEEDED");
});

test("proofs: different labels each way, every transcript byte counts, constant-time compare", () => {
  const secret = new Uint8Array(32).fill(9);
  const t = { helloBody: address.subarray(0, 50), challengeBody: address.subarray(50, 90), listenerIdentity: address.subarray(60, 90) };
  const pairingBody = address.subarray(90, 100);
  const c = clientProof(secret, t, pairingBody);
  const l = listenerProof(secret, t, pairingBody);
  assert.is(c.length, 32);
  assert.not.ok(proofMatches(c, l), "the client's proof works as the listener's: reflection");
  assert.ok(proofMatches(c, clientProof(secret.slice(), { ...t }, pairingBody.slice())));
  for (const change of ["helloBody", "challengeBody"] as const) {
    const bytes = t[change].slice();
    bytes[bytes.length - 1]! ^= 1;
    assert.not.ok(proofMatches(c, clientProof(secret, { ...t, [change]: bytes }, pairingBody)), change);
  }
  const otherCounts = pairingBody.slice();
  otherCounts[0]! ^= 1;
  assert.not.ok(proofMatches(c, clientProof(secret, t, otherCounts)), "the proof's pairing counts are covered");
  // Length prefixes: moving a byte from one field to the next changes the proof.
  assert.not.ok(proofMatches(c, clientProof(secret, { ...t, helloBody: address.subarray(0, 49), challengeBody: address.subarray(49, 90) }, pairingBody)));
  assert.not.ok(proofMatches(c, c.subarray(0, 31)));
  assert.throws(() => secretBytes({ secret: "short" }), /at least 16/);
  assert.throws(() => secretBytes({ secret: 42 as unknown as string }), /string or a Uint8Array/);
  assert.is(secretBytes({ secret: "0123456789abcdef" })!.length, 16);
});

test("scopes: never 0, unique among live endpoints, a released one comes back last; 65,535 at most", () => {
  const t = new ScopeTable();
  const a = t.allocate();
  const b = t.allocate();
  assert.ok(a !== 0 && b !== 0 && a !== b);
  t.release(a);
  assert.is.not(t.allocate(), a);
  const all = new ScopeTable();
  const seen = new Set<number>();
  for (let i = 0; i < 0xffff; i++) seen.add(all.allocate());
  assert.is(seen.size, 0xffff);
  assert.not.ok(seen.has(0));
  assert.throws(() => all.allocate(), /at most 65535/);
  all.release(77);
  assert.is(all.allocate(), 77);
});

test("scoped tag words: scope in the top 16 bits, 48-bit user tags, masks keep the scope exact", () => {
  assert.equal(scopedTagWords(0xabcd, 5), [5, 0xabcd0000]);
  assert.equal(scopedTagWords(1, 2 ** 48 - 1), [0xffffffff, 0x0001ffff]);
  assert.equal(scopedTagWords(1, 0xffffffffffffn), [0xffffffff, 0x0001ffff]);
  assert.throws(() => scopedTagWords(1, 2 ** 48), /48 bits/);
  assert.throws(() => scopedTagWords(1, 2n ** 63n), /48 bits/);
  assert.equal(scopedMaskWords(0), [0, 0xffff0000]);
  assert.equal(scopedMaskWords(0xffffffffffffffffn), [0xffffffff, 0xffffffff]);
  // A whole scope (the drain's probe of a closed endpoint's scope): the scope's bits, exactly.
  for (const scope of [1, 31, 32, 0xabcd, 0xffff]) {
    const { tag, mask } = wholeScope(scope);
    assert.is(BigInt(tag), BigInt(scope) << 48n, `scope ${scope}`);
    assert.is(BigInt(mask), 0xffffn << 48n);
  }
  assert.is(unscopedTag(0xffffffff, 0xabcdffff), 2 ** 48 - 1);
  assert.is(unscopedTag(42, 0x00070000), 42);
});

test.run();
