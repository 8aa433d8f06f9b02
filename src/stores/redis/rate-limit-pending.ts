/**
 * What the Redis rate-limit store keeps per rule and per decision in flight: the scripts and
 * arguments of a rule's group, the decisions waiting for their tick's batch, and how a script's
 * reply becomes a decision.
 */
import type { RateLimitAlgorithm, RateLimitResult } from '../../rate-limit/store.js';
import type { DeadlineTicket, StoreDeadline } from './deadline.js';
import type { RedisScript } from './script.js';

/**
 * Decisions that can share a batch script call: same algorithm and same script arguments (keys of
 * any limiter name). Rules with equal parameters share one group.
 */
export interface Group {
  readonly algorithm: RateLimitAlgorithm;
  readonly single: RedisScript;
  readonly batch: RedisScript;
  readonly adjust: RedisScript;
  readonly block: RedisScript;
  /** The scripts' arguments after the key(s) and cost(s): limit, periodMs, burst, buckets. */
  readonly args: readonly string[];
  /** The rule's `burst`: the `limit` of every result. */
  readonly burst: number;
  /** Decisions waiting for this tick's flush, in the order they were made. */
  pending: Pending[];
}

/** A rule prepared for Redis: its key prefix and its group. */
export interface Compiled {
  /** `<prefix>rl:<name>:{` — the user's key and `}` follow, making the key its own hash tag. */
  readonly keyHead: string;
  readonly group: Group;
}

/** One decision in flight: its key, cost, deadline ticket and promise. */
export class Pending {
  constructor(
    readonly key: string,
    readonly cost: number,
    readonly ticket: DeadlineTicket,
    private readonly resolve: (result: RateLimitResult) => void,
    private readonly reject: (error: unknown) => void,
  ) {}

  /** Settles with the script's reply for this key (a result, or a Redis error message). */
  reply(reply: unknown, group: Group, deadline: StoreDeadline): void {
    if (!this.ticket.release()) return; // late: the caller already has its StoreUnavailableError
    try {
      this.resolve(resultOf(reply, group.burst, deadline));
    } catch (error) {
      this.reject(error);
    }
  }

  /** Fails with the call's error (unless the deadline already failed it). */
  fail(error: unknown, deadline: StoreDeadline): void {
    if (this.ticket.release()) this.reject(deadline.failure(error));
  }
}

/**
 * A script reply {remaining, retryAfterMs, resetMs} as a result (retryAfterMs 0 = allowed), with
 * `limit` the rule's burst. Throws the store failure of any other reply: a string is the Redis error
 * of that decision (a batch's `pcall`), anything else a reply out of shape.
 */
export function resultOf(reply: unknown, limit: number, deadline: StoreDeadline): RateLimitResult {
  if (Array.isArray(reply) && reply.length === 3) {
    const [remaining, retryAfterMs, resetMs] = reply as unknown[];
    if (typeof remaining === 'number' && typeof retryAfterMs === 'number' && typeof resetMs === 'number') {
      return { allowed: retryAfterMs === 0, remaining, retryAfterMs, resetMs, limit };
    }
  }
  throw deadline.failure(
    typeof reply === 'string'
      ? new Error(reply)
      : new TypeError(`unexpected rate-limit script reply: ${JSON.stringify(reply)}`),
  );
}
