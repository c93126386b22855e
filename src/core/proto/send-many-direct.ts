/**
 * `ep.sendMany` straight to UCX (polling and blocking modes, hybrid while its driver runs): each
 * buffer of the window is one ucp_tag_send_nbx through DirectTags (engine/direct-tags.ts), by
 * address, from the caller's call; one Promise for the window, settled from inside the progress
 * round that ends its last message.
 *
 * Why: through the ring a window is a submission record, a request entry, a batch of parts in
 * the executor and a completion record; from the call, windows of 256 x 8 B went 5.7-7.4 ->
 * 8.6-9.6 MB/s on Node, 10.8-11.6 -> 11.4-12.1 on Deno, 12.6-13.5 -> 14.8-17.1 on Bun (hybrid,
 * 2026-12-07, docs/benchmarks.md).
 *
 * The ring's semantics hold: messages are posted in order on one endpoint with one tag; one that
 * UCX refuses at once stops the rest (a later one would shift the receiver's idea of which
 * message is which); the window settles when every posted message has ended, with the first
 * failure. The messages UCX keeps end without a callback into JavaScript each: the progress
 * round checks the window's queue in order (DirectTags.sendQueued), as the ring's tracker
 * checked its parts (a callback per send cost Deno's 8 B windows 12 %). Each buffer UCX keeps
 * stays referenced in its direct slot until UCX is done, and counts in the endpoint's sends in
 * flight (a forced close's quiesce waits for it).
 */
import type { DirectTags, SendQueue } from "../engine/direct-tags.ts";
import { UcxError } from "../errors.ts";
import { describeStatus } from "../library.ts";

const UCS_OK = 0;

/**
 * What the window needs besides DirectTags. A failed message is the window's rejection, not a
 * lost send of the endpoint's (Endpoint.failAfterSend counts those for sends that resolved
 * before UCX was done): the caller sees it, as through the ring.
 */
export interface SendManyHost {
  addressOf(bytes: Uint8Array): number;
  /** Is the worker closing? A window it cancels that nobody awaits must not end the process. */
  closing(): boolean;
}

/** The window's rejection: as the ring's request for `sendMany` rejects. */
const windowError = (status: number): UcxError => UcxError.fromStatus(status, "sendMany", describeStatus);

/** Post `frames` to endpoint `endpoint` with tag (tagLo, tagHi) through `d`; the window's Promise. */
export function sendManyDirect(d: DirectTags, host: SendManyHost, endpoint: number, frames: readonly Uint8Array[], tagLo: number, tagHi: number): Promise<void> {
  let pending = 0;
  let status = UCS_OK;
  // Set once every message is posted (none ends before: ends come from progress rounds only).
  let settle: ((status: number) => void) | undefined;
  const ended = (s: number): void => {
    if (s !== UCS_OK && status === UCS_OK) status = s;
    pending--;
    if (pending === 0) settle?.(status);
  };
  // Posted without callbacks: the progress round finds them finished in order (DirectTags.sendQueued).
  const queue: SendQueue = { ids: [], next: 0 };
  for (let i = 0; i < frames.length; i++) {
    const f = frames[i]!;
    const r = d.sendQueued(queue, endpoint, host.addressOf(f), f.length, tagLo, tagHi, f);
    if (r === UCS_OK) continue;
    if (r < 0) {
      // Refused now (the endpoint failed in UCX): nothing after it is posted.
      status = r;
      break;
    }
    pending++;
    d.settleWith(r, ended);
  }
  if (pending === 0) return status === UCS_OK ? Promise.resolve() : Promise.reject(windowError(status));
  const promise = new Promise<void>((resolve, reject) => {
    settle = (s) => {
      if (s === UCS_OK) return resolve();
      // Cancelled by the worker's close: quiet for a window nobody awaits (requests.ts does the same).
      if (host.closing()) promise.catch(() => {});
      reject(windowError(s));
    };
  });
  return promise;
}
