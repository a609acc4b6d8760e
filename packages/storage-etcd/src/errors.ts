import { IpamError, StoreAccessDeniedError, StoreUnavailableError } from "@ipamkit/core";
import {
  EtcdAuthenticationFailedError,
  EtcdInvalidAuthTokenError,
  EtcdPermissionDeniedError,
  EtcdRoleNotGrantedError,
  EtcdUserNotFoundError,
  GRPCAbortedError,
  GRPCAlreadyExistsError,
  GRPCCancelledError,
  GRPCDataLossError,
  GRPCDeadlineExceededError,
  GRPCFailedPreconditionError,
  GRPCInternalError,
  GRPCInvalidArgumentError,
  GRPCNotFoundError,
  GRPCNotImplementedError,
  GRPCOutOfRangeError,
  GRPCResourceExhastedError,
  GRPCUnauthenticatedError,
  GRPCUnavailableError,
  GRPCUnknownError,
} from "etcd3";

export const STORE_NAME = "storage-etcd";

/** etcd3's gRPC error classes and the status each stands for (their names do not survive a minifier). */
const GRPC_STATUS: readonly (readonly [abstract new (...args: never[]) => Error, string, number])[] = [
  [GRPCCancelledError, "CANCELLED", 1],
  [GRPCUnknownError, "UNKNOWN", 2],
  [GRPCInvalidArgumentError, "INVALID_ARGUMENT", 3],
  [GRPCDeadlineExceededError, "DEADLINE_EXCEEDED", 4],
  [GRPCNotFoundError, "NOT_FOUND", 5],
  [GRPCAlreadyExistsError, "ALREADY_EXISTS", 6],
  [GRPCResourceExhastedError, "RESOURCE_EXHAUSTED", 8],
  [GRPCFailedPreconditionError, "FAILED_PRECONDITION", 9],
  [GRPCAbortedError, "ABORTED", 10],
  [GRPCOutOfRangeError, "OUT_OF_RANGE", 11],
  [GRPCNotImplementedError, "UNIMPLEMENTED", 12],
  [GRPCInternalError, "INTERNAL", 13],
  [GRPCUnavailableError, "UNAVAILABLE", 14],
  [GRPCDataLossError, "DATA_LOSS", 15],
  [GRPCUnauthenticatedError, "UNAUTHENTICATED", 16],
];

/** grpc-js messages start `<code> <STATUS>: `. */
const STATUS_PREFIX = /^(\d{1,2}) ([A-Z_]+): ?/;

/**
 * What went wrong, named by its gRPC status (`etcd UNAVAILABLE (14): No connection established…`),
 * never by the error's class name (a bundle minifies it to `Ba`). Other errors: their message.
 */
export function describeEtcdError(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const prefixed = STATUS_PREFIX.exec(error.message);
  const known = GRPC_STATUS.find(([type]) => error instanceof type);
  if (prefixed !== null) return `etcd ${prefixed[2]} (${prefixed[1]}): ${error.message.slice(prefixed[0].length) || "no details"}`;
  if (known !== undefined) return `etcd ${known[1]} (${known[2]}): ${error.message || "no details"}`;
  return error.message || "no details";
}

/**
 * The one place etcd client errors become ipamkit errors. Credentials problems are not retryable;
 * everything else (unreachable, deadline exceeded, leader changes…) is StoreUnavailableError,
 * retryable (CNI code 11); of a write (`write`), with `outcomeUnknown`: core reads again to find
 * out. Messages name the operation, the endpoints and the gRPC status, never credentials.
 */
export function mapEtcdError(
  error: unknown,
  operation: string,
  endpoints: readonly string[],
  options: { write?: boolean } = {},
): IpamError {
  if (error instanceof IpamError) return error;
  const where = `${operation} on ${endpoints.join(",")}`;
  const detail = describeEtcdError(error);
  if (
    error instanceof EtcdAuthenticationFailedError ||
    error instanceof EtcdPermissionDeniedError ||
    error instanceof EtcdInvalidAuthTokenError ||
    error instanceof EtcdRoleNotGrantedError ||
    error instanceof EtcdUserNotFoundError ||
    error instanceof GRPCUnauthenticatedError
  ) {
    return new StoreAccessDeniedError(`etcd refused ${where}: ${detail}`, { component: STORE_NAME, cause: error });
  }
  // a write that failed so may have been applied (the connection dropped after etcd got it)
  return new StoreUnavailableError(`etcd unavailable for ${where}: ${detail}`, {
    component: STORE_NAME,
    cause: error,
    outcomeUnknown: options.write === true,
  });
}
