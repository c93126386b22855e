/** An interface's address as a peer needs it to connect (UCT's device and interface addresses). */
export interface UctInterfaceAddress {
  readonly deviceAddress: Uint8Array;
  readonly interfaceAddress: Uint8Array;
}
