/**
 * The `ucx-ts` command line, thin over the library. Exit codes: 0 success, 1 failure (one
 * line on stderr, the stack with --verbose), 2 usage error.
 */
import { UcxError } from "../core/errors.ts";
import { demoCommand, demoHelp } from "./demo-command.ts";
import { infoCommand, infoHelp } from "./info-command.ts";
import { UsageError } from "./args.ts";
import { CommandFailure } from "./command-failure.ts";
import { PACKAGE_VERSION } from "./package-version.ts";
import { runtime, runtimeVersion } from "../ffi/index.ts";
import { recvCommand, recvHelp, sendCommand, sendHelp } from "./transfer/commands.ts";
import { perfCommand, perfHelp } from "./perf/command.ts";
import { calibrateCommand, calibrateHelp, protoInfoCommand, protoInfoHelp } from "./proto/commands.ts";

const mainHelp = `Usage: ucx-ts <command> [options]

Commands:
  info      the UCX library, runtime, transports, devices and memory types in use
  demo      a verified transfer between two processes, timed against node:net
  send      send files, folders or stdin to a 'ucx-ts recv' (checked by SHA-256)
  recv      receive what one 'ucx-ts send' sends, into a folder or stdout
  perf      latency and bandwidth like ucx_perftest (--compare: against it and node:net, --plot)
  proto-info  the protocol selection tables (which send protocol serves which sizes, and why)
  calibrate   measure the send protocols' costs on this machine for the selection tables

Options:
  --help, -h      help for ucx-ts or for a command (ucx-ts demo --help, ucx-ts help demo)
  --version, -V   print the version of ucx-ts and of the runtime
  --verbose       print stack traces on errors

Exit status: 0 success, 1 failure (one line on stderr), 2 usage error (one line on stderr).

Environment:
  UCX_TS_LIBDIR   directory holding libucp.so.0 (default: the system loader path)
  UCX_TS_PROTO_*  send protocol selection (see ucx-ts proto-info --help)
  UCX_*           UCX's own configuration variables (UCX_TLS, UCX_NET_DEVICES, ...)`;

type Command = (args: readonly string[], write: (t: string) => void) => number | Promise<number>;

const commands: Record<string, { help: string; run: Command }> = {
  info: { help: infoHelp, run: infoCommand },
  demo: { help: demoHelp, run: demoCommand },
  send: { help: sendHelp, run: sendCommand },
  recv: { help: recvHelp, run: recvCommand },
  perf: { help: perfHelp, run: perfCommand },
  "proto-info": { help: protoInfoHelp, run: protoInfoCommand },
  calibrate: { help: calibrateHelp, run: calibrateCommand },
};

export interface CliIo {
  out(text: string): void;
  err(text: string): void;
}

export async function runCli(argv: readonly string[], io: CliIo): Promise<number> {
  const verbose = argv.includes("--verbose");
  const args = argv.filter((a) => a !== "--verbose");
  const [name, ...rest] = args;
  if (name === "--version" || name === "-V") {
    io.out(`ucx-ts ${PACKAGE_VERSION} (${runtime} ${runtimeVersion()})`);
    return 0;
  }
  if (name === undefined || name === "--help" || name === "-h") {
    io.out(mainHelp);
    return name === undefined ? 2 : 0;
  }
  if (name === "help") {
    const topic = rest[0];
    if (topic === undefined) io.out(mainHelp);
    else if (commands[topic]) io.out(commands[topic].help);
    else {
      io.err(`ucx-ts: unknown command '${topic}' (ucx-ts --help lists them)`);
      return 2;
    }
    return 0;
  }
  const command = commands[name];
  if (!command) {
    io.err(`ucx-ts: unknown command '${name}' (ucx-ts --help lists them)`);
    return 2;
  }
  // Help is asked for with a flag before `--`; after it, `-h` is a positional like any other.
  const flags = rest.indexOf("--") < 0 ? rest : rest.slice(0, rest.indexOf("--"));
  if (flags.includes("--help") || flags.includes("-h")) {
    io.out(command.help);
    return 0;
  }
  try {
    return await command.run(rest, io.out);
  } catch (e) {
    if (e instanceof UsageError) {
      io.err(`ucx-ts ${e.message} (ucx-ts ${name} --help for usage)`);
      return 2;
    }
    // A check before any work (an unwritable --out, an unreadable source) says only what failed.
    const line = e instanceof CommandFailure ? `ucx-ts ${name}: ${e.message}` : e instanceof UcxError ? `ucx-ts ${name}: ${e.code}: ${e.message}` : `ucx-ts ${name}: ${String(e)}`;
    io.err(verbose && e instanceof Error && e.stack ? e.stack : line);
    return 1;
  }
}
