/**
 * Backoff strategies: how long to wait before retry `n` (n = 1 for the first retry). Each is a
 * stateless function, safe to share between concurrent calls and policies, and bounded: it never
 * returns a negative number, NaN, or more than its `maxMs` (`delays`: its largest entry).
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
import { nonNegative, show } from '../core/validate.js';

/**
 * What a failed attempt gave: the `error` it threw (or rejected with), or the `result` it resolved
 * with that `handleResult` refused. The key present tells them apart (`'result' in failure`), since
 * an error may be `undefined`, and so may a refused value.
 */
export type AttemptFailure =
  | {
      /** The attempt's error. */
      readonly error: unknown;
      readonly result?: undefined;
    }
  | {
      /** The value the attempt resolved with, which `handleResult` refused. */
      readonly result: unknown;
      readonly error?: undefined;
    };

/** What a retry policy tells its backoff about the attempt that just failed. */
export type BackoffContext = AttemptFailure & {
  /** Milliseconds since the call's first attempt began, on the policy's clock. */
  readonly elapsedMs: number;
};

/**
 * Milliseconds to wait before retry `retry` (1 for the first retry). Every factory here makes one;
 * `retry`, `optimisticUpdate`, `outboxRelay` and `smartResilience` take one. A retry policy also
 * tells its backoff about the failed attempt: see {@link RetryBackoff}.
 */
export type Backoff = (retry: number) => number;

/**
 * What `retry({ backoff })` takes: a backoff that may also read the failed attempt (`context`: its
 * error or refused result, and the time since the first attempt began). Every {@link Backoff} is
 * one (it ignores the context). NaN or a negative delay means no wait; `Infinity` or a non-number
 * fails the call with a `TypeError`.
 *
 * @example
 * // Wait longer after a 429 than after any other failure.
 * const backoff: RetryBackoff = (n, { error }) => ((error as { status?: number })?.status === 429 ? 5_000 : 100 * n);
 */
export type RetryBackoff = (retry: number, context: BackoffContext) => number;

// The backoffs made here, which never read a context: a retry policy using one may skip reading
// the clock before a first attempt (its fast path), since nothing needs `elapsedMs`.
const builtIn = new WeakSet<RetryBackoff>();

/** Registers a backoff made here as one that ignores its context. */
function markBuiltIn(backoff: Backoff): Backoff {
  builtIn.add(backoff);
  return backoff;
}

/** True for a backoff made by this module's factories: it never reads a context. */
export function ignoresContext(backoff: RetryBackoff): boolean {
  return builtIn.has(backoff);
}

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
  return markBuiltIn(() => ms);
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
  return markBuiltIn((retry) => Math.min(maxMs, baseMs + stepMs * step(retry)));
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
  return markBuiltIn((retry) => grow(baseMs, factor, retry, maxMs));
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
  return markBuiltIn((retry) => {
    const d = grow(baseMs, 2, retry, maxMs);
    return Math.min(maxMs, d * (1 + jitter * (2 * random() - 1)));
  });
}

/**
 * AWS "full jitter": uniform in `[0, min(maxMs, baseMs · 2^(n−1)))` (AWS writes the exponent as the
 * attempt counted from 0). Spreads retries the most; some delays are near zero.
 * @example retry({ backoff: fullJitter({ baseMs: 100, maxMs: 10_000 }) })
 */
export function fullJitter(options?: JitterOptions): Backoff {
  const { baseMs, maxMs, random } = readBounded('fullJitter options', options, plainJitterSchema);
  return markBuiltIn((retry) => random() * grow(baseMs, 2, retry, maxMs));
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
  return markBuiltIn((retry) => {
    const t = step(retry) + random();
    const value = (curve(t) - curve(t - 1)) * RP_SCALING * baseMs;
    // Huge t overflows to Infinity − Infinity = NaN: both mean "past the cap" (Math.min keeps NaN).
    // Stryker disable next-line EqualityOperator: when value equals maxMs both branches give the same number
    // biome-ignore lint/complexity/useMathMinMax: the ternary maps NaN to maxMs
    return value < maxMs ? value : maxMs;
  });
}

/**
 * The delays of a list, in order: `list[0]` before the first retry, `list[1]` before the second,
 * and the last entry before every retry past the end (as cockatiel's `IterableBackoff`). The list
 * does not set how many retries there are (Polly's `WaitAndRetry(list)` does): `maxAttempts`
 * still decides, so pass `maxAttempts: list.length + 1` for one retry per entry. The list is
 * copied: changing it afterwards changes nothing.
 *
 * Throws a `TypeError` for a list that is empty, not an array, or holds anything but finite
 * numbers ≥ 0 (`expected "delays[1]" to be a non-negative finite number, got -5`).
 * @example retry({ maxAttempts: 4, backoff: delays([100, 500, 2_000]) })
 */
export function delays(list: readonly number[]): Backoff {
  if (!Array.isArray(list) || list.length === 0) {
    throw new TypeError(`expected "delays" to be a non-empty array of milliseconds, got ${show(list)}`);
  }
  // Array.from visits holes too: a sparse list is refused, not read as undefined.
  const copy = Array.from(list, (ms: unknown, i) => nonNegative(`delays[${i}]`, ms));
  const last = copy.length - 1;
  // Any retry number reads an entry: below 2 (NaN too) the first, past the end the last.
  return markBuiltIn((retry) => copy[retry >= 2 ? Math.min(Math.floor(retry) - 1, last) : 0]!);
}
