/**
 * Type tests for `Policy<Extra>`: what a policy may resolve with besides the operation's value
 * (a fallback's substitute, a hedge variant's value) shows in the type of `execute` and of every
 * `pipeline` it sits in. The assertions are checked by `npm run typecheck` (this file is in the
 * project's tsconfig); `expectTypeOf` is a no-op when vitest runs it, and each
 * `@ts-expect-error` fails the typecheck if the line it guards starts compiling.
 */
import { describe, expectTypeOf, it } from 'vitest';
import {
  type BulkheadPolicy,
  bulkhead,
  type CircuitBreakerPolicy,
  circuitBreaker,
  concurrencyLimit,
  fallback,
  hedge,
  inferredResilient,
  type LoadShedPolicy,
  loadShedder,
  type Operation,
  type Policy,
  pipeline,
  rateLimiter,
  retry,
  retryAll,
  retryIf,
  type SmartResiliencePolicy,
  smartResilience,
  type TimeoutPolicy,
  timeout,
} from '../../src/index.js';

const price = async (): Promise<{ price: number }> => ({ price: 1 });

describe('Policy<Extra>', () => {
  it('a fallback adds its handler value to what execute resolves with', () => {
    expectTypeOf(fallback(() => null).execute(price)).toEqualTypeOf<Promise<{ price: number } | null>>();
    expectTypeOf(fallback(async () => 'stale' as const).execute(price)).toEqualTypeOf<
      Promise<{ price: number } | 'stale'>
    >();
    expectTypeOf(fallback(() => null)).toExtend<Policy<null>>();
  });

  it('a pipeline resolves with the union of its policies’ extras', () => {
    expectTypeOf(
      pipeline(
        fallback(() => null),
        retry(),
      ).execute(price),
    ).toEqualTypeOf<Promise<{ price: number } | null>>();
    expectTypeOf(
      pipeline(
        fallback(() => undefined),
        timeout(10),
        fallback(() => 0 as const),
      ).execute(price),
    ).toEqualTypeOf<Promise<{ price: number } | undefined | 0>>();
    expectTypeOf(pipeline(pipeline(fallback(() => null)), retry()).execute(price)).toEqualTypeOf<
      Promise<{ price: number } | null>
    >();
    expectTypeOf(pipeline(hedge({ variants: [async () => 'b' as const] })).execute(price)).toEqualTypeOf<
      Promise<{ price: number } | 'b'>
    >();
  });

  it('policies without a substitute keep the operation’s type, alone and composed', () => {
    expectTypeOf(pipeline().execute(price)).toEqualTypeOf<Promise<{ price: number }>>();
    expectTypeOf(
      pipeline(retry(), timeout(10), circuitBreaker({ resetTimeoutMs: 10 })).execute(price),
    ).toEqualTypeOf<Promise<{ price: number }>>();
    expectTypeOf(retry().execute(price)).toEqualTypeOf<Promise<{ price: number }>>();
    expectTypeOf(inferredResilient().execute(price)).toEqualTypeOf<Promise<{ price: number }>>();
  });

  it('a policy of another library that only has execute() composes, typed by what it returns', () => {
    const plain = {
      execute: <T>(operation: Operation<T>) =>
        Promise.resolve(operation({ signal: AbortSignal.abort(), attempt: 1 })),
    };
    expectTypeOf(pipeline(plain, retry()).execute(price)).toEqualTypeOf<Promise<{ price: number }>>();
    const declared: Policy<'cached'> = fallback(() => 'cached' as const);
    expectTypeOf(pipeline(declared).execute(price)).toEqualTypeOf<Promise<{ price: number } | 'cached'>>();
  });

  it('every built-in policy is a Policy and composite factories keep their own types', () => {
    expectTypeOf(retry()).toExtend<Policy>();
    expectTypeOf(retryIf(() => true)).toExtend<Policy>();
    expectTypeOf(retryAll()).toExtend<Policy>();
    expectTypeOf(timeout(10)).toEqualTypeOf<TimeoutPolicy>();
    expectTypeOf(timeout(10)).toExtend<Policy>();
    expectTypeOf(circuitBreaker({ resetTimeoutMs: 10 })).toEqualTypeOf<CircuitBreakerPolicy>();
    expectTypeOf(circuitBreaker({ resetTimeoutMs: 10 })).toExtend<Policy>();
    expectTypeOf(smartResilience()).toEqualTypeOf<SmartResiliencePolicy>();
    expectTypeOf(inferredResilient()).toEqualTypeOf<SmartResiliencePolicy>();
    expectTypeOf(smartResilience()).toExtend<Policy>();
    expectTypeOf(concurrencyLimit(1)).toExtend<Policy>();
    expectTypeOf(bulkhead({ maxConcurrent: 1, maxQueue: 0 })).toEqualTypeOf<BulkheadPolicy>();
    expectTypeOf(bulkhead({ maxConcurrent: 1, maxQueue: 0 })).toExtend<Policy>();
    expectTypeOf(hedge()).toExtend<Policy>();
    expectTypeOf(
      loadShedder({ limits: { inFlight: 10 }, source: () => ({}) }).policy('normal'),
    ).toEqualTypeOf<LoadShedPolicy>();
    expectTypeOf(
      loadShedder({ limits: { inFlight: 10 }, source: () => ({}) }).policy('normal'),
    ).toExtend<Policy>();
    expectTypeOf(rateLimiter({ algorithm: 'gcra', limit: 1, periodMs: 1 }).policy('k')).toExtend<Policy>();
    // a substitute is an extra: a fallback is a Policy<null>, not a Policy<never>
    expectTypeOf(fallback(() => null)).not.toExtend<Policy>();
    expectTypeOf(pipeline(fallback(() => null))).not.toExtend<Policy>();
  });

  it('refuses, at compile time, to hide the extra', () => {
    // @ts-expect-error the fallback may answer null, so the value is not always a { price }
    const value: Promise<{ price: number }> = pipeline(
      fallback(() => null),
      retry(),
    ).execute(price);
    expectTypeOf(value).toBeObject();
    // @ts-expect-error a Policy<never> slot refuses a policy that can substitute a value
    const strict: Policy = fallback(() => null);
    expectTypeOf(strict).toBeObject();
  });
});
