/**
 * The policy contract suite on every built-in policy and configuration: retry, timeout, fallback,
 * circuit breaker, smart resilience, hedge, concurrency limit, bulkhead, load shedder, rate
 * limiter and pipelines of them, each through `execute` and inside pipelines.
 */
import { describe, it } from 'vitest';
import {
  bulkhead,
  type CircuitBreakerOptions,
  type CircuitBreakerPolicy,
  circuitBreaker,
  concurrencyLimit,
  constant,
  fallback,
  hedge,
  inferredResilient,
  isRetriesExhaustedError,
  isTransient,
  memoryRateLimitStore,
  type Policy,
  pipeline,
  rateLimiter,
  retry,
  retryAll,
  retryBudget,
  retryIf,
  smartResilience,
  timeout,
} from '../src/index.js';
import { loadShedder } from '../src/node/index.js';
import {
  chaos,
  type FakeClock,
  type PolicyFixture,
  type PolicyUnderTest,
  policyConformance,
} from '../src/testing/index.js';

const runner = { describe, it };

/** Retry gives up with a RetriesExhaustedError carrying the last failure. */
const unwrapRetries = (error: unknown): unknown => (isRetriesExhaustedError(error) ? error.cause : error);

/** A retry: it wraps what it gave up on, and leaves deadlines to the attempts. */
const retrying = (policy: Policy<unknown>): PolicyUnderTest => ({
  policy,
  unwrap: unwrapRetries,
  enforcesDeadline: false,
});

/**
 * A breaker (reset after 10 s) refused by isolating it; with a `callTimeoutMs` it ends a call by
 * the caller's deadline.
 */
function breakerUnderTest(
  clock: FakeClock,
  options: Omit<CircuitBreakerOptions, 'resetTimeoutMs' | 'clock'>,
): PolicyUnderTest & { readonly policy: CircuitBreakerPolicy } {
  const policy = circuitBreaker({ ...options, resetTimeoutMs: 10_000, clock });
  return { policy, enforcesDeadline: options.callTimeoutMs !== undefined, refuse: () => policy.isolate() };
}

/** An operation that holds whatever it was admitted to, forever. */
const holdForever = (): Promise<never> => new Promise<never>(() => {});

/** Fills `count` places of `policy` with calls that never end. */
function hold(policy: Policy<unknown>, count: number): void {
  for (let i = 0; i < count; i++) void policy.execute(holdForever);
}

const configurations: Record<string, (fixture: PolicyFixture) => PolicyUnderTest> = {
  // retry
  'retry() (transient failures)': ({ clock }) => retrying(retry({ clock, backoff: constant(10) })),
  'retry() with its default jittered backoff': ({ clock }) => retrying(retry({ clock })),
  'retry({ maxElapsedMs }) (the timed path)': ({ clock }) =>
    retrying(retry({ clock, maxAttempts: 4, backoff: constant(10), maxElapsedMs: 60_000 })),
  'retryIf(isTransient)': ({ clock }) =>
    retrying(retryIf((error) => isTransient(error), { clock, backoff: constant(10) })),
  'retryAll()': ({ clock }) => retrying(retryAll({ clock, maxAttempts: 3, backoff: constant(10) })),
  'retry({ budget })': ({ clock }) =>
    retrying(
      retry({ clock, backoff: constant(10), budget: retryBudget({ ratio: 0.1, minPerSecond: 1, clock }) }),
    ),
  // A spent budget declines the retry and returns the failure as it came: nothing to unwrap.
  'retry({ budget }) with the budget spent': ({ clock }) => ({
    policy: retry({
      clock,
      backoff: constant(10),
      budget: retryBudget({ ratio: 0, minPerSecond: 0, clock }),
    }),
    enforcesDeadline: false,
  }),

  // timeout
  'timeout(1_000) cooperative': ({ clock }) => ({ policy: timeout(1_000, { clock }) }),
  'timeout(1_000) aggressive': ({ clock }) => ({ policy: timeout(1_000, { clock, mode: 'aggressive' }) }),

  // fallback
  'fallback(() => value)': ({ clock }) => ({
    policy: fallback(() => 'fallback value', { clock }),
    recovers: { value: 'fallback value' },
    enforcesDeadline: false,
  }),
  'fallback with a `when` that never matches': ({ clock }) => ({
    policy: fallback(() => 'fallback value', { when: () => false, clock }),
    enforcesDeadline: false,
  }),

  // circuit breaker
  'circuitBreaker({ failureThreshold })': ({ clock }) => breakerUnderTest(clock, { failureThreshold: 5 }),
  'circuitBreaker({ failureRate })': ({ clock }) =>
    breakerUnderTest(clock, { failureRate: { threshold: 0.5, windowMs: 10_000, minimumThroughput: 10 } }),
  'circuitBreaker({ callTimeoutMs }) aggressive': ({ clock }) =>
    breakerUnderTest(clock, { failureThreshold: 5, callTimeoutMs: 1_000 }),
  'circuitBreaker({ callTimeoutMs, callTimeoutMode: cooperative })': ({ clock }) =>
    breakerUnderTest(clock, { failureThreshold: 5, callTimeoutMs: 1_000, callTimeoutMode: 'cooperative' }),

  // smart composites
  'smartResilience()': ({ clock }) => {
    const policy = smartResilience({ clock, backoff: constant(10) });
    return { policy, unwrap: unwrapRetries, refuse: () => policy.breaker.isolate() };
  },
  'smartResilience({ attemptTimeoutMs })': ({ clock }) => {
    const policy = smartResilience({ clock, backoff: constant(10), attemptTimeoutMs: 500 });
    return { policy, unwrap: unwrapRetries, refuse: () => policy.breaker.isolate() };
  },
  'inferredResilient()': ({ clock }) => {
    const policy = inferredResilient({ clock });
    return { policy, unwrap: unwrapRetries, refuse: () => policy.breaker.isolate() };
  },

  // hedge
  'hedge({ attempts: 1 })': ({ clock }) => ({
    policy: hedge({ attempts: 1, clock }),
    enforcesDeadline: false,
  }),
  'hedge({ attempts: 3, delayMs: 10 }) staggered': ({ clock }) => ({
    policy: hedge({ attempts: 3, delayMs: 10, clock }),
    enforcesDeadline: false,
  }),
  'hedge({ attempts: 3, delayMs: 0 }) parallel': ({ clock }) => ({
    policy: hedge({ attempts: 3, delayMs: 0, clock }),
    enforcesDeadline: false,
  }),
  'hedge({ variants })': ({ clock, operation }) => ({
    policy: hedge({ variants: [operation, operation], delayMs: 10, clock }),
    enforcesDeadline: false,
  }),

  // admission
  'concurrencyLimit(2)': ({ clock }) => {
    const policy = concurrencyLimit(2, { clock });
    return { policy, enforcesDeadline: false, refuse: () => hold(policy, 2) };
  },
  'bulkhead({ maxConcurrent: 2, maxQueue: 2 })': ({ clock }) => {
    const policy = bulkhead({ maxConcurrent: 2, maxQueue: 2, clock });
    return { policy, enforcesDeadline: false, refuse: () => hold(policy, 4) };
  },
  'bulkhead({ maxConcurrent: 2, maxQueue: 2, queueTimeoutMs: 1_000 })': ({ clock }) => {
    const policy = bulkhead({ maxConcurrent: 2, maxQueue: 2, queueTimeoutMs: 1_000, clock });
    return { policy, enforcesDeadline: false, refuse: () => hold(policy, 4) };
  },
  'bulkhead({ maxConcurrent: 1, maxQueue: 0 })': ({ clock }) => {
    const policy = bulkhead({ maxConcurrent: 1, maxQueue: 0, clock });
    return { policy, enforcesDeadline: false, refuse: () => hold(policy, 1) };
  },
  'loadShedder({ limits: { inFlight } }).policy(normal)': ({ clock }) => {
    const policy = loadShedder({ limits: { inFlight: 10 }, clock }).policy('normal');
    return { policy, enforcesDeadline: false, refuse: () => hold(policy, 8) };
  },
  'loadShedder({ limits: { heapUsedRatio }, source }).policy(low)': ({ clock }) => {
    let heapUsedRatio = 0.1;
    const shedder = loadShedder({ limits: { heapUsedRatio: 0.9 }, source: () => ({ heapUsedRatio }), clock });
    return {
      policy: shedder.policy('low'),
      enforcesDeadline: false,
      refuse: async () => {
        heapUsedRatio = 0.95;
        await clock.advance(1_000); // the next sample sees it
      },
    };
  },

  // rate limiter (refused once the key's quota is spent, whatever earlier calls took)
  'rateLimiter(...).policy(key) (take)': ({ clock }) => {
    const limiter = rateLimiter({ limit: 1_000, periodMs: 1_000, clock });
    return {
      policy: limiter.policy('conformance'),
      enforcesDeadline: false,
      refuse: () => spendAll(limiter),
    };
  },
  'rateLimiter(...).policy(key, { wait: true })': ({ clock }) => ({
    policy: rateLimiter({ limit: 1_000, periodMs: 1_000, clock }).policy('conformance', {
      wait: true,
      maxWaitMs: 1_000,
    }),
    enforcesDeadline: false,
  }),
  'rateLimiter(...).policy(key, { wait: true, maxWaitMs: 0 }) (sliding window)': ({ clock }) => {
    const limiter = rateLimiter({ algorithm: 'sliding-window', limit: 100, periodMs: 1_000, clock });
    return {
      policy: limiter.policy('conformance', { wait: true, maxWaitMs: 0 }),
      enforcesDeadline: false,
      refuse: () => spendAll(limiter),
    };
  },
  'rateLimiter.all([...]).policy(key) (take)': ({ clock }) => {
    const combined = combinedUnderTest(clock);
    return {
      policy: combined.policy('conformance'),
      enforcesDeadline: false,
      refuse: () => spendAll(combined),
    };
  },
  'rateLimiter.all([...]).policy(key, { wait: true })': ({ clock }) => ({
    policy: combinedUnderTest(clock).policy('conformance', { wait: true, maxWaitMs: 1_000 }),
    enforcesDeadline: false,
  }),

  // chaos (bulwark/testing): switched off by rate 0, or injecting harmlessly on every call
  'chaos.fault({ rate: 0 })': ({ clock }) => ({
    policy: chaos.fault({ rate: 0, error: new Error('injected'), clock }),
    enforcesDeadline: false,
  }),
  'chaos.latency({ rate: 0 })': ({ clock }) => ({
    policy: chaos.latency({ rate: 0, ms: 1_000, clock }),
    enforcesDeadline: false,
  }),
  'chaos.outcome({ rate: 0 })': ({ clock }) => ({
    policy: chaos.outcome({ rate: 0, value: 'injected', clock }),
    enforcesDeadline: false,
  }),
  'chaos.behavior({ rate: 0 })': ({ clock }) => ({
    policy: chaos.behavior({ rate: 0, run: () => {}, clock }),
    enforcesDeadline: false,
  }),
  'chaos.behavior({ rate: 1 }) with a behavior that does nothing': ({ clock }) => ({
    policy: chaos.behavior({ rate: 1, run: () => {}, clock }),
    enforcesDeadline: false,
  }),

  // compositions
  'pipeline(timeout(2_000), retry(), timeout(500))': ({ clock }) => ({
    policy: pipeline(
      timeout(2_000, { clock }),
      retry({ clock, backoff: constant(10) }),
      timeout(500, { clock }),
    ),
    unwrap: unwrapRetries,
  }),
  'pipeline(fallback, circuitBreaker, retry, timeout aggressive)': ({ clock }) => ({
    policy: pipeline(
      fallback(() => 'fallback value', { clock }),
      circuitBreaker({ failureThreshold: 5, resetTimeoutMs: 10_000, clock }),
      retry({ clock, backoff: constant(10) }),
      timeout(500, { clock, mode: 'aggressive' }),
    ),
    recovers: { value: 'fallback value' },
  }),
  'pipeline(bulkhead, circuitBreaker({ callTimeoutMs }), hedge)': ({ clock }) => {
    const breaker = breakerUnderTest(clock, { failureThreshold: 5, callTimeoutMs: 1_000 });
    const edge = bulkhead({ maxConcurrent: 4, maxQueue: 4, clock });
    return { ...breaker, policy: pipeline(edge, breaker.policy, hedge({ attempts: 2, delayMs: 10, clock })) };
  },
  'pipeline(rate limit, concurrencyLimit, retryAll)': ({ clock }) => ({
    policy: pipeline(
      rateLimiter({ limit: 1_000, periodMs: 1_000, clock }).policy('conformance'),
      concurrencyLimit(4, { clock }),
      retryAll({ clock, maxAttempts: 2, backoff: constant(10) }),
    ),
    unwrap: unwrapRetries,
    enforcesDeadline: false,
  }),
};

for (const [name, make] of Object.entries(configurations)) policyConformance(name, make, runner);

/** Two limits on one in-memory store, combined: 1 000 per second and 5 000 per minute. */
function combinedUnderTest(clock: FakeClock) {
  const store = memoryRateLimitStore({ clock });
  return rateLimiter.all([
    rateLimiter({ name: 'second', limit: 1_000, periodMs: 1_000, store, clock }),
    rateLimiter({ name: 'minute', limit: 5_000, periodMs: 60_000, store, clock }),
  ]);
}

/** Spends what is left of the conformance key, unit by unit, so the next call is refused. */
function spendAll(limiter: { takeSync(key: string): { allowed: boolean } }): void {
  while (limiter.takeSync('conformance').allowed) {
    // keep taking
  }
}
