/**
 * The CLI transfer protocol (src/cli/transfer/wire.ts, messages.ts), as `ucx-ts recv` takes it
 * from a sender: valid sessions (a folder, a file in chunks, its END, done) from a real endpoint
 * into the real receiveSession writing into a scratch folder, with one message mutated per input:
 * ENTRY or END replaced by garbage, cut JSON, wrong types, paths that climb out of the folder or
 * hold NUL; messages out of order; a checksum or byte count that lies; a message over the
 * receive buffer. Each session must end as the oracle says: verified (file identical), the file
 * refused (no file under its name), or a UcxError; never another error, and never a file outside
 * the output folder.
 */
import { createHash } from "node:crypto";
import { mkdtempSync, readdirSync, readFileSync, rmSync, existsSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { UcxError } from "../../src/index.ts";
import { receiveSession } from "../../src/cli/transfer/recv.ts";
import { decodeEntry } from "../../src/cli/transfer/messages.ts";
import { CHUNK, encodeJson, TAG } from "../../src/cli/transfer/wire.ts";
import { count, type FuzzContext, type FuzzReport } from "./context.ts";

type Message = { tag: number; bytes: Uint8Array };
const MUTATIONS = ["none", "sha", "bytes", "entry", "end", "order", "path", "oversize"] as const;
type Expect = "verified" | "refused" | "error";

const BAD_ENTRIES: readonly unknown[] = [
  null,
  [],
  "file",
  { kind: "link", path: "x", mode: 0o644 },
  { kind: "file", path: 5, mode: 0o644, size: 1 },
  { kind: "file", path: "x", mode: -1, size: 1 },
  { kind: "file", path: "x", mode: 0o644, size: "big" },
  { kind: "file", path: "x", mode: 0o644, size: -5 },
  { kind: "dir", path: "d", mode: 1e9 },
];
const BAD_PATHS = ["../escape", "/etc/passwd-fuzz", "a/../../b", "a\u0000b", "", ".", "a//b", "./a"];

export async function fuzzTransferProtocol(ctx: FuzzContext): Promise<FuzzReport> {
  // Every crafted bad entry through the decoder itself, whatever the sessions below pick.
  for (const bad of [...BAD_ENTRIES, ...BAD_PATHS.map((path) => ({ kind: "file", path, mode: 0o644, size: 1 }))]) {
    try {
      decodeEntry(encodeJson(bad));
    } catch (e) {
      if (e instanceof UcxError && e.code === "UCX_TS_PROTOCOL_ERROR") continue;
      throw new Error(`decodeEntry(${JSON.stringify(bad)}) threw ${String(e)}`);
    }
    throw new Error(`decodeEntry accepted ${JSON.stringify(bad)}`);
  }
  const root = mkdtempSync(join(tmpdir(), "ucx-ts-fuzz-transfer-"));
  const out = join(root, "out");
  const listener = await ctx.run(ctx.b.listen({ host: "127.0.0.1", port: 0 }));
  const outcomes: Record<string, number> = {};
  let inputs = 0;
  try {
    while (ctx.going(inputs)) {
      const how = MUTATIONS[inputs++ % MUTATIONS.length]!;
      const name = `f${inputs}.bin`;
      const content = ctx.bytes(ctx.int(3) === 0 ? CHUNK + ctx.int(5000) : ctx.int(3000));
      const sha = createHash("sha256").update(content).digest("hex");
      const chunks: Message[] = [];
      for (let at = 0; at < content.length || at === 0; at += CHUNK) {
        chunks.push({ tag: TAG.DATA, bytes: content.subarray(at, at + CHUNK) });
        if (content.length === 0) break;
      }
      let entry: Message = { tag: TAG.ENTRY, bytes: encodeJson({ kind: "file", path: `d/${name}`, mode: 0o640, size: content.length }) };
      let end: Message = { tag: TAG.END, bytes: encodeJson({ bytes: content.length, sha256: sha }) };
      const dir: Message = { tag: TAG.ENTRY, bytes: encodeJson({ kind: "dir", path: "d", mode: 0o750 }) };
      const done: Message = { tag: TAG.ENTRY, bytes: encodeJson({ kind: "done" }) };
      let session: Message[];
      let expect: Expect = "error";
      if (how === "sha") end = { tag: TAG.END, bytes: encodeJson({ bytes: content.length, sha256: sha.replace(/^./, (c) => (c === "0" ? "1" : "0")) }) };
      if (how === "bytes") end = { tag: TAG.END, bytes: encodeJson({ bytes: content.length + 1 + ctx.int(10), sha256: sha }) };
      if (how === "entry") {
        const bad = ctx.int(3);
        entry = { tag: TAG.ENTRY, bytes: bad === 0 ? ctx.bytes(ctx.int(100)) : bad === 1 ? entry.bytes.slice(0, ctx.int(entry.bytes.length)) : encodeJson(ctx.pick(BAD_ENTRIES)) };
      }
      if (how === "end") end = { tag: TAG.END, bytes: ctx.int(2) ? ctx.bytes(ctx.int(80)) : end.bytes.slice(0, ctx.int(end.bytes.length)) };
      if (how === "path") entry = { tag: TAG.ENTRY, bytes: encodeJson({ kind: ctx.pick(["file", "dir"]), path: ctx.pick(BAD_PATHS), mode: 0o644, size: 1 }) };
      session = [dir, entry, ...chunks, end, done];
      if (how === "order") {
        const o = ctx.int(3);
        session = o === 0 ? [dir, ...chunks, entry, end, done] : o === 1 ? [dir, end, entry, ...chunks, end, done] : [dir, entry, entry, ...chunks, end, done];
      }
      if (how === "oversize") session = [dir, entry, { tag: TAG.DATA, bytes: new Uint8Array(CHUNK + 1 + ctx.int(100)) }, end, done];
      if (how === "none") expect = "verified";
      if (how === "sha" || how === "bytes") expect = "refused";
      const [accepted, ep] = await ctx.run(Promise.all([listener.accept(), ctx.a.connect({ host: "127.0.0.1", port: listener.port })]));
      const receiving = receiveSession(ctx.b, accepted, { out, quiet: true, log: () => {} }).then(
        (refused) => ({ refused }),
        (e: unknown) => ({ error: e }),
      );
      // Sends are not awaited one by one: the receiver may stop (and its window with it) midway.
      const sends = session.map((m) => ep.send(m.bytes, m.tag).catch(() => {}));
      const result = await ctx.run(receiving, 15_000);
      const what = `seed ${ctx.seed}, input ${inputs - 1} (${how})`;
      if ("error" in result) {
        if (!(result.error instanceof UcxError)) throw new Error(`receiveSession failed with ${String(result.error)}: ${what}`);
        if (expect !== "error") throw new Error(`expected ${expect}, got ${result.error.code}: ${result.error.message}; ${what}`);
        count(outcomes, result.error.code);
      } else {
        const final = join(out, "d", name);
        if (expect === "verified") {
          if (result.refused !== 0 || !existsSync(final) || Buffer.compare(readFileSync(final), content) !== 0) throw new Error(`a valid session did not arrive identical: ${what}`);
          rmSync(final);
        } else if (expect === "refused") {
          if (result.refused !== 1 || existsSync(final)) throw new Error(`a lying END was not refused: ${what}`);
        } else throw new Error(`expected an error, the session ended with ${result.refused} refused: ${what}`);
        count(outcomes, expect);
      }
      const stray = readdirSync(root).filter((n) => n !== "out");
      if (stray.length || existsSync("/etc/passwd-fuzz")) throw new Error(`files outside the output folder: ${stray.join(", ")}; ${what}`);
      // Closing fails what the stopped receiver never took; then every send has settled.
      await ctx.run(Promise.all([ep.close({ force: true }).catch(() => {}), accepted.close({ force: true }).catch(() => {})]));
      await ctx.run(Promise.all(sends));
    }
  } finally {
    await ctx.run(listener.close());
    rmSync(root, { recursive: true, force: true });
  }
  return { inputs, outcomes };
}
