import { IpamError, StoreAccessDeniedError, StoreUnavailableError } from "@ipamkit/core";
import {
  EtcdAuthenticationFailedError,
  EtcdInvalidAuthTokenError,
  EtcdPermissionDeniedError,
  EtcdRoleNotGrantedError,
  EtcdUserNotFoundError,
  GRPCUnauthenticatedError,
} from "etcd3";

export const STORE_NAME = "storage-etcd";

/**
 * The one place etcd client errors become ipamkit errors. Credentials problems are not retryable;
 * everything else (unreachable, deadline exceeded, leader changes…) is StoreUnavailableError,
 * retryable (CNI code 11). Messages name the operation and the endpoints, never credentials.
 */
export function mapEtcdError(error: unknown, operation: string, endpoints: readonly string[]): IpamError {
  if (error instanceof IpamError) return error;
  const where = `${operation} on ${endpoints.join(",")}`;
  const detail = error instanceof Error ? `${error.constructor.name}: ${error.message}` : String(error);
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
  return new StoreUnavailableError(`etcd unavailable for ${where}: ${detail}`, { component: STORE_NAME, cause: error });
}
