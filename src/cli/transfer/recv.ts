/**
 * `ucx-ts recv`: take one sender's session. A window of receives stays posted; each message is
 * handled in order: directories are made, a file's chunks go to a temporary name next to its
 * final one (or to stdout), and at END the size and SHA-256 are compared: a match renames the
 * file into place, a mismatch removes it and says so. Paths are checked to stay inside the
 * output folder.
 */
import { createHash, type Hash } from "node:crypto";
import { chmodSync, mkdirSync, renameSync, rmSync } from "node:fs";
import { open, type FileHandle } from "node:fs/promises";
import { dirname, join } from "node:path";
import process from "node:process";
import { UcxError, type Endpoint, type RecvResult, type Worker } from "../../index.ts";
import { Progress } from "./progress.ts";
import { CHUNK, decodeJson, encodeJson, FAILURE_NOTICE_MS, injectedFailureAfter, safeRelativePath, SENDER_MASK, TAG, WINDOW, type Ack, type End, type Entry } from "./wire.ts";
import { CommandFailure } from "../command-failure.ts";
import { withTimeout } from "./timeout.ts";


export interface RecvOptions {
  /** Output folder, or "-" for stdout. */
  readonly out: string;
  readonly quiet: boolean;
  readonly log: (line: string) => void;
}

interface Current {
  path: string;
  final: string | null;
  temp: string | null;
  fh: FileHandle | null;
  hash: Hash;
  bytes: number;
  mode: number;
  progress: Progress;
}

/** Returns the number of files refused (checksum or size mismatch). */
export async function receiveSession(worker: Worker, ep: Endpoint, options: RecvOptions): Promise<number> {
  const wait = <T>(p: Promise<T>) => worker.settled(p);
  const toStdout = options.out === "-";
  const stop = new AbortController();
  const posted: { buffer: Uint8Array; result: Promise<RecvResult> }[] = [];
  const post = (buffer: Uint8Array) => {
    const result = ep.recv(buffer, TAG.ENTRY, SENDER_MASK, { signal: stop.signal });
    result.catch(() => {}); // awaited in turn; a failure of a later one must not go unhandled meanwhile
    posted.push({ buffer, result });
  };
  for (let i = 0; i < WINDOW; i++) post(new Uint8Array(CHUNK));
  const dirModes: [string, number][] = [];
  let current: Current | null = null;
  let refused = 0;
  try {
    for (;;) {
      const { buffer, result } = posted.shift()!;
      const { tag, length } = await wait(result);
      const bytes = buffer.subarray(0, length);
      if (tag === TAG.ENTRY) {
        const entry = decodeJson<Entry>(bytes);
        if (entry.kind === "done") {
          await wait(ep.send(encodeJson({ ok: refused === 0 } satisfies Ack), TAG.ACK));
          break;
        }
        if (entry.kind === "abort") throw new CommandFailure(`the sender failed${current ? ` sending ${current.path}` : ""}: ${entry.reason}`);
        const rel = safeRelativePath(entry.path);
        if (entry.kind === "dir") {
          if (!toStdout) {
            mkdirSync(join(options.out, rel), { recursive: true });
            dirModes.push([join(options.out, rel), entry.mode]);
          }
        } else {
          const final = toStdout ? null : join(options.out, rel);
          const temp = final && `${final}.ucx-ts-partial-${process.pid}`;
          if (temp) mkdirSync(dirname(temp), { recursive: true });
          current = {
            path: rel,
            final,
            temp,
            fh: temp ? await open(temp, "w", 0o600) : null,
            hash: createHash("sha256"),
            bytes: 0,
            mode: entry.mode,
            progress: new Progress(`recv ${rel}`, entry.size, options.quiet),
          };
        }
      } else if (tag === TAG.DATA) {
        if (!current) throw new Error("protocol: data outside a file");
        const failAfter = injectedFailureAfter();
        if (failAfter !== undefined && current.bytes + length > failAfter) throw new Error("ENOSPC: no space left on device (injected by UCX_TS_TEST_FAIL_AFTER)");
        current.hash.update(bytes);
        current.bytes += length;
        current.progress.add(length);
        if (current.fh) await current.fh.write(bytes);
        else await new Promise<void>((resolve, reject) => process.stdout.write(bytes, (e) => (e ? reject(e) : resolve())));
      } else if (tag === TAG.END) {
        if (!current) throw new Error("protocol: end outside a file");
        const end = decodeJson<End>(bytes);
        const c: Current = current;
        current = null;
        c.progress.finish();
        await c.fh?.close();
        const digest = c.hash.digest("hex");
        let verdict: Ack = { ok: true, path: c.path };
        if (end.bytes !== c.bytes || end.sha256 !== digest) {
          verdict = { ok: false, path: c.path, error: `checksum mismatch: got ${c.bytes} bytes with SHA-256 ${digest}, the sender says ${end.bytes} bytes with ${end.sha256}` };
          if (c.temp) rmSync(c.temp, { force: true });
          refused++;
          options.log(`refused ${c.path}: ${verdict.error}`);
        } else if (c.temp && c.final) {
          renameSync(c.temp, c.final);
          chmodSync(c.final, c.mode & 0o7777);
        }
        await wait(ep.send(encodeJson(verdict), TAG.ACK));
      }
      post(buffer); // the buffer is free again: keep the window full
    }
    // Directory modes last: a read-only directory must not stop its own files being written.
    for (const [dir, mode] of dirModes.reverse()) chmodSync(dir, mode & 0o7777);
    return refused;
  } catch (e) {
    if (current?.temp) {
      await current.fh?.close().catch(() => {});
      rmSync(current.temp, { force: true });
    }
    if (e instanceof CommandFailure) throw e; // the sender's own failure: nothing to tell it
    // Tell the sender why, so it stops with the reason instead of a lost endpoint; bounded, since
    // the failure may be the endpoint itself.
    const why = e instanceof UcxError ? `${e.code}: ${e.message}` : e instanceof Error ? e.message : String(e);
    const notice: Ack = { ok: false, fatal: true, path: current?.path, error: why };
    await wait(withTimeout(ep.send(encodeJson(notice), TAG.ACK), FAILURE_NOTICE_MS)).catch(() => {});
    throw new CommandFailure(current ? `cannot receive ${current.path}: ${why}` : why);
  } finally {
    stop.abort();
    await wait(Promise.allSettled(posted.map((p) => p.result))).catch(() => {});
  }
}
