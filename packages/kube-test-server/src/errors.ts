/**
 * `Status` bodies as kube-apiserver writes them (k8s.io/apimachinery/pkg/api/errors): the same
 * codes, reasons, messages and `details` shapes, so clients' error handling sees what it will see
 * in a cluster.
 */
export interface StatusCause {
  reason?: string;
  message?: string;
  field?: string;
}

export interface StatusDetails {
  name?: string;
  group?: string;
  kind?: string;
  causes?: StatusCause[];
  retryAfterSeconds?: number;
}

export interface Status {
  kind: "Status";
  apiVersion: "v1";
  metadata: { continue?: string };
  status: "Failure" | "Success";
  message: string;
  reason?: string;
  details?: StatusDetails;
  code: number;
}

/** Thrown anywhere in request handling; the server answers with its Status. */
export class ApiError extends Error {
  constructor(readonly status: Status) {
    super(status.message);
    this.name = "ApiError";
  }

  get code(): number {
    return this.status.code;
  }
}

export function statusBody(code: number, message: string, reason?: string, details?: StatusDetails): Status {
  return {
    kind: "Status",
    apiVersion: "v1",
    metadata: {},
    status: "Failure",
    message,
    ...(reason === undefined ? {} : { reason }),
    ...(details === undefined ? {} : { details }),
    code,
  };
}

function fail(code: number, message: string, reason?: string, details?: StatusDetails): ApiError {
  return new ApiError(statusBody(code, message, reason, details));
}

/** Group + plural (+ Kind), enough to name a resource in messages. */
export interface ResourceName {
  readonly group: string;
  readonly plural: string;
  readonly kind: string;
}

/** `ippools.whereabouts.cni.cncf.io`, or `pods` for the core group. */
export function qualifiedResource(r: ResourceName): string {
  return r.group === "" ? r.plural : `${r.plural}.${r.group}`;
}

/** `IPPool.whereabouts.cni.cncf.io`, or `Pod` for the core group. */
export function qualifiedKind(r: ResourceName): string {
  return r.group === "" ? r.kind : `${r.kind}.${r.group}`;
}

export function resourceDetails(r: ResourceName, name: string): StatusDetails {
  return { name, ...(r.group === "" ? {} : { group: r.group }), kind: r.plural };
}

export const OPTIMISTIC_LOCK_MESSAGE = "the object has been modified; please apply your changes to the latest version and try again";

export function notFound(r: ResourceName, name: string): ApiError {
  return fail(404, `${qualifiedResource(r)} "${name}" not found`, "NotFound", resourceDetails(r, name));
}

export function namespaceNotFound(namespace: string): ApiError {
  return fail(404, `namespaces "${namespace}" not found`, "NotFound", { name: namespace, kind: "namespaces" });
}

export function alreadyExists(r: ResourceName, name: string, beingDeleted = false): ApiError {
  const message = `${qualifiedResource(r)} "${name}" already exists`;
  return fail(409, beingDeleted ? `object is being deleted: ${message}` : message, "AlreadyExists", resourceDetails(r, name));
}

export function conflict(r: ResourceName, name: string, why: string = OPTIMISTIC_LOCK_MESSAGE): ApiError {
  return fail(409, `Operation cannot be fulfilled on ${qualifiedResource(r)} "${name}": ${why}`, "Conflict", resourceDetails(r, name));
}

/** A failed DELETE precondition (storage.NewInvalidObjError via the registry): named by Kind, details.kind is the Kind. */
export function preconditionFailed(r: ResourceName, name: string, why: string): ApiError {
  return fail(409, `Operation cannot be fulfilled on ${qualifiedKind(r)} "${name}": ${why}`, "Conflict", {
    name,
    ...(r.group === "" ? {} : { group: r.group }),
    kind: r.kind,
  });
}

export function badRequest(message: string): ApiError {
  return fail(400, message, "BadRequest");
}

export function unauthorized(): ApiError {
  return fail(401, "Unauthorized", "Unauthorized");
}

/** The route exists but not for this HTTP method. */
export function methodNotAllowed(): ApiError {
  return fail(405, "the server does not allow this method on the requested resource", "MethodNotAllowed", {});
}

/** No route at all. */
export function pathNotFound(): ApiError {
  return fail(404, "the server could not find the requested resource", "NotFound", {});
}

export function unsupportedMediaType(accepted: readonly string[], detail?: string): ApiError {
  const base = `the body of the request was in an unknown format - accepted media types include: ${accepted.join(", ")}`;
  return fail(415, detail === undefined ? base : `${base} (${detail})`, "UnsupportedMediaType");
}

/** `detail` is e.g. "limit is 3145728". */
export function entityTooLarge(detail: string): ApiError {
  return fail(413, `Request entity too large: ${detail}`, "RequestEntityTooLarge");
}

export function expired(message: string, continueToken?: string): ApiError {
  const e = fail(410, message, "Expired");
  if (continueToken !== undefined) e.status.metadata = { continue: continueToken };
  return e;
}

/** A Go error that no apimachinery helper wrapped: code 500 and no reason, exactly as the API server writes it. */
export function plainError(message: string): ApiError {
  return fail(500, message);
}

export function timeout(message: string, causes?: StatusCause[]): ApiError {
  return fail(504, `Timeout: ${message}`, "Timeout", { ...(causes === undefined ? {} : { causes }), retryAfterSeconds: 1 });
}

/** NewGenericServerResponse(422): what a failed JSON-patch operation (e.g. a `test`) gets; the detail is not passed on. */
export function genericInvalid(): ApiError {
  return fail(422, "the server rejected our request due to an error in our request", "Invalid", {});
}

export function fromFault(code: number, reason: string | undefined, message: string | undefined): ApiError {
  return fail(code, message ?? `injected fault: HTTP ${code}`, reason ?? defaultReason(code));
}

function defaultReason(code: number): string | undefined {
  const reasons: Record<number, string> = {
    400: "BadRequest",
    401: "Unauthorized",
    403: "Forbidden",
    404: "NotFound",
    405: "MethodNotAllowed",
    409: "Conflict",
    410: "Expired",
    413: "RequestEntityTooLarge",
    415: "UnsupportedMediaType",
    422: "Invalid",
    429: "TooManyRequests",
    500: "InternalError",
    503: "ServiceUnavailable",
    504: "Timeout",
  };
  return reasons[code];
}

// --- field errors (k8s.io/apimachinery/pkg/util/validation/field) ---

export type FieldErrorType = "Required value" | "Invalid value" | "Forbidden" | "Too long" | "Unsupported value" | "Duplicate value";

/** A value as Go's `%#v`/`%q` prints it; `{ raw }` is printed verbatim (e.g. `0` for a uint64 zero). */
export type FieldValue = string | number | boolean | null | { raw: string };

export interface FieldError {
  type: FieldErrorType;
  /** The cause's reason when it is not the type's usual one (field.TypeInvalid prints "Invalid value" but is FieldValueTypeInvalid). */
  cause?: string;
  field: string;
  value?: FieldValue;
  detail?: string;
}

const CAUSE_TYPES: Record<FieldErrorType, string> = {
  "Required value": "FieldValueRequired",
  "Invalid value": "FieldValueInvalid",
  Forbidden: "FieldValueForbidden",
  "Too long": "FieldValueTooLong",
  "Unsupported value": "FieldValueNotSupported",
  "Duplicate value": "FieldValueDuplicate",
};

function printValue(value: FieldValue): string {
  if (value === null) return "null";
  if (typeof value === "object") return value.raw;
  return typeof value === "string" ? JSON.stringify(value) : String(value);
}

/** field.Error.ErrorBody(): `Invalid value: "x": detail`, `Required value: detail`, ... */
export function errorBody(e: FieldError): string {
  const withValue = e.type === "Invalid value" || e.type === "Unsupported value" || e.type === "Duplicate value";
  const head = withValue && e.value !== undefined ? `${e.type}: ${printValue(e.value)}` : e.type;
  return e.detail === undefined || e.detail === "" ? head : `${head}: ${e.detail}`;
}

export const required = (field: string, detail?: string): FieldError => ({ type: "Required value", field, ...(detail ? { detail } : {}) });
export const invalidValue = (field: string, value: FieldValue, detail: string): FieldError => ({
  type: "Invalid value",
  field,
  value,
  detail,
});
export const forbidden = (field: string, detail: string): FieldError => ({ type: "Forbidden", field, detail });

/** NewInvalid: 422 with one cause per field error; the message aggregates them like ErrorList.ToAggregate(). */
export function invalid(group: string, kind: string, name: string, errors: readonly FieldError[]): ApiError {
  const messages = [...new Set(errors.map((e) => `${e.field}: ${errorBody(e)}`))];
  const aggregate = messages.length === 1 ? (messages[0] ?? "") : `[${messages.join(", ")}]`;
  const qualified = group === "" ? kind : `${kind}.${group}`;
  return fail(422, `${qualified} "${name}" is invalid: ${aggregate}`, "Invalid", {
    ...(name === "" ? {} : { name }),
    ...(group === "" ? {} : { group }),
    ...(kind === "" ? {} : { kind }),
    causes: errors.map((e) => ({ reason: e.cause ?? CAUSE_TYPES[e.type], message: errorBody(e), field: e.field })),
  });
}
