import { canAbort } from '../core/abort.js';
import type { Clock } from '../core/clock.js';
import type { Context } from '../core/context.js';
import { failure, type Outcome } from '../core/outcome.js';
import { BasePolicy, isThenable, runStep, type Step } from '../core/policy.js';
import { RateLimitedError } from './errors.js';
import type { RateLimiter } from './rate-limiter.js';
import type { RateLimitResult } from './store.js';

/** Options of `limiter.policy(key, options)`. */
export interface RateLimitPolicyOptions {
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

/** `limiter.policy(key)`: admission by a rate limiter before each call. */
export class RateLimitPolicy extends BasePolicy {
  /** Use `limiter.policy(key, options)`. */
  constructor(
    private readonly limiter: RateLimiter,
    private readonly clock: Clock,
    private readonly key: string,
    private readonly cost: number,
    private readonly waits: boolean,
    private readonly maxWaitMs: number | undefined,
  ) {
    super();
  }

  [runStep]<T>(next: Step<T>, context: Context): Promise<Outcome<T>> {
    if (this.waits) return this.waitThenRun(next, context);
    let decision: RateLimitResult | Promise<RateLimitResult>;
    try {
      decision = this.limiter.take(this.key, this.cost);
    } catch (error) {
      return Promise.resolve(failure(error));
    }
    if (isThenable<RateLimitResult>(decision)) {
      return decision.then((result) => this.admit(result, next, context), failure);
    }
    return this.admit(decision, next, context);
  }

  private admit<T>(result: RateLimitResult, next: Step<T>, context: Context): Promise<Outcome<T>> {
    if (result.allowed) return next(context);
    return Promise.resolve(
      failure(
        new RateLimitedError(this.key, result.retryAfterMs, {
          limit: result.limit,
          remaining: result.remaining,
        }),
      ),
    );
  }

  private async waitThenRun<T>(next: Step<T>, context: Context): Promise<Outcome<T>> {
    let maxWaitMs = this.maxWaitMs;
    if (context.deadline !== undefined) {
      const left = Math.max(0, context.deadline - this.clock.now());
      if (maxWaitMs === undefined || left < maxWaitMs) maxWaitMs = left;
    }
    const signal = context.signal;
    try {
      await this.limiter.wait(this.key, {
        cost: this.cost,
        ...(canAbort(signal) ? { signal } : {}),
        ...(maxWaitMs === undefined ? {} : { maxWaitMs }),
      });
    } catch (error) {
      return failure(error);
    }
    return next(context);
  }
}
