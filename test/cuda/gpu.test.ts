/**
 * GPU memory (issue 25), against the stand-in libcudart (test/cuda/standin-cudart.c, compiled
 * here) everywhere, and against the real libcudart where one and a GPU exist (else skipped with
 * the reason). Every check runs in child processes: UCX_TS_CUDART is read once per process, and
 * this test process keeps whatever CUDA it has (none, on the machines here).
 *
 * UCX_TS_GPU_FULL=1 (npm run test:gpu:full, and the device machine's run) adds 64 MiB and 1 GiB
 * to the two-process sizes. scripts/device-pack.sh bundles this file and its peers into plain
 * JavaScript for a machine with only a node binary; UCX_TS_GPU_BUNDLE=1 makes the bundle run its
 * peers from beside itself. UCX_TS_GPU_ONLY=stand-in or =real runs one libcudart's suite (the
 * other's tests are skipped, saying so): the device machine runs the stand-in at the usual sizes
 * and the real libcudart up to 1 GiB, each within one call of the device tool.
 */
import { spawn } from "node:child_process";
import process from "node:process";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { realCudart, standinCudart } from "../helpers/cuda-standin.ts";
import { skipWithReason } from "../helpers/skip.ts";
import { javascriptArgv, repoRoot, runArgv, runtimeArgv, type ChildResult } from "../helpers/spawn.ts";

const BUNDLE = process.env.UCX_TS_GPU_BUNDLE === "1";

/** argv of a GPU peer (gpu-peer, gpu-api): its TypeScript under this runtime, or its bundle. */
function peerArgv(name: string): [string, ...string[]] {
  return BUNDLE ? javascriptArgv(`${repoRoot}test/gpu/${name}.mjs`) : runtimeArgv(`test/helpers/${name}.ts`);
}

/** Run a GPU peer to its end, with a watchdog. */
function runPeer(name: string, args: readonly string[], env: Record<string, string>, timeoutMs = 90_000): Promise<ChildResult> {
  return runArgv(peerArgv(name), args, { env, timeoutMs }, name);
}

const FULL = process.env.UCX_TS_GPU_FULL === "1";
const SIZES = ["1", "4097", "65539", String(3 << 20), String((3 << 20) + 12_345), ...(FULL ? [String(64 << 20), String(1 << 30)] : [])].join(",");

interface Line {
  readonly check?: string;
  readonly case?: string;
  readonly ok: boolean;
  readonly detail: string;
}

function results(stdout: string): Line[] {
  return stdout
    .split("\n")
    .filter((l) => l.startsWith('{"check"') || l.startsWith('{"case"'))
    .map((l) => JSON.parse(l) as Line);
}

function assertAllPassed(lines: readonly Line[], expected: number, stderr: string): void {
  const failed = lines.filter((l) => !l.ok).map((l) => `${l.check ?? l.case}: ${l.detail}`);
  assert.equal(failed, [], `failed:\n${failed.join("\n")}\nstderr: ${stderr.slice(-2000)}`);
  assert.is(lines.length, expected, `${lines.length} results of ${expected}; stderr: ${stderr.slice(-2000)}`);
}

/** Run a receiver and a sender `gpu-peer.ts`, each with its own environment; the receiver's result lines. */
async function twoProcesses(receiverEnv: Record<string, string>, senderEnv: Record<string, string>, sizes = SIZES): Promise<{ lines: Line[]; stderr: string }> {
  const { lines, stderr, sender } = await receiverAndSender("gpu-peer", ["receiver"], ["sender"], receiverEnv, senderEnv, sizes);
  assert.is(sender.code, 0, `sender exited ${sender.code} ${sender.signal ?? ""}: ${sender.stderr.slice(-2000)}`);
  return { lines, stderr };
}

/**
 * Start `peer` with `receiverArgs` (it prints {"port": N} once listening), then the same peer
 * with `senderArgs` and the port; both run to their end. The receiver's result lines, and how
 * the sender ended.
 */
async function receiverAndSender(
  peer: string,
  receiverArgs: readonly string[],
  senderArgs: readonly string[],
  receiverEnv: Record<string, string>,
  senderEnv: Record<string, string>,
  sizes = SIZES,
): Promise<{ lines: Line[]; stderr: string; sender: ChildResult }> {
  const timeoutS = FULL ? 600 : 120;
  const env = (extra: Record<string, string>) => ({ ...process.env, GPU_SIZES: sizes, GPU_TIMEOUT_S: String(timeoutS), ...extra });
  const [cmd, ...args] = peerArgv(peer);
  const receiver = spawn(cmd, [...args, ...receiverArgs], { cwd: repoRoot, env: env(receiverEnv), stdio: ["ignore", "pipe", "pipe"] });
  let out = "";
  let stderr = "";
  receiver.stderr!.on("data", (d) => (stderr += d));
  const receiverDone = new Promise<void>((resolve) => receiver.on("close", () => resolve()));
  try {
    const port = await new Promise<number>((resolve, reject) => {
      receiver.stdout!.on("data", (d) => {
        out += d;
        const m = /\{"port":(\d+)\}/.exec(out);
        if (m) resolve(Number(m[1]));
      });
      receiver.on("close", (code) => reject(new Error(`receiver exited (${code}) before listening: ${stderr}`)));
    });
    const sender = await runPeer(peer, [...senderArgs, String(port)], env(senderEnv), timeoutS * 1000 + 10_000);
    stderr += sender.stderr;
    await receiverDone;
    return { lines: results(out), stderr, sender };
  } finally {
    receiver.kill("SIGKILL");
  }
}

const sizeCount = SIZES.split(",").length;
const NOWHERE = "/nonexistent/libcudart.so";

for (const variant of ["stand-in", "real"] as const) {
  const test = suite(`cuda/gpu (${variant} libcudart)`);
  const only = process.env.UCX_TS_GPU_ONLY;
  const lib = only && only !== variant ? { reason: `UCX_TS_GPU_ONLY=${only}` } : variant === "stand-in" ? standinCudart() : realCudart();
  const names = [
    "DeviceBuffer, raw device pointers, memory types, put/get and stream with device memory, in one process",
    `tag, AM and multi-buffer between two processes, device-to-device, host-to-device, device-to-host, ${SIZES} bytes`,
    "a receiver without a GPU gets device data in host memory (tag, AM, multi-buffer)",
    "receiving pipeline: chunked device frames through 3 pinned slots, every shape, two batches on a tag, short chunk, abort, limits",
    "receiving pipeline: the sender dies half-way through a device frame: the batch rejects, slots come back",
  ];
  if (!("path" in lib)) {
    for (const name of names) skipWithReason(test, name, lib.reason);
    test.run();
    continue;
  }
  const cudart = { UCX_TS_CUDART: lib.path };

  test(names[0]!, async () => {
    const r = await runPeer("gpu-api", ["api", variant === "stand-in" ? "standin" : "real"], cudart);
    assert.is(r.code, 0, `exit ${r.code} ${r.signal ?? ""}: ${r.stderr.slice(-2000)}`);
    assertAllPassed(results(r.stdout), variant === "stand-in" ? 10 : 9, r.stderr);
  });

  test(names[1]!, async () => {
    const { lines, stderr } = await twoProcesses(cudart, cudart);
    assertAllPassed(lines, 5 * sizeCount, stderr);
  });

  test(names[2]!, async () => {
    // Two sizes are enough here (one message, and several chunks): the full range runs above.
    const sizes = `1,${3 << 20}`;
    const { lines, stderr } = await twoProcesses({ UCX_TS_CUDART: NOWHERE, GPU_RECEIVER_DEVICE: "0" }, { ...cudart, GPU_RECEIVER_DEVICE: "0" }, sizes);
    assertAllPassed(lines, 3 * 2, stderr);
  });

  // The pipeline is the staged path's: forced where UCX handles CUDA itself.
  const staged = { ...cudart, UCX_TS_GPU_PATH: "staged" };

  test(names[3]!, async () => {
    const r = await runPeer("gpu-pipeline", ["inproc"], staged);
    assert.is(r.code, 0, `exit ${r.code} ${r.signal ?? ""}: ${r.stderr.slice(-2000)}`);
    assertAllPassed(results(r.stdout), 10, r.stderr);
  });

  test(names[4]!, async () => {
    const { lines, stderr, sender } = await receiverAndSender("gpu-pipeline", ["death-receiver"], ["death-sender"], staged, staged);
    assert.is(sender.signal, "SIGKILL", `the sender was to kill itself half-way; it ended ${sender.code} ${sender.signal}: ${sender.stderr.slice(-1000)}`);
    assertAllPassed(lines, 2, stderr);
  });

  if (variant === "stand-in") {
    test("the stand-in is a faithful double: host code touching its device memory dies with SIGSEGV, as on a GPU", async () => {
      const r = await runPeer("gpu-api", ["touch"], cudart);
      assert.ok(r.stdout.includes("touching"), `did not get to the touch: ${r.stderr.slice(-1000)}`);
      assert.not.ok(r.stdout.includes("survived"), "host code wrote device memory and survived");
      assert.ok(r.signal === "SIGSEGV" || r.code === 139 || /Segmentation fault|signal 11/.test(r.stderr), `ended with ${r.code} ${r.signal}`);
    });

    test("no device (a driver with no GPU): GPU features say so (UCX_TS_CUDA_UNAVAILABLE), host transfers work", async () => {
      const r = await runPeer("gpu-api", ["unavailable"], { ...cudart, STANDIN_CUDA_DEVICES: "0", EXPECT_CODE: "UCX_TS_CUDA_UNAVAILABLE" });
      assert.is(r.code, 0, r.stderr.slice(-2000));
      assertAllPassed(results(r.stdout), 5, r.stderr);
      assert.match(r.stdout, /no CUDA-capable device/);
    });
  }
  test.run();
}

const absent = suite("cuda/gpu (no libcudart)");
absent("libcudart absent: GPU features say why (UCX_TS_CUDA_NOT_FOUND, naming the path tried), everything else works", async () => {
  const r = await runPeer("gpu-api", ["unavailable"], { UCX_TS_CUDART: NOWHERE, EXPECT_CODE: "UCX_TS_CUDA_NOT_FOUND" });
  assert.is(r.code, 0, r.stderr.slice(-2000));
  assertAllPassed(results(r.stdout), 5, r.stderr);
  assert.ok(r.stdout.includes(NOWHERE), "the reason names the file tried");
});
absent.run();
