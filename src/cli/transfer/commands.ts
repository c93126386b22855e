/** `ucx-ts send` and `ucx-ts recv`: argument parsing around send.ts and recv.ts. */
import process from "node:process";
import { Worker } from "../../index.ts";
import { UsageError } from "../info-command.ts";
import { receiveSession } from "./recv.ts";
import { listSources, sendSources } from "./send.ts";
import { checkOutputFolder, checkReadable, PreflightError } from "./preflight.ts";

export const recvHelp = `Usage: ucx-ts recv [--port P] [--host H] [--out DIR|-] [--tls T] [--quiet]

Listen for one sender, receive what it sends into DIR (default: the current folder), and exit.
Each file is written under a temporary name and renamed only when its size and SHA-256 match
what the sender computed. With --out - the files' contents go to stdout, one after another.

Options:
  --port P    port to listen on (default 0: any free port; the line on stderr says which)
  --host H    address to listen on (default 0.0.0.0)
  --out DIR   folder to write into, created if missing; - for stdout
  --tls T     UCX transports (UCX_TLS), e.g. tcp or shm,tcp
  --quiet     no progress lines

Examples:
  ucx-ts recv --port 13340 --out incoming/
  ucx-ts recv --port 13340 --out - | tar x

Exit status: 0 all received and verified; 1 a file refused or the sender lost; 2 usage.`;

export const sendHelp = `Usage: ucx-ts send SOURCE... HOST:PORT [--tls T] [--name NAME] [--quiet]

Send files, folders (recursively, names and modes kept) or stdin (-) to a 'ucx-ts recv'.
Large files stream in 1 MiB chunks through a window of 8, so memory stays flat.

Options:
  --name NAME   the name stdin's content gets on the receiver (default stdin)
  --tls T       UCX transports (UCX_TLS), e.g. tcp
  --quiet       no progress lines

Examples:
  ucx-ts send big.bin results/ 10.0.0.2:13340
  tar c data | ucx-ts send - 10.0.0.2:13340 --name data.tar

Exit status: 0 everything sent and verified by the receiver; 1 failure; 2 usage.`;

interface Common {
  quiet: boolean;
  tls?: string;
  rest: string[];
  values: Map<string, string>;
}

function parse(args: readonly string[], command: string, valued: readonly string[]): Common {
  const values = new Map<string, string>();
  const rest: string[] = [];
  let quiet = false;
  for (let i = 0; i < args.length; i++) {
    const a = args[i]!;
    if (a === "--quiet" || a === "-q") quiet = true;
    else if (valued.includes(a)) {
      const v = args[++i];
      if (v === undefined) throw new UsageError(`${command}: ${a} needs a value`);
      values.set(a, v);
    } else if (a.startsWith("--")) throw new UsageError(`${command}: unknown option ${a}`);
    else rest.push(a);
  }
  return { quiet, tls: values.get("--tls"), rest, values };
}

const log = (line: string) => process.stderr.write(`ucx-ts: ${line}\n`);

export async function recvCommand(args: readonly string[]): Promise<number> {
  const o = parse(args, "recv", ["--port", "--host", "--out", "--tls"]);
  if (o.rest.length > 0) throw new UsageError(`recv: unexpected argument ${o.rest[0]}`);
  const port = Number(o.values.get("--port") ?? 0);
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new UsageError("recv: --port must be 0..65535");
  const out = o.values.get("--out") ?? ".";
  checkOutputFolder(out);
  const worker = await Worker.create({ config: o.tls ? { TLS: o.tls } : {} });
  try {
    const listener = await worker.listen({ host: o.values.get("--host") ?? "0.0.0.0", port });
    log(`recv: listening on port ${listener.port}; send with: ucx-ts send FILE... HOST:${listener.port}`);
    const ep = await listener.accept();
    await listener.close();
    const refused = await receiveSession(worker, ep, { out, quiet: o.quiet, log });
    await ep.close().catch(() => {});
    return refused === 0 ? 0 : 1;
  } finally {
    await worker.close();
  }
}

export async function sendCommand(args: readonly string[]): Promise<number> {
  const o = parse(args, "send", ["--tls", "--name"]);
  if (o.rest.length < 2) throw new UsageError("send: needs at least one SOURCE and HOST:PORT");
  const target = o.rest[o.rest.length - 1]!;
  const m = /^(.+):(\d+)$/.exec(target);
  if (!m) throw new UsageError(`send: '${target}' is not HOST:PORT`);
  const sources = listReadableSources(o.rest.slice(0, -1), { stdinName: o.values.get("--name") ?? "stdin", log });
  const worker = await Worker.create({ config: o.tls ? { TLS: o.tls } : {} });
  try {
    const ep = await worker.connect({ host: m[1]!, port: Number(m[2]) });
    const failures = await sendSources(worker, ep, sources, {
      quiet: o.quiet,
      stdinName: o.values.get("--name") ?? "stdin",
      corruptChecksum: process.env.UCX_TS_TEST_CORRUPT_CHECKSUM === "1",
      log,
    });
    await ep.close().catch(() => {});
    return failures === 0 ? 0 : 1;
  } finally {
    await worker.close();
  }
}

/** The sources, walked and opened once before connecting: a missing or unreadable one fails here. */
function listReadableSources(paths: readonly string[], options: Parameters<typeof listSources>[1]): ReturnType<typeof listSources> {
  let sources: ReturnType<typeof listSources>;
  try {
    sources = listSources(paths, options);
  } catch (e) {
    const path = (e as { path?: string }).path;
    throw new PreflightError(`cannot read ${path ?? paths.join(" ")}: ${(e as { code?: string }).code ?? String(e)}`);
  }
  checkReadable(sources.flatMap((s) => (s.file === undefined ? [] : [s.file])));
  return sources;
}
