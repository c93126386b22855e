/**
 * Device memory in transfers, above the engine: each operation either hands the device address
 * to UCX (path.ts `direct`), or stages through pinned host memory and uses the host operation
 * unchanged (`staged`). The wire is the same bytes whatever the memory on either side (see
 * README, "GPU memory"): a receiver never needs to know the sender's memory type for tag, stream
 * or RMA, and the multi-buffer and AM headers carry it where the receiver allocates.
 *
 * Staging buffers come from pinned-pool.ts. A staged receive that fails (cancelled, aborted,
 * endpoint failed) gives its pinned buffer back only once UCX has reported the request (it may
 * write into it until then): tag receives say when; a failed stream receive or get drops it
 * rather than reuse it (a bounded leak on errors only).
 */
import { CUDA_MEMCPY, UCS_MEMORY_TYPE_CUDA, UCS_MEMORY_TYPE_HOST } from "../../ffi/index.ts";
import { asBytes, type BufferLike } from "../buffers.ts";
import { ucx } from "../library.ts";
import { encodeHeaders, HEADER_BYTES } from "../multi/header.ts";
import { withStream } from "./copy-engine.ts";
import { DeviceBuffer, isDeviceBuffer } from "./device-buffer.ts";
import { devicePath } from "./path.ts";
import { cudaAvailability } from "./runtime.ts";
import { acquirePinned, releasePinned, type PinnedBuffer } from "./pinned-pool.ts";

/** Copy `buffer`'s bytes into a pinned staging buffer. */
async function stageOut(buffer: DeviceBuffer): Promise<PinnedBuffer> {
  const pinned = acquirePinned(buffer.size);
  try {
    await withStream((s) => s.copy(pinned.address, buffer.address, buffer.size, CUDA_MEMCPY.deviceToHost));
  } catch (e) {
    releasePinned(pinned);
    throw e;
  }
  return pinned;
}

/** Copy the first `length` staged bytes into `buffer`. */
function stageIn(buffer: DeviceBuffer, pinned: PinnedBuffer, length: number): Promise<void> {
  return withStream((s) => s.copy(buffer.address, pinned.address, length, CUDA_MEMCPY.hostToDevice));
}

/** Host memory behind a DeviceBuffer made from a host pointer, or device memory UCX reads itself. */
function viewOf(buffer: DeviceBuffer): Uint8Array {
  return buffer.size === 0 ? new Uint8Array(0) : new Uint8Array(ucx().view(buffer.address, buffer.size));
}

/** Memory UCX may be given as it is: host memory, or device memory when UCX handles CUDA. */
function passesAsIs(buffer: DeviceBuffer): boolean {
  return !buffer.isDevice || buffer.size === 0 || devicePath() === "direct";
}

// --- sends: tag, stream, put ---------------------------------------------------------------

export interface SendPorts {
  /** The host operation (ep.send, ep.streamSend, ep.put...) on host bytes. */
  host(bytes: Uint8Array): Promise<void>;
  /**
   * The same operation on an address UCX reads itself, never through a JavaScript copy (the
   * send path's inline and bounce protocols copy small messages in JavaScript, which must not
   * touch device memory). Absent where the host operation never copies (put).
   */
  direct?(address: number, length: number, keep: object): Promise<void>;
}

/**
 * A tag, stream or RMA send of device memory: staged whole (one device-to-host copy, then the
 * host operation), never cut into chunk messages. The receiver of a tag message may be UCX's C
 * examples, UCXX or a ucx-ts host buffer, which cannot know the sender's memory and expect the one
 * message a host sender sends; and no tag bit is free to say "chunked" (scoped endpoints use all
 * 64). One UCX message cannot overlap with its own copy from above UCX (the whole buffer must be
 * there when the send is posted), so chunking the copy before the send would gain nothing. The
 * pipelined way for device data is a multi-buffer batch, whose header says how frames are cut
 * (sendMultiWithDevice below; docs/gpu.md).
 */
export function sendFromDevice(buffer: DeviceBuffer, ports: SendPorts): Promise<void> {
  buffer.assertLive("send");
  if (!buffer.isDevice || buffer.size === 0) return buffer.hold(ports.host(viewOf(buffer)));
  if (devicePath() === "direct") {
    return buffer.hold(ports.direct ? ports.direct(buffer.address, buffer.size, buffer) : ports.host(viewOf(buffer)));
  }
  return buffer.hold(
    (async () => {
      const pinned = await stageOut(buffer);
      // The host operation resolves when its buffer may be reused; only then is it given back.
      await ports.host(pinned.bytes.subarray(0, buffer.size)).finally(() => releasePinned(pinned));
    })(),
  );
}

// --- receives: tag, stream, get ------------------------------------------------------------

/**
 * A receive into host bytes, and how many of them it filled. `host` may take the second argument,
 * `released`, and call it once UCX no longer holds the bytes (the tag receives do: their request's
 * completion, which can come after an early rejection when the endpoint fails, or at once when the
 * receive never reached UCX). A failed staged receive gives its pinned buffer back then; one whose
 * host operation cannot say (stream, get) drops it, since UCX may still write into it. A `host`
 * that throws (rather than rejects) never handed the bytes to UCX: the buffer comes back at once.
 */
export function recvIntoDevice<R>(buffer: DeviceBuffer, host: (bytes: Uint8Array, released: () => void) => Promise<R>, filled: (r: R) => number): Promise<R> {
  buffer.assertLive("receive");
  if (passesAsIs(buffer)) return buffer.hold(host(viewOf(buffer), () => {}));
  return buffer.hold(
    (async () => {
      const pinned = acquirePinned(buffer.size);
      let ucxDone = false;
      let failed = false;
      let given = false;
      const giveBack = () => {
        if (given) return;
        given = true;
        releasePinned(pinned);
      };
      const released = () => {
        ucxDone = true;
        if (failed) giveBack();
      };
      let receiving: Promise<R>;
      try {
        receiving = host(pinned.bytes.subarray(0, buffer.size), released);
      } catch (e) {
        giveBack(); // thrown before the bytes reached UCX
        throw e;
      }
      let result: R;
      try {
        result = await receiving;
      } catch (e) {
        failed = true;
        if (ucxDone) giveBack(); // else when UCX reports it, or never (see above)
        throw e;
      }
      try {
        await stageIn(buffer, pinned, filled(result));
      } finally {
        giveBack();
      }
      return result;
    })(),
  );
}

// --- active messages -----------------------------------------------------------------------

/** Send `buffer` as an active message whose header says its memory type. */
export function amSendFromDevice(buffer: DeviceBuffer, send: (bytes: Uint8Array, memoryType: number) => Promise<void>): Promise<void> {
  const memoryType = buffer.isDevice ? UCS_MEMORY_TYPE_CUDA : UCS_MEMORY_TYPE_HOST;
  return sendFromDevice(buffer, { host: (bytes) => send(bytes, memoryType) });
}

/**
 * The receiver side: an active message the sender declared device memory arrived in host memory
 * (UCX without CUDA, or UCX's AM receive of it), whole: one message, as UCXX sends it and as a
 * UCXX receiver without CUDA must get it (see sendFromDevice for why device messages are not
 * chunked). Put it on the GPU. Synchronous: AM data is handed over on the application thread, in
 * arrival order.
 */
export function deviceCopyOf(data: Uint8Array): DeviceBuffer {
  const device = DeviceBuffer.allocate(data.length);
  device.copyFromHost(data);
  return device;
}

// --- multi-buffer --------------------------------------------------------------------------

export type Frame = BufferLike | DeviceBuffer;

/** Chunks a staged device frame is cut into: about 8, each a power of two from 256 KiB to 8 MiB. */
export function chunkBytesFor(size: number): number {
  let chunk = 256 * 1024;
  while (chunk < 8 * 1024 * 1024 && chunk * 8 < size) chunk *= 2;
  return chunk;
}

/** Staging buffers one frame may hold at once: copy of chunk k+1 and k+2 while chunk k is sent. */
const PIPELINE_DEPTH = 3;

/**
 * A multi-buffer batch with device frames, as tag messages on one tag in order (UCXX's headers,
 * then the frames). Direct: one MultiSend, device addresses as they are. Staged: each device frame
 * goes in chunks (multi/header.ts, isCUDA = log2(chunk)), through up to PIPELINE_DEPTH pinned
 * buffers: a chunk's send is posted as soon as its copy is done, and the next chunks are copied
 * meanwhile, so the copy engine and the network overlap within a frame and across frames.
 */
export async function sendMultiWithDevice(frames: readonly Frame[], send: (bytes: Uint8Array) => Promise<void>, all: (frames: Uint8Array[], device: boolean[]) => Promise<void>): Promise<void> {
  const device = frames.map((f) => isDeviceBuffer(f) && f.isDevice);
  for (const f of frames) if (isDeviceBuffer(f)) f.assertLive("sendMulti");
  const held = frames.filter(isDeviceBuffer);
  if (devicePath() === "direct" || !device.some(Boolean)) {
    const bytes = frames.map((f, i) => (isDeviceBuffer(f) ? viewOf(f) : asBytes(f, `frame ${i}`)));
    const p = all(bytes, device);
    for (const d of held) d.hold(p);
    return p;
  }
  const sizes = frames.map((f, i) => (isDeviceBuffer(f) ? f.size : asBytes(f, `frame ${i}`).length));
  const chunks = sizes.map((size, i) => (device[i] ? chunkBytesFor(size) : 0));
  const headers = encodeHeaders(sizes.map((size, i) => (device[i] ? { size, device: true, chunkBytes: chunks[i]! } : { size, device: false })));
  const work = (async () => {
    const sent = new Sent();
    for (let h = 0; h < headers.length; h += HEADER_BYTES) sent.push(send(headers.subarray(h, h + HEADER_BYTES)));
    try {
      for (const [i, f] of frames.entries()) {
        if (!isDeviceBuffer(f)) sent.push(send(asBytes(f, `frame ${i}`)));
        else if (!f.isDevice || f.size === 0) sent.push(send(viewOf(f)));
        else await sendInChunks(f, chunks[i]!, send, sent);
      }
    } finally {
      // Whatever happened, wait for what was posted before reporting (its memory is UCX's until then).
      await Promise.allSettled(sent.all);
    }
    await Promise.all(sent.all);
  })();
  for (const d of held) d.hold(work);
  return work;
}

/**
 * The sends a batch posted, reported together at its end. Each is marked handled as it is
 * posted: one that fails while the batch is still copying a later chunk (the endpoint closed)
 * would otherwise be an unhandled rejection until the batch got round to awaiting it (seen
 * in the soak with GPU traffic: an endpoint closed under a pipelined send).
 */
class Sent {
  readonly all: Promise<void>[] = [];
  push(p: Promise<void>): void {
    p.catch(() => {});
    this.all.push(p);
  }
}

/** Post `buffer`'s chunks in order, each once copied out, with at most PIPELINE_DEPTH in flight. */
async function sendInChunks(buffer: DeviceBuffer, chunk: number, send: (bytes: Uint8Array) => Promise<void>, sent: Sent): Promise<void> {
  const inFlight = new Set<Promise<void>>();
  await withStream(async (stream) => {
    for (let at = 0; at < buffer.size; at += chunk) {
      while (inFlight.size >= PIPELINE_DEPTH) await Promise.race(inFlight).catch(() => {});
      const length = Math.min(chunk, buffer.size - at);
      const pinned = acquirePinned(length);
      try {
        await stream.copy(pinned.address, buffer.address + at, length, CUDA_MEMCPY.deviceToHost);
      } catch (e) {
        releasePinned(pinned);
        throw e;
      }
      const p = send(pinned.bytes.subarray(0, length)).finally(() => {
        releasePinned(pinned);
        inFlight.delete(p);
      });
      inFlight.add(p);
      sent.push(p);
    }
  });
}

/**
 * Does a recvMulti with these options take device frames through the receiving pipeline
 * (staged-multi-receive.ts)? When the caller wants them on the GPU, a GPU is here, and UCX cannot
 * receive into device memory itself. Otherwise the executor receives the batch (direct path: the
 * frames are copied to the GPU afterwards; no GPU: `framesToDevice` says why not).
 */
export function stagesDeviceFrames(options: { deviceFrames?: "host" | "device" }): boolean {
  return options.deviceFrames === "device" && cudaAvailability().available && devicePath() === "staged";
}

/** Move the frames the sender marked device memory onto the GPU (recvMulti with deviceFrames). */
export function framesToDevice(frames: Uint8Array[], device: readonly boolean[] | undefined): (Uint8Array | DeviceBuffer)[] {
  if (!device) return frames;
  return frames.map((f, i) => (device[i] ? deviceCopyOf(f) : f));
}
