/**
 * `ucx-ts send`: walk the sources, and for each file send ENTRY, its chunks (a bounded window
 * of DATA messages in flight, so memory stays flat whatever the size) and END with the SHA-256,
 * then wait for the receiver's verdict. Standard input is sent as one file of unknown size.
 */
import { createHash } from "node:crypto";
import { lstatSync, readdirSync } from "node:fs";
import { open, type FileHandle } from "node:fs/promises";
import { basename, join } from "node:path";
import process from "node:process";
import type { Endpoint, Worker } from "../../index.ts";
import { Progress } from "./progress.ts";
import { CHUNK, decodeJson, encodeJson, FAILURE_NOTICE_MS, injectedFailureAfter, TAG, WINDOW, type Ack, type Entry } from "./wire.ts";
import { CommandFailure } from "../command-failure.ts";
import { withTimeout } from "./timeout.ts";

export interface SendOptions {
  readonly quiet: boolean;
  /** The name stdin's content gets on the receiving side. */
  readonly stdinName: string;
  /** Report a wrong checksum (tests of the receiver's check). */
  readonly corruptChecksum?: boolean;
  readonly log: (line: string) => void;
}

type Source = { entry: Entry; file?: string };

/**
 * `p`, marked as handled: a Promise awaited later may reject while another is awaited (the
 * receiver died), and that must surface where it is awaited, not as an unhandled rejection.
 */
function handled<T>(p: Promise<T>): Promise<T> {
  p.catch(() => {});
  return p;
}

/** The entries for `sources`, directories depth-first in name order; symbolic links are skipped. */
export function listSources(sources: readonly string[], options: Pick<SendOptions, "stdinName" | "log">): Source[] {
  const out: Source[] = [];
  const walk = (path: string, rel: string) => {
    const st = lstatSync(path);
    if (st.isSymbolicLink()) return options.log(`skipping symbolic link ${path}`);
    if (st.isDirectory()) {
      out.push({ entry: { kind: "dir", path: rel, mode: st.mode & 0o7777 } });
      for (const name of readdirSync(path).sort()) walk(join(path, name), `${rel}/${name}`);
    } else if (st.isFile()) out.push({ entry: { kind: "file", path: rel, mode: st.mode & 0o7777, size: st.size }, file: path });
    else options.log(`skipping ${path}: not a regular file or directory`);
  };
  for (const s of sources) {
    if (s === "-") out.push({ entry: { kind: "file", path: options.stdinName, mode: 0o644, size: null } });
    else walk(s, basename(s.replace(/\/+$/, "")) || s);
  }
  return out;
}

export async function sendSources(worker: Worker, ep: Endpoint, sources: readonly Source[], options: SendOptions): Promise<number> {
  const wait = <T>(p: Promise<T>) => worker.settled(p);
  let failures = 0;
  for (const { entry, file } of sources) {
    if (entry.kind !== "file") {
      await wait(ep.send(encodeJson(entry), TAG.ENTRY));
      continue;
    }
    const ackBuffer = new Uint8Array(64 << 10);
    const ack = handled(ep.recv(ackBuffer, TAG.ACK).then(({ length }) => decodeJson<Ack>(ackBuffer.subarray(0, length))));
    let verdict: Ack;
    try {
      await wait(ep.send(encodeJson(entry), TAG.ENTRY));
      const progress = new Progress(`send ${entry.path}`, entry.size, options.quiet);
      const { bytes, sha256 } = await sendContent(worker, ep, file, progress);
      progress.finish();
      const digest = options.corruptChecksum ? sha256.replace(/^./, (c) => (c === "0" ? "1" : "0")) : sha256;
      await wait(ep.send(encodeJson({ bytes, sha256: digest }), TAG.END));
      verdict = await wait(ack);
    } catch (e) {
      throw await explainFailure(worker, ep, entry.path, ack, e);
    }
    if (verdict.fatal) throw receiverFailure(verdict);
    if (!verdict.ok) {
      failures++;
      options.log(`receiver refused ${entry.path}: ${verdict.error}`);
    }
  }
  const finalBuffer = new Uint8Array(64 << 10);
  const final = handled(ep.recv(finalBuffer, TAG.ACK));
  await wait(ep.send(encodeJson({ kind: "done" } satisfies Entry), TAG.ENTRY));
  const { length } = await wait(final);
  const verdict = decodeJson<Ack>(finalBuffer.subarray(0, length));
  if (!verdict.ok && failures === 0) failures++;
  return failures;
}

/** A read of the source failed: the sender's own fault, to be told to the receiver. */
class SourceReadError extends Error {
  override name = "SourceReadError";
}

const receiverFailure = (verdict: Ack): CommandFailure =>
  new CommandFailure(`the receiver failed${verdict.path ? ` receiving ${verdict.path}` : ""}: ${verdict.error ?? "no reason given"}`);

/**
 * The error to end `send` with when sending `path` failed with `e`: the receiver's reason if it
 * gave one (it fails, says why, then closes, so our sends fail after its verdict arrived), or
 * our own read failure, which the receiver is told about before we close.
 */
async function explainFailure(worker: Worker, ep: Endpoint, path: string, ack: Promise<Ack>, e: unknown): Promise<unknown> {
  const verdict = await worker.settled(withTimeout(ack, FAILURE_NOTICE_MS)).catch(() => undefined);
  if (verdict?.fatal) return receiverFailure(verdict);
  if (e instanceof SourceReadError) {
    const abort: Entry = { kind: "abort", reason: `cannot read ${path}: ${e.message}` };
    await worker.settled(withTimeout(ep.send(encodeJson(abort), TAG.ENTRY), FAILURE_NOTICE_MS)).catch(() => {});
    return new CommandFailure(`cannot read ${path}: ${e.message}`);
  }
  return e;
}

/** Stream a file (or stdin) as DATA chunks, WINDOW in flight; returns its size and digest. */
async function sendContent(worker: Worker, ep: Endpoint, file: string | undefined, progress: Progress): Promise<{ bytes: number; sha256: string }> {
  const hash = createHash("sha256");
  const buffers = Array.from({ length: WINDOW }, () => new Uint8Array(CHUNK));
  const inFlight: (Promise<void> | undefined)[] = new Array(WINDOW).fill(undefined);
  let slot = 0;
  let bytes = 0;
  const sendChunk = async (chunk: Uint8Array) => {
    hash.update(chunk);
    bytes += chunk.length;
    progress.add(chunk.length);
    inFlight[slot] = handled(ep.send(chunk, TAG.DATA));
    slot = (slot + 1) % WINDOW;
    // The next buffer must be free before it is filled again.
    if (inFlight[slot]) await worker.settled(inFlight[slot]!);
    inFlight[slot] = undefined;
  };
  const failAfter = injectedFailureAfter();
  const read = async (fh: FileHandle, buf: Uint8Array): Promise<number> => {
    try {
      if (failAfter !== undefined && bytes + CHUNK > failAfter) throw new Error("EIO: i/o error (injected by UCX_TS_TEST_FAIL_AFTER)");
      return (await fh.read(buf, 0, CHUNK, null)).bytesRead;
    } catch (e) {
      throw new SourceReadError(e instanceof Error ? e.message : String(e));
    }
  };
  if (file !== undefined) {
    const fh = await open(file, "r");
    try {
      for (;;) {
        const buf = buffers[slot]!;
        const bytesRead = await read(fh, buf);
        if (bytesRead === 0) break;
        await sendChunk(buf.subarray(0, bytesRead));
      }
    } finally {
      await fh.close();
    }
  } else {
    let fill = 0;
    for await (const piece of process.stdin as AsyncIterable<Uint8Array>) {
      let at = 0;
      while (at < piece.length) {
        const n = Math.min(CHUNK - fill, piece.length - at);
        buffers[slot]!.set(piece.subarray(at, at + n), fill);
        fill += n;
        at += n;
        if (fill === CHUNK) {
          await sendChunk(buffers[slot]!);
          fill = 0;
        }
      }
    }
    if (fill > 0) await sendChunk(buffers[slot]!.subarray(0, fill));
  }
  await worker.settled(Promise.all(inFlight.filter((p) => p !== undefined)));
  return { bytes, sha256: hash.digest("hex") };
}
