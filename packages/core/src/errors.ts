/**
 * Typed errors with a stable `code`. Callers match on the class or on `code`, never on message text.
 * Messages are prefixed `[ipamkit] [<component>]`.
 */
export type IpamErrorCode =
  | "INVALID_ADDRESS"
  | "INVALID_RANGE"
  | "INVALID_KEY"
  | "INVALID_REQUEST"
  | "RANGE_EXHAUSTED"
  | "ADDRESS_UNAVAILABLE"
  | "POOL_CORRUPT"
  | "STORE_CONFLICT"
  | "STORE_UNAVAILABLE"
  | "STORE_ACCESS_DENIED"
  | "STORE_REJECTED"
  | "STORE_CORRUPT";

export interface IpamErrorOptions {
  cause?: unknown;
  /** Component named in the message prefix; defaults to "core". */
  component?: string;
}

/** Marks ipamkit errors of every copy of this module (a bundle, a second install in node_modules). */
const BRAND = Symbol.for("@ipamkit/core/IpamError");

export class IpamError extends Error {
  /**
   * `instanceof` across copies of this module: the CNI binary loads a store from a
   * separate bundle with its own copy of core, and its StoreConflictError must still be retried
   * and mapped like ours. Same prototype chain, or the brand plus the class's own code.
   */
  static override [Symbol.hasInstance](value: unknown): boolean {
    if (Function.prototype[Symbol.hasInstance].call(this, value)) return true;
    if (typeof value !== "object" || value === null || (value as { [BRAND]?: unknown })[BRAND] !== true) return false;
    if (this === IpamError) return true;
    const code = CODE_OF_CLASS.get(this);
    return code !== undefined && (value as { code?: unknown }).code === code;
  }

  readonly [BRAND] = true;
  readonly code: IpamErrorCode;
  /** True when the same call may succeed if it is retried later (CNI code 11). */
  readonly retryable: boolean;

  constructor(code: IpamErrorCode, message: string, options: IpamErrorOptions & { retryable?: boolean } = {}) {
    super(`[ipamkit] [${options.component ?? "core"}] ${message}`, options.cause === undefined ? {} : { cause: options.cause });
    this.name = new.target.name;
    this.code = code;
    this.retryable = options.retryable ?? false;
  }
}

/** An address that cannot be parsed, or of the wrong family. */
export class InvalidAddressError extends IpamError {
  constructor(
    readonly value: string,
    reason: string,
  ) {
    super("INVALID_ADDRESS", `invalid IP address ${JSON.stringify(value)}: ${reason}`);
  }
}

/** A range configuration that is rejected; names the offending key and value. */
export class InvalidRangeError extends IpamError {
  constructor(
    readonly key: string,
    readonly value: string,
    reason: string,
  ) {
    super("INVALID_RANGE", `invalid ${key} ${JSON.stringify(value)}: ${reason}`);
  }
}

/** An attachment key (containerID + ifName) that is empty or malformed. */
export class InvalidKeyError extends IpamError {
  constructor(value: string, reason: string) {
    super("INVALID_KEY", `invalid attachment key ${JSON.stringify(value)}: ${reason}`);
  }
}

/** A request that cannot be served as asked (e.g. a static IP outside every range). */
export class InvalidRequestError extends IpamError {
  constructor(message: string) {
    super("INVALID_REQUEST", message);
  }
}

/** No free address is left in the range. */
export class RangeExhaustedError extends IpamError {
  constructor(readonly range: string) {
    super("RANGE_EXHAUSTED", `no free address left in range ${range}`);
  }
}

/** A specifically requested address is held by another attachment, excluded, or not usable. */
export class AddressUnavailableError extends IpamError {
  constructor(
    readonly address: string,
    reason: string,
  ) {
    super("ADDRESS_UNAVAILABLE", `address ${address} is not available: ${reason}`);
  }
}

/** Stored pool state that violates an invariant (two reservations at one offset, one key twice…). */
export class PoolCorruptError extends IpamError {
  constructor(
    readonly pool: string,
    reason: string,
  ) {
    super("POOL_CORRUPT", `pool ${pool} is corrupt: ${reason}`);
  }
}

/** A compare-and-swap lost: the stored version changed since it was read. Retryable. */
export class StoreConflictError extends IpamError {
  constructor(
    readonly object: string,
    options: IpamErrorOptions & { attempts?: number } = {},
  ) {
    super(
      "STORE_CONFLICT",
      options.attempts === undefined
        ? `conflict writing ${object}: it changed since it was read`
        : `conflict writing ${object}: still conflicting after ${options.attempts} attempts`,
      { ...options, retryable: true },
    );
  }
}

/** The store cannot be reached or timed out. Retryable. */
export class StoreUnavailableError extends IpamError {
  /**
   * A write that was (or may have been) sent, and whose answer never came: it may have been
   * applied. Core finds out by reading again (withConflictRetry); set by the stores.
   */
  readonly outcomeUnknown: boolean;

  constructor(message: string, options: IpamErrorOptions & { outcomeUnknown?: boolean } = {}) {
    const { outcomeUnknown, ...rest } = options;
    super("STORE_UNAVAILABLE", message, { ...rest, retryable: true });
    this.outcomeUnknown = outcomeUnknown === true;
  }
}

/** A StoreUnavailableError of a write that may have been applied (any copy of this module). */
export function isOutcomeUnknown(error: unknown): error is StoreUnavailableError {
  return error instanceof StoreUnavailableError && (error as { outcomeUnknown?: unknown }).outcomeUnknown === true;
}

/** The store refused our credentials or permissions. Not retryable: the configuration must change. */
export class StoreAccessDeniedError extends IpamError {
  constructor(message: string, options: IpamErrorOptions = {}) {
    super("STORE_ACCESS_DENIED", message, options);
  }
}

/**
 * The store refused a write that it will keep refusing, so retrying is pointless: the object would
 * exceed the store's size limit, or would become unreadable to a reader the store must stay
 * compatible with (e.g. a Whereabouts offset key at or above 2^63). Nothing was written.
 */
export class StoreRejectedError extends IpamError {
  constructor(
    readonly object: string,
    reason: string,
    options: IpamErrorOptions = {},
  ) {
    super("STORE_REJECTED", `write of ${object} refused: ${reason}`, options);
  }
}

/** A stored object that cannot be decoded. Never reset silently. */
export class StoreCorruptError extends IpamError {
  constructor(
    readonly object: string,
    reason: string,
    options: IpamErrorOptions = {},
  ) {
    super("STORE_CORRUPT", `stored object ${object} is corrupt: ${reason}`, options);
  }
}

export function isIpamError(error: unknown): error is IpamError {
  return error instanceof IpamError;
}

/** The code each class stands for (one class per code), for `instanceof` across module copies. */
const CODE_OF_CLASS = new Map<unknown, IpamErrorCode>([
  [InvalidAddressError, "INVALID_ADDRESS"],
  [InvalidRangeError, "INVALID_RANGE"],
  [InvalidKeyError, "INVALID_KEY"],
  [InvalidRequestError, "INVALID_REQUEST"],
  [RangeExhaustedError, "RANGE_EXHAUSTED"],
  [AddressUnavailableError, "ADDRESS_UNAVAILABLE"],
  [PoolCorruptError, "POOL_CORRUPT"],
  [StoreConflictError, "STORE_CONFLICT"],
  [StoreUnavailableError, "STORE_UNAVAILABLE"],
  [StoreAccessDeniedError, "STORE_ACCESS_DENIED"],
  [StoreRejectedError, "STORE_REJECTED"],
  [StoreCorruptError, "STORE_CORRUPT"],
]);
