import { defineErrorGuard, RejectedError } from '../core/errors.js';

/**
 * Why a rate limiter refused (`RateLimitedError.reason`, and the `reason` of a rate-limit policy's
 * `onRejected` events): `rate-limited`, no quota for the cost now (or not within the wait limit);
 * `queue-full`, `maxQueue` callers already wait for the key.
 */
export type RateLimitRejection = 'rate-limited' | 'queue-full';

/**
 * A rate limiter refused: the key has no quota left for this cost now. Kind `rate_limited` (HTTP
 * 429); `retryAfterMs` says when the same cost could be allowed if nothing else takes quota first.
 * Thrown by `limiter.policy(key)` and by `limiter.wait(...)` when the wait would exceed
 * `maxWaitMs` or `maxQueue` callers already wait for the key (`reason` says which); `limiter.take()`
 * returns a refusal as a result instead.
 *
 * The message never contains the key (it may be an IP address or a user id, and problem+json
 * bodies show the message to clients); read `key` instead.
 */
export class RateLimitedError extends RejectedError {
  /** The key that was refused. */
  readonly key: string;
  /** The capacity of the limit that refused (the rule's `burst`). */
  readonly limit: number;
  /** Whole units still available (fewer than the cost asked for). */
  readonly remaining: number;
  /** Why: no quota (`rate-limited`) or too many waiters for the key (`queue-full`). */
  readonly reason: RateLimitRejection;
  declare readonly retryAfterMs: number;

  constructor(
    key: string,
    retryAfterMs: number,
    options: {
      limit: number;
      remaining: number;
      message?: string | undefined;
      cause?: unknown;
      /** @default 'rate-limited' */
      reason?: RateLimitRejection | undefined;
    },
  ) {
    super(options.message ?? `rate limit exceeded; retry in ${retryAfterMs} ms`, {
      code: 'ERR_RATE_LIMITED',
      kind: 'rate_limited',
      retryAfterMs,
      cause: options.cause,
      expose: true,
    });
    this.key = key;
    this.limit = options.limit;
    this.remaining = options.remaining;
    this.reason = options.reason ?? 'rate-limited';
  }
}

/** True for a {@link RateLimitedError} from any copy of bulwark. */
export const isRateLimitedError: (error: unknown) => error is RateLimitedError =
  defineErrorGuard<RateLimitedError>('ERR_RATE_LIMITED');
