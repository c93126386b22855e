/**
 * Pairing the two endpoints of a hello connection (connection.ts) in UCX's own sequence.
 *
 * UCX joins endpoints created by worker address by number (ucp_ep_match.c, UCX 1.13-1.19): each
 * `ucp_ep_create` to a peer worker takes the next number of that peer's sequence (conn_sn), and
 * the n-th endpoint A creates to B joins the n-th endpoint B creates to A. An endpoint made by
 * address that the other side never answers with one of its own (a one-sided `connect(address)`,
 * the usual way) leaves the two sequences unequal for good, and every later pair is then joined
 * crosswise: a stream sent on the hello's new endpoint lands on an endpoint the receiver never
 * sees, and its receive waits forever; peer failure, closes and AM reply endpoints cross as well.
 *
 * So each worker counts, per peer worker (by the uuid in the peer's address), the endpoints it
 * has created by address, and the error-handling mode of each (UCX refuses to join endpoints
 * whose modes differ). The hello exchanges the counts (the challenge carries the listener's, the
 * proof the client's); the listener makes its endpoint number T = max(the two), and the side that
 * is behind first creates "filler" endpoints for the numbers between, each joining one of the
 * other side's unanswered endpoints with that endpoint's mode (sent across as `modes`). A filler
 * claims the internal endpoint UCX already keeps for that unanswered one (or stands in for it):
 * it costs no more than what UCX holds anyway, and it lives, hidden, until the worker closes.
 *
 * What this cannot see: endpoints between the same two workers created by address at the same
 * moment as the handshake, by the application or by two hellos crossing (each side connecting
 * to the other's listener at once). Those are caught where they show (the sequence moved on
 * between the count and the creation) and fail the connect with UCX_TS_PAIRING_CROSSED.
 */
import type { ErrorHandling } from "../endpoint.ts";
import { UcxError } from "../errors.ts";

/**
 * Most unanswered endpoints a hello fills in. Each is a `ucp_ep_create` the other side asks for,
 * so this bounds what one handshake can make a listener create (a legitimate gap is the count of
 * one-sided `connect(address)` calls between the two workers: a few).
 */
export const MAX_PAIRING_GAP = 64;

/** What one side tells the other: a count of endpoints by address, and the modes of some of them. */
export interface Pairing {
  /** In a proof: the client's count so far. In an accept: the number the listener's endpoint took. */
  readonly count: number;
  /** Modes of the sender's endpoints numbered from the receiver's count up to `count`. */
  readonly modes: readonly ErrorHandling[];
}

/**
 * Per peer worker: the mode of every endpoint this worker created to it by address, in order.
 * Entries are never dropped, like UCX's own per-peer matching state (ucs_conn_match keeps a peer
 * for the worker's life): a peer's numbers must stay known as long as it may come back. That is a
 * few dozen bytes per peer worker ever connected to (a new worker per peer process). UCX numbers
 * at most 65,535 endpoints between two workers (a 16-bit conn_sn); past that it refuses to create
 * them (UCS_ERR_EXCEEDS_LIMIT, with streams enabled), with or without the hello.
 */
export class ConnectionSequences {
  private readonly byPeer = new Map<string, ErrorHandling[]>();

  /** How many endpoints this worker has created by address to `peer` (the next one's number). */
  count(peer: string): number {
    return this.byPeer.get(peer)?.length ?? 0;
  }

  /** Called as each `ucp_ep_create` by address is submitted (submission order is UCX's order). */
  record(peer: string, mode: ErrorHandling): void {
    const modes = this.byPeer.get(peer);
    if (modes) modes.push(mode);
    else this.byPeer.set(peer, [mode]);
  }

  /** Modes of endpoints numbered [from, to) to `peer` (a range this worker has created). */
  modes(peer: string, from: number, to: number): ErrorHandling[] {
    if (to - from > MAX_PAIRING_GAP) throw pairingGap(to - from);
    return (this.byPeer.get(peer) ?? []).slice(from, to);
  }
}

/**
 * The fillers a side must create before its endpoint numbered `target`: one per number from its
 * own count up, with the modes the other side sent for its endpoints from `theirFrom` on.
 */
export function fillerModes(ownCount: number, target: number, theirs: { from: number; modes: readonly ErrorHandling[] }): ErrorHandling[] {
  if (ownCount > target) {
    throw new UcxError(
      "UCX_TS_PAIRING_CROSSED",
      `this worker created ${ownCount - target} endpoint(s) by address to the peer while the hello was pairing endpoint ${target}: ` +
        "UCX would join the wrong ones. Do not connect(address) to a worker while connecting to its listener",
    );
  }
  const out: ErrorHandling[] = [];
  for (let n = ownCount; n < target; n++) {
    const mode = theirs.modes[n - theirs.from];
    if (mode === undefined) throw new UcxError("UCX_TS_PROTOCOL_ERROR", `the peer did not say how its endpoint ${n} handles errors (it sent modes for ${theirs.from}..${theirs.from + theirs.modes.length - 1})`);
    out.push(mode);
  }
  return out;
}

function pairingGap(gap: number): UcxError {
  return new UcxError(
    "UCX_TS_LIMIT_EXCEEDED",
    `${gap} endpoints made by worker address between these two workers are unanswered; the hello pairs at most ${MAX_PAIRING_GAP} (close the worker, or answer them with connect(address) from the other side)`,
  );
}
