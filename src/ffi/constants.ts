/**
 * Numeric constants from UCX's headers that ucx-ts uses: status codes, feature and field-mask
 * bits, enum values. Each name is the C name, so `scripts/check-layout.ts` can compare every
 * value here with the installed headers.
 */

/** `ucs_status_t` values (ucs/type/status.h). Link and endpoint failures are ranges. */
export const UCS_STATUS = {
  UCS_OK: 0,
  UCS_INPROGRESS: 1,
  UCS_ERR_NO_MESSAGE: -1,
  UCS_ERR_NO_RESOURCE: -2,
  UCS_ERR_IO_ERROR: -3,
  UCS_ERR_NO_MEMORY: -4,
  UCS_ERR_INVALID_PARAM: -5,
  UCS_ERR_UNREACHABLE: -6,
  UCS_ERR_INVALID_ADDR: -7,
  UCS_ERR_NOT_IMPLEMENTED: -8,
  UCS_ERR_MESSAGE_TRUNCATED: -9,
  UCS_ERR_NO_PROGRESS: -10,
  UCS_ERR_BUFFER_TOO_SMALL: -11,
  UCS_ERR_NO_ELEM: -12,
  UCS_ERR_SOME_CONNECTS_FAILED: -13,
  UCS_ERR_NO_DEVICE: -14,
  UCS_ERR_BUSY: -15,
  UCS_ERR_CANCELED: -16,
  UCS_ERR_SHMEM_SEGMENT: -17,
  UCS_ERR_ALREADY_EXISTS: -18,
  UCS_ERR_OUT_OF_RANGE: -19,
  UCS_ERR_TIMED_OUT: -20,
  UCS_ERR_EXCEEDS_LIMIT: -21,
  UCS_ERR_UNSUPPORTED: -22,
  UCS_ERR_REJECTED: -23,
  UCS_ERR_NOT_CONNECTED: -24,
  UCS_ERR_CONNECTION_RESET: -25,
  UCS_ERR_FIRST_LINK_FAILURE: -40,
  UCS_ERR_LAST_LINK_FAILURE: -59,
  UCS_ERR_FIRST_ENDPOINT_FAILURE: -60,
  UCS_ERR_ENDPOINT_TIMEOUT: -80,
  UCS_ERR_LAST_ENDPOINT_FAILURE: -89,
  UCS_ERR_LAST: -100,
} as const;

export type UcsStatusName = keyof typeof UCS_STATUS;

/** Feature, field-mask, flag and enum values, by their C names. */
export const UCX_CONSTANTS = {
  // ucp_params_t.field_mask / features
  UCP_PARAM_FIELD_FEATURES: 1 << 0,
  UCP_PARAM_FIELD_REQUEST_SIZE: 1 << 1,
  UCP_PARAM_FIELD_TAG_SENDER_MASK: 1 << 4,
  UCP_PARAM_FIELD_MT_WORKERS_SHARED: 1 << 5,
  UCP_PARAM_FIELD_ESTIMATED_NUM_EPS: 1 << 6,
  UCP_PARAM_FIELD_NAME: 1 << 8,
  UCP_FEATURE_TAG: 1 << 0,
  UCP_FEATURE_RMA: 1 << 1,
  UCP_FEATURE_AMO32: 1 << 2,
  UCP_FEATURE_AMO64: 1 << 3,
  UCP_FEATURE_WAKEUP: 1 << 4,
  UCP_FEATURE_STREAM: 1 << 5,
  UCP_FEATURE_AM: 1 << 6,

  // ucp_context_attr_t / ucp_lib_attr_t
  UCP_ATTR_FIELD_REQUEST_SIZE: 1 << 0,
  UCP_ATTR_FIELD_THREAD_MODE: 1 << 1,
  UCP_ATTR_FIELD_MEMORY_TYPES: 1 << 2,
  UCP_ATTR_FIELD_NAME: 1 << 3,
  UCP_LIB_ATTR_FIELD_MAX_THREAD_LEVEL: 1 << 0,

  // ucs_thread_mode_t
  UCS_THREAD_MODE_SINGLE: 0,
  UCS_THREAD_MODE_SERIALIZED: 1,
  UCS_THREAD_MODE_MULTI: 2,

  // ucp_worker_params_t / ucp_worker_attr_t
  UCP_WORKER_PARAM_FIELD_THREAD_MODE: 1 << 0,
  UCP_WORKER_PARAM_FIELD_EVENTS: 1 << 2,
  UCP_WORKER_PARAM_FIELD_USER_DATA: 1 << 3,
  UCP_WORKER_PARAM_FIELD_NAME: 1 << 6,
  UCP_WORKER_ATTR_FIELD_THREAD_MODE: 1 << 0,
  UCP_WORKER_ATTR_FIELD_ADDRESS: 1 << 1,
  UCP_WORKER_ATTR_FIELD_ADDRESS_FLAGS: 1 << 2,
  UCP_WORKER_ATTR_FIELD_MAX_AM_HEADER: 1 << 3,
  UCP_WORKER_ATTR_FIELD_NAME: 1 << 4,
  UCP_WAKEUP_TAG_SEND: 1 << 2,
  UCP_WAKEUP_TAG_RECV: 1 << 3,
  UCP_WAKEUP_TX: 1 << 10,
  UCP_WAKEUP_RX: 1 << 11,

  // ucp_ep_params_t
  UCP_EP_PARAM_FIELD_REMOTE_ADDRESS: 1 << 0,
  UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE: 1 << 1,
  UCP_EP_PARAM_FIELD_ERR_HANDLER: 1 << 2,
  UCP_EP_PARAM_FIELD_USER_DATA: 1 << 3,
  UCP_EP_PARAM_FIELD_SOCK_ADDR: 1 << 4,
  UCP_EP_PARAM_FIELD_FLAGS: 1 << 5,
  UCP_EP_PARAM_FIELD_CONN_REQUEST: 1 << 6,
  UCP_EP_PARAM_FIELD_NAME: 1 << 7,
  UCP_EP_PARAMS_FLAGS_CLIENT_SERVER: 1 << 0,
  UCP_EP_PARAMS_FLAGS_NO_LOOPBACK: 1 << 1,
  UCP_ERR_HANDLING_MODE_NONE: 0,
  UCP_ERR_HANDLING_MODE_PEER: 1,
  UCP_EP_CLOSE_FLAG_FORCE: 1 << 0,
  UCP_EP_ATTR_FIELD_NAME: 1 << 0,
  UCP_EP_ATTR_FIELD_LOCAL_SOCKADDR: 1 << 1,
  UCP_EP_ATTR_FIELD_REMOTE_SOCKADDR: 1 << 2,

  // listeners
  UCP_LISTENER_PARAM_FIELD_SOCK_ADDR: 1 << 0,
  UCP_LISTENER_PARAM_FIELD_ACCEPT_HANDLER: 1 << 1,
  UCP_LISTENER_PARAM_FIELD_CONN_HANDLER: 1 << 2,
  UCP_LISTENER_ATTR_FIELD_SOCKADDR: 1 << 0,
  UCP_CONN_REQUEST_ATTR_FIELD_CLIENT_ADDR: 1 << 0,

  // ucp_request_param_t.op_attr_mask
  UCP_OP_ATTR_FIELD_REQUEST: 1 << 0,
  UCP_OP_ATTR_FIELD_CALLBACK: 1 << 1,
  UCP_OP_ATTR_FIELD_USER_DATA: 1 << 2,
  UCP_OP_ATTR_FIELD_DATATYPE: 1 << 3,
  UCP_OP_ATTR_FIELD_FLAGS: 1 << 4,
  UCP_OP_ATTR_FIELD_MEMORY_TYPE: 1 << 6,
  UCP_OP_ATTR_FIELD_RECV_INFO: 1 << 7,
  UCP_OP_ATTR_FIELD_MEMH: 1 << 8,
  UCP_OP_ATTR_FLAG_NO_IMM_CMPL: 1 << 16,
  UCP_OP_ATTR_FLAG_FAST_CMPL: 1 << 17,
  UCP_OP_ATTR_FLAG_FORCE_IMM_CMPL: 1 << 18,
  UCP_STREAM_RECV_FLAG_WAITALL: 1 << 0,
  UCP_AM_SEND_FLAG_REPLY: 1 << 0,

  // uct
  UCT_COMPONENT_ATTR_FIELD_NAME: 1 << 0,
  UCT_COMPONENT_ATTR_FIELD_MD_RESOURCE_COUNT: 1 << 1,
  UCT_COMPONENT_ATTR_FIELD_MD_RESOURCES: 1 << 2,
  UCT_DEVICE_TYPE_NET: 0,
  UCT_DEVICE_TYPE_SHM: 1,
  UCT_DEVICE_TYPE_ACC: 2,
  UCT_DEVICE_TYPE_SELF: 3,

  // ucs_memory_type_t
  UCS_MEMORY_TYPE_HOST: 0,
  UCS_MEMORY_TYPE_CUDA: 1,
  UCS_MEMORY_TYPE_CUDA_MANAGED: 2,
  UCS_MEMORY_TYPE_ROCM: 3,
  UCS_MEMORY_TYPE_ROCM_MANAGED: 4,

  // string sizes
  UCP_ENTITY_NAME_MAX: 32,
  UCT_COMPONENT_NAME_MAX: 16,
  UCT_TL_NAME_MAX: 10,
  UCT_MD_NAME_MAX: 16,
  UCT_DEVICE_NAME_MAX: 32,

  // the UCP API version this table is written against (ucp_version.h)
  UCP_API_MAJOR: 1,
  UCP_API_MINOR: 13,
} as const;

/** Memory type names in `ucs_memory_type_t` order, as UCX prints them. */
export const MEMORY_TYPE_NAMES = ["host", "cuda", "cuda-managed", "rocm", "rocm-managed"] as const;

/** Device type names in `uct_device_type_t` order, as `ucx_info -d` prints them. */
export const DEVICE_TYPE_NAMES = ["network", "intra-node", "accelerator", "loopback"] as const;

/**
 * `UCS_PTR_IS_ERR`: a `ucs_status_ptr_t` holding an error status is a small negative value
 * (-1..-100) cast to a pointer; with pointers as Numbers it is simply negative.
 */
export function ptrIsError(p: number): boolean {
  return p < 0 && p >= UCS_STATUS.UCS_ERR_LAST;
}
