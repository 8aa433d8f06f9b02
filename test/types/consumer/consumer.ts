/**
 * A consumer of the built package under `strict`, `exactOptionalPropertyTypes` and
 * `skipLibCheck: false`: every declaration file must compile, and every optional option must
 * accept an explicit `undefined` (so nobody writes `...(x === undefined ? {} : { x })`).
 * Type-checked only, never run.
 */
import type { IncomingMessage } from 'node:http';
import {
  bulkhead,
  type CircuitSnapshot,
  type Context,
  circuitBreaker,
  concurrencyLimit,
  constant,
  decorrelatedJitter,
  exponential,
  exponentialJitter,
  fallback,
  fullJitter,
  hedge,
  idempotency,
  idempotencyKey,
  inferredResilient,
  linear,
  mapConcurrent,
  memoryIdempotencyStore,
  memoryRateLimitStore,
  type Policy,
  pipeline,
  ResilienceError,
  rateLimiter,
  retry,
  retryAll,
  retryBudget,
  retryIf,
  smartResilience,
  TimeoutError,
  timeout,
  toProblem,
  loadShedder as webLoadShedder,
  withIdempotencyKey,
} from 'bulwark';
import {
  bulkheadMiddleware,
  type fastifyBulkhead,
  fastifyIdempotency,
  type fastifyLoadShedding,
  type fastifyRateLimit,
  idempotencyMiddleware,
  ipKey,
  loadSheddingMiddleware,
  problemReply,
  rateLimitMiddleware,
} from 'bulwark/http';
import { loadShedder, processSignals } from 'bulwark/node';
import { type PostgresTransaction, postgresStores } from 'bulwark/postgres';
import { redisStores } from 'bulwark/redis';
import { FakeClock, seededRandom } from 'bulwark/testing';
import type { Redis } from 'ioredis';
import type { Pool } from 'pg';

declare const redis: Redis;
declare const pool: Pool;
declare const maybeSignal: AbortSignal | undefined;
declare const maybeDeadline: number | undefined;

const clock = new FakeClock(0);
const random = seededRandom(1);

// retry and time
const budget = retryBudget({ ratio: 0.1, minPerSecond: 1, windowMs: undefined, clock: undefined });
const backoffs = [
  constant(10),
  linear(10, undefined),
  exponential({ baseMs: undefined, maxMs: undefined, factor: undefined }),
  exponentialJitter({ baseMs: undefined, maxMs: undefined, jitter: undefined, random: undefined }),
  fullJitter({ baseMs: undefined, maxMs: undefined, random }),
  decorrelatedJitter({ baseMs: undefined, maxMs: undefined, random: undefined }),
];
const retryOptions = {
  maxAttempts: undefined,
  backoff: backoffs[0],
  maxElapsedMs: undefined,
  maxRetryAfterMs: undefined,
  budget: undefined,
  clock: undefined,
  onRetry: undefined,
  onGiveUp: undefined,
} as const;
const retries = [retry(retryOptions), retryIf(() => true, retryOptions), retryAll({ budget, clock })];
const limits = [
  timeout(100, { mode: undefined, clock: undefined }),
  fallback(() => null, { when: undefined }),
];

// breaking and composing
const snapshot: CircuitSnapshot = {
  state: 'open',
  consecutiveFailures: 3,
  openUntil: undefined,
  reopenCount: 0,
};
const breaker = circuitBreaker({
  failureThreshold: undefined,
  failureRate: { threshold: 0.5, windowMs: 10_000, minimumThroughput: undefined },
  slowCallMs: undefined,
  slowCallRate: undefined,
  resetTimeoutMs: undefined,
  resetBackoff: undefined,
  maxResetTimeoutMs: undefined,
  halfOpenProbes: undefined,
  successThreshold: undefined,
  callTimeoutMs: undefined,
  maxCallTimeoutMs: undefined,
  callTimeoutMode: undefined,
  isFailure: undefined,
  initialState: snapshot,
  clock: undefined,
  onStateChange: undefined,
  onRejected: undefined,
});
const smart = smartResilience({
  maxAttempts: undefined,
  backoff: undefined,
  failureThreshold: undefined,
  resetTimeoutMs: undefined,
  callTimeoutMs: undefined,
  attemptTimeoutMs: undefined,
  budget: undefined,
  clock: undefined,
  breaker: { halfOpenProbes: undefined, onStateChange: undefined },
});
const inferred = inferredResilient({ clock: undefined });
const hedged = hedge({
  attempts: undefined,
  delayMs: undefined,
  variants: undefined,
  isFatal: undefined,
  budget: undefined,
  clock: undefined,
  onHedge: undefined,
});

// admission
const limit = concurrencyLimit(4, { onRejected: undefined });
const held = bulkhead({
  maxConcurrent: 2,
  maxQueue: 4,
  queueTimeoutMs: undefined,
  clock: undefined,
  onRejected: undefined,
});
const shedder = webLoadShedder({
  limits: {
    inFlight: 100,
    cpuPercent: undefined,
    eventLoopDelayMs: undefined,
    eventLoopUtilization: undefined,
    heapUsedRatio: undefined,
  },
  thresholds: { low: undefined },
  hysteresis: undefined,
  source: undefined,
  intervalMs: undefined,
  retryAfterMs: undefined,
  clock: undefined,
  name: undefined,
  onSuccess: undefined,
  onFailure: undefined,
  onRejected: undefined,
  onStateChange: undefined,
  onSampleFailed: undefined,
});
const liveShedder = loadShedder({ limits: { eventLoopDelayMs: 200 }, source: undefined });
const live = processSignals({ signals: undefined, resolutionMs: undefined });
const mapped = mapConcurrent([1, 2], async (n) => n * 2, {
  concurrency: 2,
  signal: maybeSignal,
  settle: undefined,
});

// rate limiting
const store = memoryRateLimitStore({ maxKeys: undefined, clock: undefined });
const limiter = rateLimiter({
  algorithm: undefined,
  limit: 10,
  periodMs: 1_000,
  burst: undefined,
  buckets: undefined,
  name: undefined,
  store,
  maxKeys: undefined,
  clock: undefined,
  storeFailure: undefined,
  instances: undefined,
});
const shared = rateLimiter({
  limit: 10,
  periodMs: 1_000,
  store: redisStores(redis, { prefix: undefined, timeoutMs: undefined, clock: undefined }).rateLimit,
});
const waited = limiter.wait('k', { cost: undefined, signal: maybeSignal, maxWaitMs: undefined });
const limited = limiter.policy('k', { cost: undefined, wait: undefined, maxWaitMs: undefined });
const hourly = rateLimiter({ name: 'hour', limit: 100, periodMs: 3_600_000, store });
const combined = rateLimiter.all([limiter, hourly]);
const bindingName: string = combined.takeSync('k').binding.rule.name;
const combinedWait = combined.wait('k', { cost: undefined, signal: maybeSignal, maxWaitMs: undefined });
const combinedPolicy = combined.policy('k', { cost: undefined, wait: undefined, maxWaitMs: undefined });

// calls, contexts and errors
const composed: Policy<null> = pipeline(
  limits[1] ?? fallback(() => null),
  breaker,
  ...retries,
  limit,
  held,
  hedged,
  limited,
);
const namedPipeline: Policy<null> = pipeline(
  { name: 'checkout', clock: undefined },
  fallback(() => null),
  breaker,
);
const value = composed.execute(({ signal, deadline }: Context) => (signal.aborted ? 0 : (deadline ?? 1)), {
  signal: maybeSignal,
  deadline: maybeDeadline,
});
const context: Context = { signal: new AbortController().signal, attempt: 1, deadline: maybeDeadline };
const error = new ResilienceError('down', {
  code: 'E_DOWN',
  kind: 'unavailable',
  retryAfterMs: undefined,
  cause: undefined,
});
const problem = toProblem(new TimeoutError(10), { instance: undefined, nowMs: undefined });

// the HTTP edge
const keyOf = (request: IncomingMessage): string => request.socket.remoteAddress ?? 'unknown';
const middlewares = [
  rateLimitMiddleware({
    limiter: shared,
    key: keyOf,
    skip: undefined,
    cost: undefined,
    headers: undefined,
    legacyHeaders: undefined,
    handler: undefined,
    clock: undefined,
  }),
  rateLimitMiddleware({ limiter: shared, key: (request) => ipKey(request, { ipv6Subnet: undefined }) }),
  rateLimitMiddleware({ limiter: combined, key: keyOf }),
  loadSheddingMiddleware({
    shedder,
    priority: () => 'normal',
    skip: undefined,
    retryAfterMs: undefined,
    jitter: undefined,
    random: undefined,
  }),
  bulkheadMiddleware({
    bulkhead: held,
    skip: undefined,
    retryAfterMs: undefined,
    jitter: undefined,
    random: undefined,
  }),
];
const pluginOptions: [
  Parameters<typeof fastifyRateLimit>[1],
  Parameters<typeof fastifyLoadShedding>[1],
  Parameters<typeof fastifyBulkhead>[1],
] = [
  {
    limiter: shared,
    key: (request) => request.ip ?? 'unknown',
    skip: undefined,
    cost: undefined,
    headers: undefined,
  },
  { shedder: liveShedder, priority: () => 'low', skip: undefined, retryAfterMs: undefined },
  { bulkhead: () => held, skip: undefined, jitter: undefined },
];
const reply = problemReply(error, { instance: undefined, headers: undefined, retryAfterMs: undefined });

// idempotency keys
const idempotencyStore = memoryIdempotencyStore({ maxKeys: undefined, clock: undefined });
const payments = idempotency({
  store: idempotencyStore,
  leaseMs: undefined,
  ttlMs: undefined,
  wait: undefined,
  maxWaitMs: undefined,
  transactional: undefined,
  fingerprint: undefined,
  storeErrors: undefined,
  name: undefined,
  clock: undefined,
  onReplay: undefined,
  onConflict: undefined,
  onLeaseLost: undefined,
  onStoreError: undefined,
});
const charged: Promise<{ id: string }> = payments.execute(
  'k',
  { cents: 1 },
  ({ signal }) => ({ id: signal.aborted ? '' : 'p' }),
  {
    signal: maybeSignal,
  },
);
const pgStores = postgresStores(pool, { schema: undefined, timeoutMs: undefined });
const ledger = idempotency({ store: pgStores.idempotency, transactional: true });
const written = ledger.execute('k', 1, async ({ tx }: { tx: PostgresTransaction }) => {
  await tx.query('SELECT 1', []);
  return 1;
});
const onRedis = idempotency({ store: redisStores(redis).idempotency });
const keyed = withIdempotencyKey(retry()).execute(({ idempotencyKey: key }) => key, {
  idempotencyKey: undefined,
  signal: maybeSignal,
  deadline: maybeDeadline,
});
const derived: Promise<string> = idempotencyKey('charge', 42);
const idempotencyEdge = [
  idempotencyMiddleware({
    idempotency: payments,
    required: undefined,
    methods: undefined,
    tenant: undefined,
    maxBodyBytes: undefined,
    replayHeaders: undefined,
    abandonAfterMs: undefined,
    clock: undefined,
  }),
  fastifyIdempotency,
];

export {
  bindingName,
  budget,
  charged,
  clock,
  combinedPolicy,
  combinedWait,
  composed,
  context,
  derived,
  idempotencyEdge,
  inferred,
  keyed,
  live,
  mapped,
  middlewares,
  namedPipeline,
  onRedis,
  pluginOptions,
  problem,
  reply,
  smart,
  value,
  waited,
  written,
};
