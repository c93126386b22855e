/**
 * GPU traffic in the soak (`--gpu stand-in|real`): the same lanes also move DeviceBuffer data to
 * the peers and back, on the connections the host traffic uses, under the same faults:
 * - gpu-tag: a tag send and its echo, each side's memory device or host at random (device to
 *   device, host to device, device to host, at least one side a GPU's);
 * - gpu-am: an active message with device data (UCXX's header says CUDA; the peer gets it as a
 *   DeviceBuffer and echoes that), or host data;
 * - gpu-multi: a multi-buffer batch of device and host frames, received with
 *   `deviceFrames: "device"` on both sides (the chunked pipeline, staged-multi-receive.ts).
 * Every byte is copied back to host memory and compared; every DeviceBuffer is freed once every
 * part of its operation has settled, also when it failed. The echo receives of GPU operations in
 * flight are where the "GPU receive aborted in flight" fault strikes (main.ts).
 * Which libcudart: gpu-library.ts.
 */
import { DeviceBuffer, devicePath, type Endpoint, type RecvResult } from "../../src/index.ts";
import { deviceMemoryStats, type DeviceMemoryStats } from "../../src/core/cuda/device-buffer.ts";
import { pinnedStats } from "../../src/core/cuda/pinned-pool.ts";
import { type Control, dataTag, GPU_KINDS, type GpuKind, payload, sameBytes } from "./protocol.ts";
import { all, type Connection, control, CorruptionError, posted, randomSize } from "./traffic.ts";

export type GpuChoice = "stand-in" | "real" | "off";

/** Share of the lanes' operations that are GPU ones, with --gpu. */
export const GPU_SHARE = 0.3;
/** Largest GPU payload by default (--gpu-max-size raises it). */
export const GPU_DEFAULT_MAX = 4 * 2 ** 20;

export interface GpuReport {
  choice: GpuChoice;
  library: string;
  path: string;
  maxSize: number;
  ops: number;
  byKind: Record<GpuKind, number>;
  /** Legs by memory, sender's to receiver's (each operation has two: out and echo). */
  legs: Record<string, number>;
  bytesVerified: number;
  pinned: { peakBytes: number; pinnedBytes: number; cachedBytes: number; outstanding: number; outstandingBytes: number };
  device: DeviceMemoryStats;
}

const mem = (device: boolean) => (device ? "device" : "host");
const toDevice = (bytes: Uint8Array): DeviceBuffer => {
  const d = DeviceBuffer.allocate(bytes.length);
  d.copyFromHost(bytes);
  return d;
};
const hostBytes = (x: Uint8Array | DeviceBuffer): Uint8Array => (x instanceof DeviceBuffer ? x.copyToHost() : x);
const freeAll = (xs: readonly unknown[]) => {
  for (const x of xs) if (x instanceof DeviceBuffer) x.free();
};

/**
 * GPU operations whose parts have not all settled, by name, with each part's state: what a soak
 * that ends with GPU memory still out prints (main.ts), so that the part UCX or the library never
 * finished is named, not guessed.
 */
const unsettled = new Map<string, string[]>();

/** The GPU operations not settled yet (unsettled), one line each. */
export function unsettledGpuOperations(): string[] {
  return [...unsettled].map(([what, states]) => `${what}: ${states.join(", ")}`);
}

/** Free `buffers` (and what `results` hands over) once every part has settled: UCX and the copies are done with them then. */
function freeWhenSettled(what: string, partNames: readonly string[], parts: readonly Promise<unknown>[], buffers: readonly unknown[], results?: Promise<unknown>): void {
  const states = partNames.map((n) => `${n} pending`);
  unsettled.set(what, states);
  parts.forEach((p, i) =>
    p.then(
      () => (states[i] = `${partNames[i]} done`),
      (e: unknown) => (states[i] = `${partNames[i]} failed (${(e as { code?: string }).code ?? String(e)})`),
    ),
  );
  void Promise.allSettled(parts).then(() => {
    unsettled.delete(what);
    freeAll(buffers);
    results?.then(
      (r) => freeAll(Array.isArray(r) ? r : [(r as { device?: DeviceBuffer }).device]),
      () => {},
    );
  });
}

/** A receive of a GPU operation in flight: the in-flight abort fault aborts one, then closes its connection. */
export interface InFlightReceive {
  readonly conn: Connection;
  readonly abort: AbortController;
}

/** The coordinator's side of the GPU operations (main.ts lanes), and their figures. */
export class GpuTraffic {
  ops = 0;
  bytesVerified = 0;
  readonly byKind = Object.fromEntries(GPU_KINDS.map((k) => [k, 0])) as Record<GpuKind, number>;
  readonly legs: Record<string, number> = {};
  readonly receives = new Set<InFlightReceive>();

  constructor(
    readonly choice: GpuChoice,
    readonly library: string,
    readonly maxSize: number,
  ) {}

  private leg(from: boolean, to: boolean): void {
    const k = `${mem(from)}->${mem(to)}`;
    this.legs[k] = (this.legs[k] ?? 0) + 1;
  }

  /** Run one GPU operation on `c`; resolves with the bytes verified (as runOp does). */
  async run(kind: GpuKind, c: Connection, id: number, rand: () => number): Promise<number> {
    const receive: InFlightReceive = { conn: c, abort: new AbortController() };
    this.receives.add(receive);
    try {
      const bytes = kind === "gpu-am" ? await c.am.run(() => this.am(c, id, rand, receive.abort.signal)) : kind === "gpu-tag" ? await this.tag(c, id, rand, receive.abort.signal) : await this.multi(c, id, rand, receive.abort.signal);
      this.ops++;
      this.byKind[kind]++;
      this.bytesVerified += bytes;
      return bytes;
    } finally {
      this.receives.delete(receive);
    }
  }

  private size(rand: () => number): number {
    return randomSize(rand, this.maxSize);
  }

  private async tag(c: Connection, id: number, rand: () => number, signal: AbortSignal): Promise<number> {
    const ep = c.ep;
    const tag = dataTag(id);
    const out = payload(this.size(rand), id);
    let [sendDevice, peerDevice, recvDevice] = [rand() < 0.5, rand() < 0.75, rand() < 0.5];
    if (!sendDevice && !peerDevice && !recvDevice) peerDevice = true;
    const src = sendDevice ? toDevice(out) : out;
    const back = recvDevice ? DeviceBuffer.allocate(out.length) : new Uint8Array(out.length);
    const echo = posted(ep.recv(back, tag + 1, undefined, { signal }));
    const parts = [control(ep, { op: "gpu-tag", id, sizes: [out.length], device: peerDevice }), ep.send(src, tag), echo] as const;
    try {
      await all(parts);
      if (!sameBytes(out, hostBytes(back))) throw new CorruptionError(`GPU tag echo ${id} (${out.length} B, ${mem(sendDevice)} -> ${mem(peerDevice)} -> ${mem(recvDevice)}) differs`);
    } finally {
      freeWhenSettled(`gpu-tag ${id} (${out.length} B, ${mem(sendDevice)} -> ${mem(peerDevice)} -> ${mem(recvDevice)})`, ["control", "send", "echo receive"], parts, [src, back]);
    }
    this.leg(sendDevice, peerDevice);
    this.leg(peerDevice, recvDevice);
    return 2 * out.length;
  }

  private async am(c: Connection, id: number, rand: () => number, signal: AbortSignal): Promise<number> {
    const ep = c.ep;
    const out = payload(this.size(rand), id);
    const header = payload(Math.floor(rand() * 64), id + 1);
    const device = rand() < 0.75;
    const src = device ? toDevice(out) : out;
    const echo = posted(ep.amRecv({ signal }));
    const parts = [control(ep, { op: "gpu-am", id, sizes: [out.length] }), ep.amSend(src, { header }), echo] as const;
    try {
      await all(parts);
      const m = await echo;
      // The memory type travels in UCXX's header: device data comes back as a DeviceBuffer.
      if ((m.device !== undefined) !== device) throw new CorruptionError(`GPU active message echo ${id}: sent ${mem(device)} memory, got ${m.device ? "a DeviceBuffer" : "host data"} (memory type ${m.memoryType})`);
      if (!sameBytes(out, m.device ? m.device.copyToHost() : m.data) || !sameBytes(header, m.header)) throw new CorruptionError(`GPU active message echo ${id} (${out.length} B, ${mem(device)}) differs`);
      m.release();
    } finally {
      freeWhenSettled(`gpu-am ${id} (${out.length} B, ${mem(device)})`, ["control", "amSend", "echo amRecv"], parts, [src], echo);
    }
    this.leg(device, device);
    this.leg(device, device);
    return 2 * out.length + 2 * header.length;
  }

  private async multi(c: Connection, id: number, rand: () => number, signal: AbortSignal): Promise<number> {
    const ep = c.ep;
    const tag = dataTag(id);
    const n = Math.floor(rand() * 5);
    const host = Array.from({ length: n }, (_, i) => payload(this.size(rand), id * 8 + i));
    const device = host.map(() => rand() < 0.6);
    const frames = host.map((h, i) => (device[i] ? toDevice(h) : h));
    const echo = posted(ep.recvMulti(tag + 1, { deviceFrames: "device", signal }));
    const parts = [control(ep, { op: "gpu-multi", id, sizes: host.map((h) => h.length) }), ep.sendMulti(frames, tag), echo] as const;
    try {
      const [, , got] = await all(parts);
      if (got.length !== n) throw new CorruptionError(`GPU multi-buffer echo ${id}: ${got.length} frames of ${n}`);
      for (const [i, g] of got.entries()) {
        if (g instanceof DeviceBuffer !== device[i]) throw new CorruptionError(`GPU multi-buffer echo ${id}, frame ${i}: sent ${mem(device[i]!)} memory, got ${mem(g instanceof DeviceBuffer)}`);
        if (!sameBytes(host[i]!, hostBytes(g))) throw new CorruptionError(`GPU multi-buffer echo ${id}, frame ${i} (${host[i]!.length} B, ${mem(device[i]!)}) differs`);
      }
    } finally {
      freeWhenSettled(`gpu-multi ${id} (${n} frames)`, ["control", "sendMulti", "echo recvMulti"], parts, frames, echo);
    }
    for (const d of device) {
      this.leg(d, d);
      this.leg(d, d);
    }
    return 2 * host.reduce((s, h) => s + h.length, 0);
  }

  /** GPU memory still out: pinned staging buffers handed out, DeviceBuffers not freed. */
  outstanding(): { pinned: number; device: number } {
    return { pinned: pinnedStats().outstanding, device: deviceMemoryStats().outstanding };
  }

  report(): GpuReport {
    return {
      choice: this.choice,
      library: this.library,
      path: devicePath(),
      maxSize: this.maxSize,
      ops: this.ops,
      byKind: this.byKind,
      legs: this.legs,
      bytesVerified: this.bytesVerified,
      pinned: pinnedStats(),
      device: deviceMemoryStats(),
    };
  }
}

/** A receive into device memory that an abort fault cancels (main.ts abortReceive, with --gpu). */
export function deviceReceiveToAbort(ep: Endpoint, tag: number, signal: AbortSignal, multi: boolean): Promise<unknown> {
  if (multi) return ep.recvMulti(tag, { deviceFrames: "device", signal });
  const d = DeviceBuffer.allocate(64);
  const r: Promise<RecvResult> = ep.recv(d, tag, undefined, { signal });
  const what = `aborted device receive, tag ${tag}`;
  unsettled.set(what, ["receive pending"]);
  const free = () => {
    unsettled.delete(what);
    d.free();
  };
  r.then(free, free);
  return r;
}

/** The peer's side (peer.ts): receive, echo, free, whatever happened. */
export async function peerAct(ep: Endpoint, c: Control): Promise<void> {
  const tag = dataTag(c.id);
  if (c.op === "gpu-tag") {
    const buf = c.device ? DeviceBuffer.allocate(c.sizes[0]!) : new Uint8Array(c.sizes[0]!);
    try {
      await ep.recv(buf, tag);
      await ep.send(buf, tag + 1);
    } finally {
      freeAll([buf]);
    }
  } else if (c.op === "gpu-am") {
    const m = await ep.amRecv();
    try {
      await ep.amSend(m.device ?? m.data, { header: m.header });
    } finally {
      m.device?.free();
    }
  } else if (c.op === "gpu-multi") {
    const frames = await ep.recvMulti(tag, { deviceFrames: "device" });
    try {
      await ep.sendMulti(frames, tag + 1);
    } finally {
      freeAll(frames);
    }
  }
}
