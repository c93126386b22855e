/**
 * ucx-ts: UCX for Node, Deno and Bun through each runtime's FFI.
 */
export { UcxError, statusName, type UcxTsErrorCode } from "./core/errors.ts";
export { ucx, check, cudaRuntime, ucxSettings, UCX_DEFAULTS, LIBDIR_ENV, INSTALL_HINT, type UcxSetting } from "./core/library.ts";
export { ucxVersion, type UcxVersion } from "./core/version.ts";
export { markCloseOnExec } from "./core/close-on-exec.ts";
export { Context, DEFAULT_FEATURES, type ContextOptions, type Feature, type MemoryTypeName } from "./core/context.ts";
export { listTransportResources, type TransportResource } from "./core/resources.ts";
export { collectInfo, formatInfo, type InfoReport, type CudaInfo } from "./core/info.ts";
export { UCS_STATUS, runtime, type Pointer, type UcsStatusName, type RuntimeName } from "./ffi/index.ts";
export {
  Worker,
  defaultProgressMode,
  DEFAULT_MULTI_LIMITS,
  type WorkerOptions,
  type RecvResult,
  type RecvOptions,
  type MultiLimits,
  type MultiRecvOptions,
  type AmHandler,
} from "./core/worker.ts";
/**
 * `Worker` under a name that does not shadow the global `Worker` of Deno, Bun and the DOM
 * (web workers). The same class; the docs use this name.
 */
export { Worker as UcpWorker } from "./core/worker.ts";
export {
  FRAMES_PER_HEADER,
  HEADER_BYTES,
  encodeHeaders,
  decodeHeader,
  headerCount,
  HeaderFormatError,
  type FrameDescription,
  type DecodedHeader,
} from "./core/multi/header.ts";
export { UcxRequest } from "./core/ucx-request.ts";
export { Endpoint, type ErrorHandling, type AtomicOp, type AtomicOptions, type AmSendOptions } from "./core/endpoint.ts";
export type { AmSendProtocol } from "./core/am/send-protocol.ts";
export { MemoryHandle, RemoteKey } from "./core/memory.ts";
export { encodeAmHeader, decodeAmHeader, AmHeaderError, RESERVED_OWNER, type AmHeader, type AmCallbackAddress } from "./core/am/header.ts";
export { DEFAULT_AM_LIMITS, type AmMessage, type AmQueueLimits } from "./core/am/inbox.ts";
export { Listener, type ConnectProtocol, type ListenOptions } from "./core/listener.ts";
export { FULL_MASK, USER_TAG_MASK, type Tag } from "./core/tag.ts";
export type { BufferLike } from "./core/buffers.ts";
export { PROGRESS_MODES, type ProgressMode } from "./core/engine/engine.ts";
export { ProtocolSelector, type SelectionReport, type CostSource } from "./core/proto/selector.ts";
export { buildTable, lookup, MAX_SIZE, SelectionGapError, type Candidate, type Selection } from "./core/proto/selection.ts";
export { fitCost, timeAt, bandwidthAt, type Cost } from "./core/proto/cost.ts";
export { SEND_PROTOCOLS, OPERATIONS, DEFAULT_COSTS, type SendProtocol, type Operation } from "./core/proto/protocols.ts";
export { resolveProtocolConfig, optionsFromEnv, DEFAULT_BOUNCE, type ProtocolOptions, type ResolvedProtocolConfig } from "./core/proto/config.ts";
export { defaultCalibrationPath, parseCalibration, saveCalibration, loadCalibratedCosts, CALIBRATION_FORMAT, type Calibration } from "./core/proto/calibration.ts";
export { formatProtoInfo } from "./core/proto/report.ts";
// UCT, the transport layer (issue 24): polled on the thread that creates the worker.
export {
  UctComponent,
  UctMemoryDomain,
  UctWorker,
  UctInterface,
  UctEndpoint,
  UctMemory,
  UctRemoteKey,
  UctCompletion,
  UctAmMessage,
  UCS_OK,
  UCS_INPROGRESS,
  UCS_ERR_NO_RESOURCE,
  UCT_ATOMIC_OPS,
  listUctTransports,
  type UctTransportResource,
  type UctMemoryDomainAttributes,
  type UctProgressOptions,
  type UctInterfaceAddress,
  type UctIovEntry,
  type UctAmHandler,
  type UctHeldMessage,
  type UctPackSource,
  type UctSendStatus,
  type UctAtomicOpName,
  type UctTransportAttributes,
  type UctOperationLimits,
  type UctTransportInfo,
} from "./core/uct/index.ts";
// GPU memory (issue 25): device buffers, CUDA availability, and the transfer path in use.
export { DeviceBuffer, pointerAttributes, type PointerAttributes, type PointerMemory } from "./core/cuda/device-buffer.ts";
export { cudaAvailability, type CudaAvailability } from "./core/cuda/runtime.ts";
export { devicePath, ucxSupportsCuda, GPU_PATH_ENV, type DevicePath } from "./core/cuda/path.ts";
export { CUDART_ENV } from "./core/library.ts";
export type { Frame } from "./core/cuda/transfers.ts";
export { type HelloAuthOptions, MIN_SECRET_BYTES } from "./core/hello/auth.ts";
// Collectives (UCG): groups of processes, plans per algorithm, the launcher (src/ucg/README.md).
export {
  UcgContext,
  Group,
  CollectiveRequest,
  defineOp,
  detectRte,
  launch,
  PREDEFINED_OPS,
  COLLECTIVES,
  PLAN_TEMPLATES,
  type UcgContextOptions,
  type CollectiveSpec,
  type StartOptions,
  type CollectiveResult,
  type CollectiveArray,
  type CollType,
  type DatatypeName,
  type OpLike,
  type UserOp,
  type Rte,
  type LaunchOptions,
  type LaunchResult,
  type PlanCacheStats,
} from "./ucg/index.ts";
