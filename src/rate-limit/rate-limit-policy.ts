import { canAbort } from '../core/abort.js';
import type { Clock } from '../core/clock.js';
import type { Context } from '../core/context.js';
import { GatedPolicy } from '../core/gate.js';
import { type Admission, Refusal, type Ticket } from '../core/gate-types.js';
import type { PolicyOptions } from '../core/policy-events.js';
import { isRateLimitedError, RateLimitedError, type RateLimitRejection } from './errors.js';
import type { RateLimitWaitOptions } from './options.js';
import type { RateLimitResult } from './store.js';

/** What a rate-limit policy asks: one limiter, or limiters combined by `rateLimiter.all()`. */
export interface Quota {
  take(key: string, cost: number): Promise<RateLimitResult>;
  wait(key: string, options?: RateLimitWaitOptions): Promise<RateLimitResult>;
}

/**
 * Options of `limiter.policy(key, options)`. Its `name` (the `policy` of its events and telemetry)
 * defaults to the limiter's `name` when the limiter has one, else to `'rate-limit'`.
 */
export interface RateLimitPolicyOptions extends PolicyOptions<RateLimitRejection> {
  /** Units each call takes. @default 1 */
  readonly cost?: number | undefined;
  /** Wait for quota (like `limiter.wait`) instead of failing at once. @default false */
  readonly wait?: boolean | undefined;
  /**
   * With `wait`, the longest to wait; the call's deadline (from an outer timeout or
   * `execute(op, { deadline })`) shortens it.
   * @default the limiter's `wait` default
   */
  readonly maxWaitMs?: number | undefined;
}

/** `limiter.policy(key)`: admission by a rate limiter (or limiters combined) before each call. */
export class RateLimitPolicy extends GatedPolicy<RateLimitRejection> {
  /** Use `limiter.policy(key, options)`. */
  constructor(
    private readonly limiter: Quota,
    private readonly clock: Clock,
    private readonly key: string,
    private readonly cost: number,
    private readonly waits: boolean,
    private readonly maxWaitMs: number | undefined,
    options: PolicyOptions<RateLimitRejection>,
  ) {
    super('rate-limit');
    this.configure(options, clock);
  }

  /** Takes quota (waiting for it with `wait`), or refuses with a {@link RateLimitedError}. */
  protected override admit(context: Context): Admission<RateLimitRejection> {
    if (this.waits) return this.waitForQuota(context);
    return this.limiter.take(this.key, this.cost).then(this.decide);
  }

  /** Bound once: deciding on a take allocates no closure per call. */
  private readonly decide = (result: RateLimitResult): Ticket | Refusal<RateLimitRejection> => {
    if (result.allowed) return 0;
    const error = new RateLimitedError(this.key, result.retryAfterMs, {
      limit: result.limit,
      remaining: result.remaining,
    });
    return new Refusal('rate-limited', error);
  };

  private async waitForQuota(context: Context): Promise<Ticket | Refusal<RateLimitRejection>> {
    let maxWaitMs = this.maxWaitMs;
    if (context.deadline !== undefined) {
      const left = Math.max(0, context.deadline - this.clock.now());
      // Stryker disable next-line EqualityOperator: (<=) equal values: either is the same limit
      if (maxWaitMs === undefined || left < maxWaitMs) maxWaitMs = left;
    }
    const signal = context.signal;
    try {
      await this.limiter.wait(this.key, {
        cost: this.cost,
        ...(canAbort(signal) ? { signal } : {}),
        // Stryker disable next-line ConditionalExpression: (false) wait() reads maxWaitMs: undefined as omitted
        ...(maxWaitMs === undefined ? {} : { maxWaitMs }),
      });
    } catch (error) {
      // A refusal from another copy of bulwark may predate `reason`.
      if (isRateLimitedError(error)) return new Refusal(error.reason ?? 'rate-limited', error);
      throw error;
    }
    return 0;
  }
}
