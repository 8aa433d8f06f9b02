/**
 * The HTTP answer to an overload refusal (load shed, bulkhead full, a rate-limit store down under
 * `fail-closed`): problem+json with a jittered `Retry-After`, so the clients refused together do
 * not all come back in the same second.
 */
import { toProblem } from '../core/http-status.js';
import { isTransientKind } from '../core/kind.js';
import { cryptoRandom, type Random } from '../core/random.js';
import { func, type ReadOptions, type Schema, withDefault } from '../core/read-options.js';
import { nonNegative } from '../core/validate.js';
import { type ProblemReply, problemAnswer } from './problem-response.js';

/** How refusals are answered. */
export interface OverloadReplyOptions {
  /**
   * The base `Retry-After` when the refusal does not carry its own `retryAfterMs` (a bulkhead's
   * does not; a load shedder's does).
   * @default 1_000
   */
  readonly retryAfterMs?: number | undefined;
  /**
   * Spread added on top of the base, as a fraction of it: `Retry-After` is a whole number of seconds
   * drawn uniformly from `⌈base⌉` to `⌈base⌉ + ⌈base × jitter⌉` (never less than the base, at least
   * 1). 0 turns jitter off.
   * @default 0.5
   */
  readonly jitter?: number | undefined;
  /** Randomness for the jitter. @default crypto-backed */
  readonly random?: Random | undefined;
}

const nonNegativeFinite = (name: string, value: unknown): number => nonNegative(name, value);

/**
 * The declared {@link OverloadReplyOptions}: spread into the schema of an adapter that answers
 * overload refusals, then hand what was read to {@link overloadReplier}.
 */
export const overloadReplyFields = {
  retryAfterMs: withDefault(1_000, nonNegativeFinite),
  jitter: withDefault(0.5, nonNegativeFinite),
  random: withDefault(cryptoRandom, func<Random>()),
} satisfies Schema<OverloadReplyOptions>;

/** {@link OverloadReplyOptions} once read: every field present and valid. */
export type OverloadReplySettings = ReadOptions<typeof overloadReplyFields>;

/** Answers refusals with a jittered `Retry-After`. */
export interface OverloadReplier {
  /**
   * The answer to `error`: its status and problem body (`instance` when given) and, when its kind
   * is transient, a `Retry-After` of the error's own wait (else `retryAfterMs`) plus jitter, in
   * whole seconds from 1 to 86 400, the body's `retryAfterMs` agreeing. Never throws.
   */
  reply(error: unknown, instance: string | undefined): ProblemReply;
}

/** The replier for `settings` (read with {@link overloadReplyFields}, so already valid). */
export function overloadReplier({ retryAfterMs, jitter, random }: OverloadReplySettings): OverloadReplier {
  return {
    reply(error, instance) {
      const body = toProblem(error, { instance });
      if (!isTransientKind(body.kind)) return problemAnswer(body, undefined, undefined);
      const base = body.retryAfterMs ?? retryAfterMs; // toProblem clamps the error's own wait to 24 h
      const spread = Math.ceil((base * jitter) / 1000);
      let extra = Math.floor(random() * (spread + 1));
      // Stryker disable next-line EqualityOperator: (extra > 0) differs only at extra 0, which it resets to 0
      if (!(extra >= 0 && extra <= spread)) extra = 0; // a broken random source means no jitter
      return problemAnswer(body, undefined, (Math.ceil(base / 1000) + extra) * 1000);
    },
  };
}
