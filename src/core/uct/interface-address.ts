/** An interface's address as a peer needs it to connect (UCT's device and interface addresses). */
export interface UctInterfaceAddress {
  readonly deviceAddress: Uint8Array;
  readonly interfaceAddress: Uint8Array;
}

/**
 * The posix shared-memory transport's interface address starts with its FIFO segment id, whose
 * top bits say how to attach it (UCX 1.13 src/uct/sm/mm/posix/mm_posix.c): bit 63 procfs (the
 * owner's /proc/<pid>/fd/<fd>), bit 62 shm_open, bit 61 hugetlb, bit 60 a pid namespace follows.
 * With neither of the first two, UCX opens a file in a directory the address must carry; where
 * the address has none (UCX's default configuration) it attaches with a NULL directory and
 * aborts the process (`ucs_assert(dir != NULL)`, mm_posix.c:369): one corrupted byte from a peer
 * ended it. A peer running the same UCX configuration sets the same bits this interface does,
 * so an address whose bits differ is refused before UCX sees it. What stays: a well-formed
 * crafted address still names whatever segment it likes (an address is a capability).
 */
const POSIX_ATTACH_FLAGS = 0b1101n << 60n; // procfs | shm_open | pid namespace (hugetlb may differ per segment)

export function checkPosixInterfaceAddress(own: Uint8Array, peer: Uint8Array): string | undefined {
  if (own.length < 8 || peer.length < 8) return undefined; // not the layout this check knows
  const flags = (a: Uint8Array) => new DataView(a.buffer, a.byteOffset, 8).getBigUint64(0, true) & POSIX_ATTACH_FLAGS;
  const want = flags(own);
  const got = flags(peer);
  if (got === want) return undefined;
  return `posix interface address: segment attach flags 0x${(got >> 60n).toString(16)} where this host's UCX sets 0x${(want >> 60n).toString(16)} (corrupted, or from a peer with another posix configuration)`;
}
