/**
 * How a UCT call's status is turned into JavaScript, following the completion seed
 * (../shared/seeds/001_c359bb5b33953fa2.txt and 003_2944ca982e48c11c.txt):
 * - UCS_OK: done (for zcopy the completion is NOT called);
 * - UCS_INPROGRESS: started, the completion passed will be called when its count reaches zero;
 * - UCS_ERR_NO_RESOURCE: not started; retry after progress, or add to the endpoint's pending queue.
 * These three are returned as they are; any other status is an error and throws `UcxError`.
 */
import { UCS_STATUS } from "../../ffi/index.ts";
import { UcxError } from "../errors.ts";
import { describeStatus } from "../library.ts";

export const UCS_OK = UCS_STATUS.UCS_OK;
export const UCS_INPROGRESS = UCS_STATUS.UCS_INPROGRESS;
export const UCS_ERR_NO_RESOURCE = UCS_STATUS.UCS_ERR_NO_RESOURCE;

/** What a UCT send returns without throwing. */
export type UctSendStatus = typeof UCS_OK | typeof UCS_INPROGRESS | typeof UCS_ERR_NO_RESOURCE;

export function sendStatus(status: number, operation: string): UctSendStatus {
  if (status === UCS_OK || status === UCS_INPROGRESS || status === UCS_ERR_NO_RESOURCE) return status;
  throw UcxError.fromStatus(status, operation, describeStatus);
}

/**
 * A bcopy result (`ssize_t`): the packed length when >= 0, UCS_ERR_NO_RESOURCE (-2) returned as
 * it is, any other negative status thrown.
 */
export function bcopyResult(result: number, operation: string): number {
  if (result >= 0 || result === UCS_ERR_NO_RESOURCE) return result;
  throw UcxError.fromStatus(result, operation, describeStatus);
}
