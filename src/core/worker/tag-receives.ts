/**
 * Tag matching on the application thread: a worker's receives and probes (`worker.recv`,
 * `recvMulti`, `probe`), which endpoints made through the hello also use with their receive
 * scope (tag.ts, "scoped endpoints").
 */
import { abortError } from "../abort.ts";
import { asBytes, type BufferLike } from "../buffers.ts";
import type { Submitted } from "../endpoint-host.ts";
import { draftSubmission, submission } from "../engine/engine.ts";
import type { Payload } from "../engine/payload.ts";
import { MULTI_FLAG_IF_QUEUED, Op } from "../engine/records.ts";
import { invalidArgument, UcxError } from "../errors.ts";
import { describeStatus } from "../library.ts";
import { checkLimits, type MultiLimits, type MultiRecvOptions, type RecvOptions, type RecvResult } from "../receive-options.ts";
import { FULL_MASK, joinTag, putMask, putTag, scopedMaskWords, scopedTagWords, tagWords, unscopedTag, type Tag } from "../tag.ts";
import { addressOf, cachedAddressOf, type RequestPath } from "./request-path.ts";
import type { DeviceBuffer } from "../cuda/device-buffer.ts";
import { framesToDevice } from "../cuda/transfers.ts";
import { recvMultiStaged, type TagPort } from "../cuda/staged-multi-receive.ts";
import { UcxRequest } from "../ucx-request.ts";

const UCS_OK = 0;
const UCS_ERR_MESSAGE_TRUNCATED = -9;

/**
 * The error of a tag receive into `capacity` bytes that ended with `status` (`length`: the
 * message's size, which UCX reports for a truncated one too): what `worker.recv` rejects with.
 */
function receiveError(status: number, length: number, capacity: number): UcxError {
  if (status === UCS_ERR_MESSAGE_TRUNCATED) {
    return new UcxError(
      "UCS_ERR_MESSAGE_TRUNCATED",
      `ucp_tag_recv_nbx failed: UCS_ERR_MESSAGE_TRUNCATED: the message (${length} bytes) does not fit the ${capacity}-byte buffer`,
      { status, statusText: describeStatus(status) ?? undefined, incomingLength: length },
    );
  }
  return UcxError.fromStatus(status, "ucp_tag_recv_nbx", describeStatus);
}

/**
 * A tag receive's result and error, made once for every receive: closures per receive
 * (capturing its scope and buffer) were ~180 B of garbage each (Node); the buffer comes back as
 * the request's `keep` instead, and a scoped receive's tag drops the scope bits whatever they are.
 */
const receiveResult = (length: number, lo: number, hi: number): RecvResult => ({ tag: joinTag(lo, hi), length });
const scopedReceiveResult = (length: number, lo: number, hi: number): RecvResult => ({ tag: unscopedTag(lo, hi), length });
const tagReceiveError = (status: number, length: number, bytes: unknown): UcxError => receiveError(status, length, (bytes as Uint8Array).length);

export class TagReceives {
  constructor(
    private readonly path: RequestPath,
    private readonly settled: <T>(p: Promise<T>) => Promise<T>,
    /** The worker's default limits of a multi-buffer receive (WorkerOptions.multi). */
    private readonly multiLimits: Required<MultiLimits>,
    /** Takes a multi-receive's frames from the engine when its completion arrives. */
    private readonly takePayload: (id: number) => Payload | undefined,
  ) {}

  /**
   * The receive, with its request id (endpoints track theirs). With `scope` (an endpoint made
   * through the hello) it matches that receive scope exactly and the user's tag under the user's
   * mask, and reports the sender's tag without the scope. With `ifQueued` (a failed endpoint past
   * its drain) it is posted only if UCX holds a match. `released` runs when UCX reports the
   * receive, also after an early settle (a staged pipeline reuses the memory only then).
   */
  tagRecv(buffer: BufferLike, tag: Tag, mask: Tag, options: RecvOptions, scope?: number, ifQueued = false, released?: () => void): Submitted<RecvResult> {
    const bytes = asBytes(buffer);
    const s = draftSubmission(ifQueued ? Op.TagRecvIfQueued : Op.TagRecv);
    putTag(s, tag, scope);
    putMask(s, mask, scope !== undefined);
    if (options.signal?.aborted) {
      released?.(); // never handed to UCX
      return { id: 0, promise: Promise.reject(abortError(options.signal, "recv")) };
    }
    s.address = addressOf(bytes);
    s.length = bytes.length;
    // Polling and blocking modes: straight to UCX, no submission or completion record
    // (RequestPath.directReceive). Not for a receive on a failed endpoint past its drain (the
    // executor probes and posts in one step) nor one whose caller waits for UCX to let go of
    // the memory (`released`: a staged device receive).
    if (!ifQueued && released === undefined) {
      const direct = this.path.directReceive(s, bytes, "ucp_tag_recv_nbx", scope === undefined ? receiveResult : scopedReceiveResult, tagReceiveError);
      if (direct !== undefined) {
        this.path.cancelOnAbort(direct, options.signal, false, "recv");
        return direct;
      }
    }
    const r = this.path.request(
      s,
      bytes,
      "ucp_tag_recv_nbx",
      scope === undefined ? receiveResult : scopedReceiveResult,
      tagReceiveError,
      released && (() => released()),
    );
    this.path.cancelOnAbort(r, options.signal, false, "recv");
    return r;
  }

  /**
   * `tagRecv` as a UcxRequest (ucx-request.ts): no Promise unless the caller asks for one, the
   * completion there the moment a progress call delivers it. `scope` and `ifQueued` as in
   * `tagRecv`. Returns the request and its id (endpoints track theirs).
   */
  tagRecvRequest(buffer: BufferLike, tag: Tag, mask: Tag, scope?: number, ifQueued = false): { id: number; request: UcxRequest<RecvResult> } {
    const bytes = asBytes(buffer);
    const s = draftSubmission(ifQueued ? Op.TagRecvIfQueued : Op.TagRecv);
    putTag(s, tag, scope);
    putMask(s, mask, scope !== undefined);
    s.address = addressOf(bytes);
    s.length = bytes.length;
    const request = new UcxRequest<RecvResult>(this.path);
    const id = this.path.receiveInto(s, bytes, request, "ucp_tag_recv_nbx", scope === undefined ? receiveResult : scopedReceiveResult, tagReceiveError, ifQueued);
    return { id, request };
  }

  /**
   * A worker-wide receive of exactly `tag` (full mask) that reports through `done(length)` or
   * `failed(error)` (the error `tagRecv` rejects with) as its completion is delivered, with no
   * Promise (RequestPath.requestWith). Returns the request id (`cancel` takes it).
   */
  tagRecvWith(bytes: Uint8Array, tag: Tag, done: (length: number) => void, failed: (e: UcxError) => void): number {
    const s = draftSubmission(Op.TagRecv);
    putTag(s, tag);
    s.length = bytes.length;
    // Polling and blocking modes: straight to UCX, no record, entry or completion record.
    const direct = this.path.directTags();
    if (direct) {
      const id = direct.recv(cachedAddressOf(bytes), s.length, s.tagLo, s.tagHi, bytes, (status, length) =>
        status === UCS_OK ? done(length) : failed(receiveError(status, length, bytes.length)),
      );
      if (id < 0) throw UcxError.fromStatus(id, "ucp_tag_recv_nbx", describeStatus);
      return id;
    }
    putMask(s, FULL_MASK);
    s.address = addressOf(bytes);
    return this.path.requestWith(
      s,
      bytes,
      (status, length) => (status === UCS_OK ? done(length) : failed(receiveError(status, length, bytes.length))),
    );
  }

  /**
   * Many receives in one submission (`recvMany`), with one request id: `buffers[i]` takes the
   * i-th message matching (tag, mask), as UCX matches receives in posting order. Resolves with
   * one result per buffer; the first receive that fails rejects the whole (the others are
   * cancelled). `scope` and `ifQueued` as in `tagRecv`.
   */
  tagRecvMany(buffers: readonly BufferLike[], tag: Tag, mask: Tag, options: RecvOptions, scope?: number, ifQueued = false): Submitted<RecvResult[]> {
    if (!Array.isArray(buffers)) throw invalidArgument("recvMany needs an array of buffers");
    const bytes = buffers.map((b, i) => asBytes(b, `buffer ${i}`));
    const [tagLo, tagHi] = scope === undefined ? tagWords(tag) : scopedTagWords(scope, tag);
    const [maskLo, maskHi] = scope === undefined ? tagWords(mask, "tag mask") : scopedMaskWords(mask);
    if (options.signal?.aborted) return { id: 0, promise: Promise.reject(abortError(options.signal, "recvMany")) };
    if (bytes.length === 0) return { id: 0, promise: Promise.resolve([]) };
    // Entries of MANY_ENTRY_BYTES: address and capacity in; length and sender tag come back here.
    const descriptor = new Float64Array(4 * bytes.length);
    for (let i = 0; i < bytes.length; i++) {
      descriptor[4 * i] = addressOf(bytes[i]!);
      descriptor[4 * i + 1] = bytes[i]!.length;
    }
    const words = new Uint32Array(descriptor.buffer);
    const results = (): RecvResult[] =>
      bytes.map((_, i) => {
        const lo = words[8 * i + 6]!;
        const hi = words[8 * i + 7]!;
        return { tag: scope === undefined ? joinTag(lo, hi) : unscopedTag(lo, hi), length: descriptor[4 * i + 2]! };
      });
    const descriptorBytes = new Uint8Array(descriptor.buffer);
    const r = this.path.request(
      submission({ op: Op.RecvMany, address: addressOf(descriptorBytes), length: bytes.length, tagLo, tagHi, maskLo, maskHi, flags: ifQueued ? MULTI_FLAG_IF_QUEUED : 0 }),
      [descriptorBytes, bytes],
      "recvMany",
      results,
      (status) => {
        if (status !== UCS_ERR_MESSAGE_TRUNCATED) return undefined;
        const i = bytes.findIndex((b, k) => descriptor[4 * k + 2]! > b.length);
        return new UcxError(
          "UCS_ERR_MESSAGE_TRUNCATED",
          `recvMany failed: UCS_ERR_MESSAGE_TRUNCATED: message ${i} (${descriptor[4 * i + 2]} bytes) does not fit its ${bytes[i]?.length}-byte buffer`,
          { status, statusText: describeStatus(status) ?? undefined, incomingLength: descriptor[4 * i + 2] },
        );
      },
    );
    this.path.cancelOnAbort(r, options.signal, false, "recvMany");
    return r;
  }

  /**
   * The multi-receive, with its request id (endpoints track theirs); `scope` and `ifQueued` as in
   * `tagRecv`. The batch's later messages are received with the header's full tag, scope included.
   */
  tagRecvMulti(tag: Tag, options: MultiRecvOptions, scope?: number, ifQueued = false): Submitted<(Uint8Array | DeviceBuffer)[]> {
    const [tagLo, tagHi] = scope === undefined ? tagWords(tag) : scopedTagWords(scope, tag);
    const [maskLo, maskHi] = scope === undefined ? tagWords(options.mask ?? FULL_MASK, "tag mask") : scopedMaskWords(options.mask ?? FULL_MASK);
    const { maxBytes, maxHeaders } = checkLimits(options, this.multiLimits);
    if (options.signal?.aborted) return { id: 0, promise: Promise.reject(abortError(options.signal, "recvMulti")) };
    let payload: Payload | undefined;
    const flags = ifQueued ? MULTI_FLAG_IF_QUEUED : 0;
    const r = this.path.request(
      submission({ op: Op.MultiRecv, tagLo, tagHi, maskLo, maskHi, length: maxBytes, handle: maxHeaders, flags }),
      null,
      "recvMulti",
      () => {
        if (!payload?.buffers) throw new UcxError("UCX_TS_CLOSED", "recvMulti: the frames did not come back from the progress engine");
        const frames = payload.buffers.map((b) => new Uint8Array(b));
        // Frames the sender marked device memory go onto the GPU only for a caller that takes them there.
        return options.deviceFrames === "device" ? framesToDevice(frames, payload.device) : frames;
      },
      () => (payload?.code ? new UcxError(payload.code, `recvMulti: ${payload.message}`) : undefined),
      (id) => (payload = this.takePayload(id)),
    );
    this.path.cancelOnAbort(r, options.signal, false, "recvMulti");
    return r;
  }

  /**
   * A multi-receive whose device frames go to the GPU through the receiving pipeline
   * (cuda/staged-multi-receive.ts), on `port`: the worker's (none given) or an endpoint's.
   */
  recvMultiStaged(tag: Tag, options: MultiRecvOptions, port?: TagPort): Promise<(Uint8Array | DeviceBuffer)[]> {
    const { maxBytes, maxHeaders } = checkLimits(options, this.multiLimits);
    const mask = options.mask ?? FULL_MASK;
    tagWords(tag);
    tagWords(mask, "tag mask"); // bad tags throw here, before anything is posted
    const worker: TagPort = port ?? {
      owner: this,
      key: `${tag}:${mask}`,
      recv: (bytes, t, m, released) => {
        const r = this.tagRecv(bytes, t, m, {}, undefined, false, released);
        return { promise: r.promise, cancel: () => this.path.cancel(r.id) };
      },
    };
    return this.settled(recvMultiStaged(worker, tag, mask, { maxBytes, maxHeaders, signal: options.signal }));
  }

  async probe(tag: Tag, mask: Tag, options: RecvOptions): Promise<RecvResult | null> {
    const [tagLo, tagHi] = tagWords(tag);
    const [maskLo, maskHi] = tagWords(mask, "tag mask");
    if (options.signal?.aborted) throw abortError(options.signal, "probe");
    const { promise } = this.path.request(
      submission({ op: Op.TagProbe, tagLo, tagHi, maskLo, maskHi }),
      null,
      "ucp_tag_probe_nb",
      (length, lo, hi): RecvResult | null => ({ tag: joinTag(lo, hi), length }),
    );
    try {
      return await this.settled(promise);
    } catch (e) {
      if ((e as UcxError).code === "UCS_ERR_NO_MESSAGE") return null;
      throw e;
    }
  }
}
