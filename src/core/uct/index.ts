/**
 * UCT, the transport layer under UCP, as thin JavaScript objects (issue 24). Everything here is
 * polled on the thread that created the worker: see worker.ts for why and what runs where.
 */
export { UctComponent } from "./component.ts";
export { UctMemoryDomain, type UctTransportResource, type UctMemoryDomainAttributes } from "./memory-domain.ts";
export { UctWorker, type UctProgressOptions } from "./worker.ts";
export { UctInterface, type UctInterfaceAddress } from "./interface.ts";
export { UctEndpoint, type UctIovEntry } from "./endpoint.ts";
export { UctMemory, UctRemoteKey } from "./memory.ts";
export { UctCompletion } from "./completion.ts";
export { UctAmMessage, type UctAmHandler, type UctHeldMessage } from "./am-message.ts";
export { type PackSource as UctPackSource } from "./native-callbacks.ts";
export { UCS_OK, UCS_INPROGRESS, UCS_ERR_NO_RESOURCE, type UctSendStatus } from "./status.ts";
export { ATOMIC_OP_NAMES as UCT_ATOMIC_OPS, type UctAtomicOpName, type UctTransportAttributes, type UctOperationLimits } from "./transport-attributes.ts";
export { listUctTransports, type UctTransportInfo } from "./transports.ts";
