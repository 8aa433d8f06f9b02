/**
 * What a waiter of `limiter.wait()` is told about its turn: when it can come, estimated from its
 * queue position and the rule's rate ({@link turnAt}), and the error it gives up with
 * ({@link waitRefusal}). Arithmetic only: the queue itself is wait-queue.ts.
 */
import { RateLimitedError } from './errors.js';
import type { RateLimitRule } from './store.js';

/**
 * The earliest time (limiter clock) a waiter can be served, from its queue position: `behind`
 * units queued after the head up to and including its own cost, at the rule's rate; under several
 * rules (`rateLimiter.all()`), the latest of their turns, since every one must admit it.
 *
 * With `readyAt`, the time the head's own units come back (known from its last refusal), the token
 * bucket and GCRA need `behind` units more at `periodMs / limit` each; the sliding window admits at
 * most `limit` units from then on in any window of `periodMs`, so the head's and these units take
 * `ceil(units / limit) − 1` further windows. Without it (the head's first take is still on its way
 * to the store) only the rate bounds it: a full bucket admits `burst` at once.
 *
 * A lower bound up to the store's rounding of the head's `retryAfterMs` to whole milliseconds:
 * other takers only make the real turn later.
 */
export function turnAt(
  rules: readonly RateLimitRule[],
  now: number,
  readyAt: number | undefined,
  headCost: number,
  behind: number,
): number {
  let turn = -Infinity;
  for (const rule of rules) turn = Math.max(turn, ruleTurnAt(rule, now, readyAt, headCost, behind));
  return turn;
}

function ruleTurnAt(
  rule: RateLimitRule,
  now: number,
  readyAt: number | undefined,
  headCost: number,
  behind: number,
): number {
  const { limit, periodMs, burst } = rule;
  if (rule.algorithm === 'sliding-window') {
    const windows = Math.ceil((headCost + behind) / limit) - 1;
    return (readyAt ?? now) + windows * periodMs;
  }
  const units = readyAt === undefined ? headCost + behind - burst : behind;
  return (readyAt ?? now) + (Math.max(0, units) * periodMs) / limit;
}

/**
 * The longest an uncontended key can need to admit a take (`maxWaitMs`'s default): a full refill,
 * `burst × periodMs / limit` (token bucket, GCRA), or `periodMs + periodMs / buckets` (sliding
 * window, whose units come back up to one sub-window late); under several rules, the longest.
 */
export function longestWaitMs(rules: readonly RateLimitRule[]): number {
  let longest = 0;
  for (const { limit, periodMs, burst, buckets, algorithm } of rules) {
    longest = Math.max(
      longest,
      algorithm === 'sliding-window' ? periodMs + periodMs / buckets : (burst * periodMs) / limit,
    );
  }
  return longest;
}

/**
 * Why a waiter gives up: refused past its limit, its turn estimated past it, its deadline passed, or
 * `maxQueue` callers already waiting for the key.
 */
export type WaitRefusalReason = 'refused' | 'turn' | 'deadline' | 'queue-full';

const messages: Readonly<Record<WaitRefusalReason, (retryAfterMs: number) => string>> = {
  refused: (ms) => `rate limit exceeded: quota for this cost comes back in ${ms} ms, after the wait limit`,
  turn: (ms) => `rate limit exceeded: this waiter's turn comes in ${ms} ms, after the wait limit`,
  deadline: (ms) =>
    `rate limit exceeded: no quota came back within the wait limit; this waiter's turn comes in ${ms} ms`,
  'queue-full': (ms) =>
    `rate limit exceeded: the wait queue of this key is full (maxQueue); this waiter's turn would come in ${ms} ms`,
};

/**
 * The error of a waiter of `key` that gives up: quota for its cost is `waitMs` away (at least 1 ms,
 * since it could not be served now), `remaining` as the store last said, `limit` the burst its
 * `remaining` counts down from.
 */
export function waitRefusal(
  limit: number,
  key: string,
  waitMs: number,
  remaining: number,
  why: WaitRefusalReason,
): RateLimitedError {
  const retryAfterMs = Math.max(1, Math.ceil(waitMs));
  return new RateLimitedError(key, retryAfterMs, {
    limit,
    remaining,
    message: messages[why](retryAfterMs),
    reason: why === 'queue-full' ? 'queue-full' : 'rate-limited',
  });
}
