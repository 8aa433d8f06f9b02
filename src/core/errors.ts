/**
 * bulwark's errors. Two axes: *what failed* is a {@link Kind} (see `classify`); *what the library
 * refused* is a {@link RejectedError}. Every error has a stable `code`, a `kind`, and
 * `retryAfterMs` where retrying later makes sense. Guards (`isXxxError`) check a brand and the code,
 * not `instanceof`, so they work across duplicate copies of the package.
 */
import type { Kind } from './kind.js';

const resilienceBrand = Symbol.for('bulwark.ResilienceError');
const rejectedBrand = Symbol.for('bulwark.RejectedError');

/** Options shared by every bulwark error. */
export interface ResilienceErrorOptions {
  /** Stable machine-readable code, e.g. `ERR_TIMEOUT`. */
  readonly code: string;
  /** What kind of failure this is. */
  readonly kind: Kind;
  /** How long to wait before trying again, when that is known. */
  readonly retryAfterMs?: number | undefined;
  /** The underlying error. */
  readonly cause?: unknown;
  /**
   * The message is safe to show to clients: `toProblem` (and so `problemResponse`) puts it in the
   * problem's `detail`. Leave it off for any message that quotes an upstream URL, a driver error, a
   * key or user input: such errors get a generic detail for their kind.
   * @default false
   */
  readonly expose?: boolean | undefined;
}

/** The base of every error bulwark creates. */
export class ResilienceError extends Error {
  /** Stable machine-readable code, e.g. `ERR_TIMEOUT`. */
  readonly code: string;
  /** What kind of failure this is. */
  readonly kind: Kind;
  /** How long to wait before trying again, when known. */
  readonly retryAfterMs?: number | undefined;
  /**
   * Whether the message may be shown to clients (see {@link ResilienceErrorOptions.expose}). True
   * for bulwark's refusals whose messages bulwark writes (circuit open, bulkhead full, rate limited,
   * load shed, timeout, ...); false for `StoreUnavailableError` (it quotes the driver) and for
   * errors you create unless you pass `expose: true`.
   */
  readonly expose: boolean;
  declare readonly [resilienceBrand]: true;

  constructor(message: string, options: ResilienceErrorOptions) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = new.target.name;
    this.code = options.code;
    this.kind = options.kind;
    this.expose = options.expose === true;
    this.retryAfterMs = options.retryAfterMs;
  }
}
Object.defineProperty(ResilienceError.prototype, resilienceBrand, { value: true });

/** Something bulwark refused to do (open circuit, full bulkhead, deadline passed, ...). */
export class RejectedError extends ResilienceError {
  declare readonly [rejectedBrand]: true;
}
Object.defineProperty(RejectedError.prototype, rejectedBrand, { value: true });

/** True for any error created by bulwark, from any copy of the package. */
export function isResilienceError(error: unknown): error is ResilienceError {
  return (
    typeof error === 'object' &&
    error !== null &&
    (error as Record<symbol, unknown>)[resilienceBrand] === true
  );
}

/** True for any refusal by bulwark ({@link RejectedError} and its subclasses). */
export function isRejectedError(error: unknown): error is RejectedError {
  return (
    typeof error === 'object' && error !== null && (error as Record<symbol, unknown>)[rejectedBrand] === true
  );
}

/** Builds a cross-copy guard for one error code. */
function guard<E extends ResilienceError>(code: string): (error: unknown) => error is E {
  return (error: unknown): error is E => isResilienceError(error) && error.code === code;
}

/**
 * An operation did not finish within its time limit or deadline. Kind `timeout`. Its message is
 * bulwark's (`expose: true`), so it reaches clients as the problem's `detail`; a custom `message`
 * does too.
 */
export class TimeoutError extends RejectedError {
  /** The limit that passed, in milliseconds. */
  readonly timeoutMs: number;
  constructor(timeoutMs: number, options: { cause?: unknown; message?: string | undefined } = {}) {
    super(options.message ?? `operation timed out after ${timeoutMs} ms`, {
      code: 'ERR_TIMEOUT',
      kind: 'timeout',
      cause: options.cause,
      expose: true,
    });
    this.timeoutMs = timeoutMs;
  }
}
/** True for a {@link TimeoutError} from any copy of bulwark. */
export const isTimeoutError = guard<TimeoutError>('ERR_TIMEOUT');

/**
 * A backing store (Redis, PostgreSQL) failed or missed its own deadline. Kind `unavailable`.
 * Never disguised as a limit hit or a cache miss. Not exposed: its message may quote the driver's
 * (host names, addresses), so clients get a generic detail.
 */
export class StoreUnavailableError extends RejectedError {
  constructor(message: string, cause?: unknown) {
    super(message, { code: 'ERR_STORE_UNAVAILABLE', kind: 'unavailable', cause });
  }
}
/** True for a {@link StoreUnavailableError} from any copy of bulwark. */
export const isStoreUnavailableError = guard<StoreUnavailableError>('ERR_STORE_UNAVAILABLE');

export { guard as defineErrorGuard };
