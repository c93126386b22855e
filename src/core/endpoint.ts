/**
 * `Endpoint`: a connection to one peer worker. Tag sends and stream transfers go out on it;
 * `recv` here is the worker's tag receive tied to this endpoint's life (as UCXX does it): if the
 * endpoint fails, its pending receives reject with the endpoint's error instead of waiting for
 * a message that can no longer come.
 */
import { asBytes, type BufferLike } from "./buffers.ts";
import { submission } from "./engine/engine.ts";
import { CLOSE_FLAG_FORCE, Op } from "./engine/records.ts";
import { invalidArgument, statusName, UcxError } from "./errors.ts";
import { encodeHeaders, HEADER_BYTES } from "./multi/header.ts";
import { describeStatus } from "./library.ts";
import { FULL_MASK, tagWords, type Tag } from "./tag.ts";
import type { MultiRecvOptions, RecvOptions, RecvResult, Worker } from "./worker.ts";

export type ErrorHandling = "peer" | "none";

export class Endpoint {
  /** Requests posted through this endpoint and not yet completed. */
  private readonly pending = new Set<number>();
  #error: UcxError | undefined;
  #closed = false;
  private closing: Promise<void> | undefined;
  /** Called once if UCX reports this endpoint failed (peer died, connection lost). */
  onError: ((error: UcxError) => void) | undefined;

  /** @internal Made by `Worker.connect` and by listeners. */
  constructor(
    readonly worker: Worker,
    readonly id: number,
    readonly errorHandling: ErrorHandling,
    /** The peer's host and port, for endpoints made by host/port or accepted by a listener. */
    readonly remote: { host: string; port: number } | undefined,
  ) {}

  /** The error UCX reported for this endpoint, if any. */
  get error(): UcxError | undefined {
    return this.#error;
  }

  get closed(): boolean {
    return this.#closed;
  }

  private assertUsable(): void {
    if (this.#error) throw this.#error;
    if (this.#closed || this.closing) throw new UcxError("UCX_TS_CLOSED", "the endpoint is closed");
  }

  private track<T>(r: { id: number; promise: Promise<T> }): Promise<T> {
    this.pending.add(r.id);
    const forget = () => this.pending.delete(r.id);
    r.promise.then(forget, forget);
    return this.worker.settled(r.promise);
  }

  /** Send `buffer` as one tagged message. Resolves when the buffer may be reused. */
  send(buffer: BufferLike, tag: Tag): Promise<void> {
    this.assertUsable();
    const bytes = asBytes(buffer);
    const [tagLo, tagHi] = tagWords(tag);
    return this.track(
      this.worker.request(
        submission({ op: Op.TagSend, target: this.id, address: this.worker.addressOf(bytes), length: bytes.length, tagLo, tagHi }),
        bytes,
        "ucp_tag_send_nbx",
        () => undefined,
      ),
    );
  }

  /**
   * Receive a tagged message into `buffer` (tag matching is worker-wide in UCX: any peer's
   * message with a matching tag is taken). Rejects with this endpoint's error if it fails.
   */
  recv(buffer: BufferLike, tag: Tag, mask: Tag = FULL_MASK, options: RecvOptions = {}): Promise<RecvResult> {
    this.assertUsable();
    return this.track(this.worker.tagRecv(buffer, tag, mask, options));
  }

  /**
   * Send several buffers as one multi-buffer batch (UCXX's `tagMultiSend`, Python
   * `send_multi`): UCXX's headers (1,209 bytes per 100 frames), then every frame, all as tag
   * messages with `tag`, posted at once. Resolves when every buffer may be reused. The peer
   * receives them with `recvMulti(tag)` (or UCXX's `recv_multi`) without knowing count or sizes.
   */
  sendMulti(buffers: readonly BufferLike[], tag: Tag): Promise<void> {
    this.assertUsable();
    if (!Array.isArray(buffers)) throw invalidArgument("sendMulti needs an array of buffers");
    const frames = buffers.map((b, i) => asBytes(b, `frame ${i}`));
    const [tagLo, tagHi] = tagWords(tag);
    const headers = encodeHeaders(frames.map((f) => ({ size: f.length, device: false })));
    const count = headers.length / HEADER_BYTES + frames.length;
    // The descriptor the executor reads: (address, length) of every message, headers first.
    const descriptor = new Float64Array(2 * count);
    const headerAddress = this.worker.addressOf(headers);
    let m = 0;
    for (let h = 0; h < headers.length; h += HEADER_BYTES) {
      descriptor[m++] = headerAddress + h;
      descriptor[m++] = HEADER_BYTES;
    }
    for (const f of frames) {
      descriptor[m++] = this.worker.addressOf(f);
      descriptor[m++] = f.length;
    }
    const descriptorBytes = new Uint8Array(descriptor.buffer);
    return this.track(
      this.worker.request(
        submission({ op: Op.MultiSend, target: this.id, address: this.worker.addressOf(descriptorBytes), length: count, tagLo, tagHi }),
        [descriptorBytes, headers, frames],
        "sendMulti",
        () => undefined,
      ),
    );
  }

  /**
   * Receive a multi-buffer batch (see `Worker.recvMulti`), tied to this endpoint's life: if the
   * endpoint fails, the receive rejects with its error.
   */
  recvMulti(tag: Tag, options: MultiRecvOptions = {}): Promise<Uint8Array[]> {
    this.assertUsable();
    return this.track(this.worker.tagRecvMulti(tag, options));
  }

  /** Send `buffer` on the endpoint's byte stream. */
  streamSend(buffer: BufferLike): Promise<void> {
    this.assertUsable();
    const bytes = asBytes(buffer);
    return this.track(
      this.worker.request(
        submission({ op: Op.StreamSend, target: this.id, address: this.worker.addressOf(bytes), length: bytes.length }),
        bytes,
        "ucp_stream_send_nbx",
        () => undefined,
      ),
    );
  }

  /**
   * Fill `buffer` entirely from the endpoint's byte stream (waitall). Resolves with its length.
   * Aborting rejects at once with UCS_ERR_CANCELED, but UCX cannot cancel a stream receive:
   * the buffer stays UCX's (held by ucx-ts) until data fills it or the endpoint closes, and the
   * stream's next bytes still go to it. Close the endpoint after aborting a stream receive.
   */
  streamRecv(buffer: BufferLike, options: RecvOptions = {}): Promise<number> {
    this.assertUsable();
    const bytes = asBytes(buffer);
    const r = this.worker.request(
      submission({ op: Op.StreamRecv, target: this.id, address: this.worker.addressOf(bytes), length: bytes.length }),
      bytes,
      "ucp_stream_recv_nbx",
      (length) => length,
    );
    this.worker.cancelOnAbort(r.id, options.signal, true);
    return this.track(r);
  }

  /** Wait until everything sent on this endpoint has left (remote completion at transport level). */
  flush(): Promise<void> {
    this.assertUsable();
    return this.track(this.worker.request(submission({ op: Op.EndpointFlush, target: this.id }), null, "ucp_ep_flush_nbx", () => undefined));
  }

  /** UCX's description of this endpoint's configuration (`ucp_ep_print_info`). */
  async info(): Promise<string> {
    this.assertUsable();
    const out = new Uint8Array(64 * 1024);
    const length = await this.track(
      this.worker.request(
        submission({ op: Op.EndpointInfo, target: this.id, address: this.worker.addressOf(out), length: out.length }),
        out,
        "ucp_ep_print_info",
        (n) => n,
      ),
    );
    return new TextDecoder().decode(out.subarray(0, length));
  }

  /** The transports this endpoint's lanes use, as `transport/device` (e.g. `tcp/lo`, `sysv/memory`). */
  async transports(): Promise<string[]> {
    return parseTransports(await this.info());
  }

  /**
   * Close: by default flush what was sent, then close (`ucp_ep_close_nbx`). `force: true`
   * closes at once, failing what is still in flight; UCX allows that only for endpoints with
   * error handling "peer", so a "none" endpoint is always flushed and closed. Idempotent.
   */
  close(options: { force?: boolean } = {}): Promise<void> {
    if (this.worker.closed) {
      this.#closed = true;
      return Promise.resolve();
    }
    if (!this.closing) {
      const flags = options.force || this.#error ? CLOSE_FLAG_FORCE : 0;
      const r = this.worker.request(submission({ op: Op.EndpointClose, target: this.id, flags }), null, "ucp_ep_close_nbx", () => undefined);
      this.closing = this.worker
        .settled(r.promise)
        .catch((e: UcxError) => {
          // Closing an endpoint whose peer is gone reports the peer's failure: it is closed all the same.
          if (!this.#error && e.code !== "UCS_ERR_CANCELED" && !isEndpointFailure(e.status)) throw e;
        })
        .finally(() => {
          this.#closed = true;
          this.worker.forgetEndpoint(this.id);
        });
    }
    return this.closing;
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.close();
  }

  /** @internal UCX reported the endpoint failed: reject what waits on it, cancel its receives. */
  fail(status: number): void {
    if (this.#error) return;
    this.#error = UcxError.fromStatus(status, `endpoint ${this.remote ? `${this.remote.host}:${this.remote.port}` : this.id}`, describeStatus);
    for (const id of this.pending) {
      this.worker.cancel(id); // a receive is worker-wide: UCX will not end it for us
      this.worker.settleEarly(id, status);
    }
    this.onError?.(this.#error);
  }

  /** @internal The worker is closing. */
  markClosed(): void {
    this.#closed = true;
  }
}

function isEndpointFailure(status: number | undefined): boolean {
  if (status === undefined) return false;
  const name = statusName(status);
  return name === "UCS_ERR_CONNECTION_RESET" || name === "UCS_ERR_ENDPOINT_TIMEOUT" || name === "UCS_ERR_UNREACHABLE" || name.endsWith("_FAILURE");
}

/** `transport/device` of every lane in `ucp_ep_print_info` output, without repeats. */
export function parseTransports(info: string): string[] {
  const found: string[] = [];
  for (const line of info.split("\n")) {
    if (!/lane\[\d+\]/.test(line)) continue;
    const m = /\b(\w+)\/([\w:.-]+?)(?:\.\d+)?\s/.exec(line.replace(/^.*?lane\[\d+\]:\s*\d+:/, ""));
    if (m && !found.includes(`${m[1]}/${m[2]}`)) found.push(`${m[1]}/${m[2]}`);
  }
  return found;
}

