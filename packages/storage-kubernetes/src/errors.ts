import { IpamError, StoreAccessDeniedError, StoreConflictError, StoreRejectedError, StoreUnavailableError } from "@ipamkit/core";

export const STORE_NAME = "storage-kubernetes";

/** What the API server said, from an `ApiException` (`code`, raw `body`) or a transport error. */
export interface ApiFailure {
  status: number | undefined;
  reason: string | undefined;
  message: string;
}

export function apiFailure(error: unknown): ApiFailure {
  const e = error as { code?: unknown; body?: unknown; name?: unknown; message?: unknown };
  if (typeof e?.code === "number") {
    let status: { reason?: unknown; message?: unknown } = {};
    if (typeof e.body === "string") {
      try {
        status = JSON.parse(e.body) as typeof status;
      } catch {
        // not a Status body: keep the raw text below
      }
    } else if (typeof e.body === "object" && e.body !== null) status = e.body as typeof status;
    const message = typeof status.message === "string" ? status.message : typeof e.body === "string" ? e.body.slice(0, 300) : "";
    return { status: e.code, reason: typeof status.reason === "string" ? status.reason : undefined, message };
  }
  const name = typeof e?.name === "string" ? e.name : "Error";
  return { status: undefined, reason: name, message: error instanceof Error ? error.message : String(error) };
}

/**
 * The one place API errors become ipamkit errors. A conflict (409; 404 on a guarded write or
 * delete — the store never sends JSON patches) is StoreConflictError; 401/403 are access problems (not retryable); an object
 * too large for the API server (413, or etcd's "request is too large") or invalid (400, 422: e.g. a
 * `network_name` that makes no valid object name) is StoreRejectedError; anything else —
 * refused connections, timeouts, 429, 5xx — is StoreUnavailableError (retryable, CNI code 11); of
 * a write (`write`), with `outcomeUnknown`: it may have been applied, core reads again to find out.
 */
export function mapKubeError(error: unknown, operation: string, object: string, options: { write?: boolean } = {}): IpamError {
  if (error instanceof IpamError) return error;
  const f = apiFailure(error);
  const base = { component: STORE_NAME, cause: error };
  const detail = `${f.status === undefined ? (f.reason ?? "error") : `HTTP ${f.status}${f.reason ? ` ${f.reason}` : ""}`}: ${f.message}`;
  // 404 on a guarded write or delete: the version we hold no longer exists.
  if (f.status === 409 || f.status === 404) return new StoreConflictError(object, base);
  if (f.status === 401 || f.status === 403) return new StoreAccessDeniedError(`API server refused ${operation} ${object}: ${detail}`, base);
  if (f.status === 413 || /request is too large|too long|exceeds the maximum/i.test(f.message))
    return new StoreRejectedError(object, `the API server refused it as too large (${detail})`, base);
  if (f.status === 400 || f.status === 422) return new StoreRejectedError(object, `the API server rejected ${operation} (${detail})`, base);
  // a write that failed so may have been applied (a timeout, a reset, a 5xx from etcd behind the server)
  return new StoreUnavailableError(`API server unavailable for ${operation} ${object}: ${detail}`, {
    ...base,
    outcomeUnknown: options.write === true,
  });
}
