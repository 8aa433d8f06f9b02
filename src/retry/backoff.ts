/**
 * Backoff strategies: how long to wait before retry `n` (n = 1 for the first retry). Each is a
 * stateless function, safe to share between concurrent calls and policies, and bounded: it never
 * returns a negative number, NaN, or more than its `maxMs`.
 */
import { cryptoRandom, type Random } from '../core/random.js';
import {
  atLeast,
  fraction,
  func,
  nonNegativeNumber,
  type ReadOptions,
  readOptions,
  type Schema,
  withDefault,
} from '../core/read-options.js';
import { nonNegative } from '../core/validate.js';

/** Milliseconds to wait before retry `retry` (1 for the first retry). */
export type Backoff = (retry: number) => number;

/** Options of the exponential families. */
export interface ExponentialOptions {
  /** The first delay (the median first delay for `decorrelatedJitter`). @default 100 */
  readonly baseMs?: number | undefined;
  /** The ceiling of every delay. @default 30_000 */
  readonly maxMs?: number | undefined;
}

/** Options of jittered strategies. */
export interface JitterOptions extends ExponentialOptions {
  /** Source of [0, 1) randomness. @default crypto-backed */
  readonly random?: Random | undefined;
}

const boundsSchema = {
  baseMs: withDefault(100, nonNegativeNumber),
  maxMs: withDefault(30_000, nonNegativeNumber),
};
const jitterSchema = { ...boundsSchema, random: withDefault<Random>(cryptoRandom, func<Random>()) };
const exponentialSchema = {
  ...boundsSchema,
  factor: withDefault(2, atLeast(1)),
} satisfies Schema<ExponentialOptions & { readonly factor?: number | undefined }>;
const exponentialJitterSchema = {
  ...jitterSchema,
  jitter: withDefault(0.3, fraction),
} satisfies Schema<JitterOptions & { readonly jitter?: number | undefined }>;
const plainJitterSchema = jitterSchema satisfies Schema<JitterOptions>;

/** Reads a strategy's options and checks that `maxMs` is at least `baseMs`. */
function readBounded<S extends typeof boundsSchema>(
  name: string,
  options: object | undefined,
  schema: S,
): ReadOptions<S> {
  const o = readOptions(name, options, schema);
  if (o.maxMs < o.baseMs)
    throw new TypeError(`expected "maxMs" (${o.maxMs}) to be at least "baseMs" (${o.baseMs})`);
  return o;
}

/** The exponent for retry n (n < 1 is treated as 1). */
function step(retry: number): number {
  // Stryker disable next-line EqualityOperator: at retry 1 both branches give 0
  return retry > 1 ? retry - 1 : 0;
}

/** `min(maxMs, baseMs · factor^(n−1))`, safe from 0 · Infinity = NaN for huge n. */
function grow(baseMs: number, factor: number, retry: number, maxMs: number): number {
  if (baseMs === 0) return 0;
  return Math.min(maxMs, baseMs * factor ** step(retry));
}

/**
 * The same delay before every retry.
 * @example retry({ backoff: constant(250) })
 */
export function constant(ms: number): Backoff {
  nonNegative('ms', ms);
  return () => ms;
}

/**
 * `baseMs`, then `baseMs + stepMs`, `baseMs + 2·stepMs`, ... capped at `maxMs`.
 * @param stepMs @default baseMs
 * @param maxMs @default Infinity
 * @example retry({ backoff: linear(100, 50, 1_000) })
 */
export function linear(baseMs: number, stepMs: number = baseMs, maxMs = Infinity): Backoff {
  nonNegative('baseMs', baseMs);
  nonNegative('stepMs', stepMs);
  nonNegative('maxMs', maxMs, true);
  return (retry) => Math.min(maxMs, baseMs + stepMs * step(retry));
}

/**
 * `baseMs · factor^(n−1)` capped at `maxMs`, with no jitter. Prefer {@link exponentialJitter} when
 * many clients retry the same dependency: identical delays synchronise them into waves.
 * @example retry({ backoff: exponential({ baseMs: 100, maxMs: 5_000 }) })
 */
export function exponential(
  options?: ExponentialOptions & { readonly factor?: number | undefined },
): Backoff {
  const { baseMs, maxMs, factor } = readBounded('exponential options', options, exponentialSchema);
  return (retry) => grow(baseMs, factor, retry, maxMs);
}

/**
 * The default: exponential (`baseMs · 2^(n−1)`, capped at `maxMs`) spread by ±`jitter` (30 %)
 * crypto-random, then capped at `maxMs` again. Delays fall in
 * `[(1 − jitter)·d, min(maxMs, (1 + jitter)·d)]` where `d = min(maxMs, baseMs · 2^(n−1))`.
 * @example retry({ backoff: exponentialJitter({ baseMs: 100, maxMs: 2_000 }) })
 */
export function exponentialJitter(
  options?: JitterOptions & { readonly jitter?: number | undefined },
): Backoff {
  const { baseMs, maxMs, jitter, random } = readBounded(
    'exponentialJitter options',
    options,
    exponentialJitterSchema,
  );
  return (retry) => {
    const d = grow(baseMs, 2, retry, maxMs);
    return Math.min(maxMs, d * (1 + jitter * (2 * random() - 1)));
  };
}

/**
 * AWS "full jitter": uniform in `[0, min(maxMs, baseMs · 2^(n−1)))` (AWS writes the exponent as the
 * attempt counted from 0). Spreads retries the most; some delays are near zero.
 * @example retry({ backoff: fullJitter({ baseMs: 100, maxMs: 10_000 }) })
 */
export function fullJitter(options?: JitterOptions): Backoff {
  const { baseMs, maxMs, random } = readBounded('fullJitter options', options, plainJitterSchema);
  return (retry) => random() * grow(baseMs, 2, retry, maxMs);
}

// Polly's "decorrelated jitter v2" curve: f(t) = 2^t · tanh(√(4t)); scaled so that the median
// first delay is about baseMs.
const P_FACTOR = 4;
const RP_SCALING = 1 / 1.4;
function curve(t: number): number {
  // Stryker disable next-line EqualityOperator: at t = 0 the curve is 2^0 · tanh(0) = 0, as the guard answers
  return t <= 0 ? 0 : 2 ** t * Math.tanh(Math.sqrt(P_FACTOR * t));
}

/**
 * Decorrelated jitter, stateless: delay n = `baseMs · (f(t) − f(t − 1)) / 1.4` with
 * `t = n − 1 + random()` on Polly's v2 curve `f(t) = 2^t·tanh(√(4t))`. Growth is exponential and
 * smooth, without the clumping of ±jitter, and without per-call state (so one instance can be
 * shared). Capped at `maxMs`.
 * @example retry({ backoff: decorrelatedJitter({ baseMs: 200, maxMs: 10_000 }) })
 */
export function decorrelatedJitter(options?: JitterOptions): Backoff {
  const { baseMs, maxMs, random } = readBounded('decorrelatedJitter options', options, plainJitterSchema);
  return (retry) => {
    const t = step(retry) + random();
    const value = (curve(t) - curve(t - 1)) * RP_SCALING * baseMs;
    // Huge t overflows to Infinity − Infinity = NaN: both mean "past the cap" (Math.min keeps NaN).
    // Stryker disable next-line EqualityOperator: when value equals maxMs both branches give the same number
    // biome-ignore lint/complexity/useMathMinMax: the ternary maps NaN to maxMs
    return value < maxMs ? value : maxMs;
  };
}
