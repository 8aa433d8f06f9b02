/**
 * Every factory refuses an option it does not know, with a `TypeError` naming the key (and the
 * nearest known name): `retry({ maxAttempt: 5 })` is a typo, never a silent default. One row per
 * options object a user can pass, in every subpath.
 */
import type { ServerResponse } from 'node:http';
import { describe, expect, it } from 'vitest';
import { bulkhead } from '../admission/bulkhead.js';
import { concurrencyLimit } from '../admission/concurrency-limit.js';
import { loadShedder as webLoadShedder } from '../admission/load-shedder.js';
import { mapConcurrent } from '../admission/map-concurrent.js';
import { circuitBreaker } from '../circuit-breaker/circuit-breaker.js';
import { inferredResilient, smartResilience } from '../circuit-breaker/smart.js';
import { hedge } from '../hedge/hedge.js';
import { bulkheadMiddleware, fastifyBulkhead } from '../http/bulkhead.js';
import type { FastifyInstanceLike } from '../http/fastify-types.js';
import { fastifyIdempotency, idempotencyMiddleware } from '../http/index.js';
import { fastifyLoadShedding, loadSheddingMiddleware } from '../http/load-shedding.js';
import { problemReply, problemResponse } from '../http/problem-response.js';
import { fastifyRateLimit, rateLimitMiddleware } from '../http/rate-limit.js';
import { idempotency } from '../idempotency/idempotency.js';
import { memoryIdempotencyStore } from '../idempotency/memory-store.js';
import { loadShedder } from '../node/load-shedder.js';
import { processSignals } from '../node/process-signals.js';
import { memoryRateLimitStore } from '../rate-limit/memory-store.js';
import { rateLimiter } from '../rate-limit/rate-limiter.js';
import { decorrelatedJitter, exponential, exponentialJitter, fullJitter } from '../retry/backoff.js';
import { retryBudget } from '../retry/budget.js';
import { fallback } from '../retry/fallback.js';
import { retry, retryAll, retryIf } from '../retry/retry.js';
import { redisStores } from '../stores/redis/index.js';
import { chaos } from '../testing/chaos.js';
import { chaosStore } from '../testing/chaos-store.js';
import { FakeClock } from '../testing/fake-clock.js';
import { faultProxy } from '../testing/fault-proxy.js';
import { timeout } from '../timeout/timeout.js';
import { toProblem } from './http-status.js';

const clock = new FakeClock();
const limiter = rateLimiter({ limit: 10, periodMs: 1_000, clock });
const shedder = webLoadShedder({ limits: { inFlight: 10 }, clock });
const held = bulkhead({ maxConcurrent: 1, maxQueue: 0 });
const fakeRedis = { evalsha() {}, eval() {} } as never;
const fastify = { addHook() {} } as FastifyInstanceLike;

/** The error a callback-style Fastify plugin reports (through `done` or by throwing). */
function pluginError(register: (done: (error?: Error) => void) => void): unknown {
  let reported: unknown;
  try {
    register((error) => {
      reported = error;
    });
  } catch (error) {
    reported = error;
  }
  if (reported === undefined) throw new Error('the plugin accepted its options');
  throw reported;
}

// [what is called, the call with one misspelled key, the key, the suggestion (or null)]
const rows: [string, () => unknown, string, string | null][] = [
  ['retry', () => retry({ maxAttempt: 5 } as never), 'maxAttempt', 'maxAttempts'],
  ['retryIf', () => retryIf(() => true, { backof: () => 1 } as never), 'backof', 'backoff'],
  ['retryAll', () => retryAll({ maxElapsed: 10 } as never), 'maxElapsed', 'maxElapsedMs'],
  [
    'retryBudget',
    () => retryBudget({ ratio: 0.1, minPerSecond: 1, window: 1 } as never),
    'window',
    'windowMs',
  ],
  ['timeout', () => timeout(10, { mod: 'aggressive' } as never), 'mod', 'mode'],
  ['fallback', () => fallback(() => 1, { otherwise: () => true } as never), 'otherwise', null],
  ['circuitBreaker', () => circuitBreaker({ resetTimeout: 10 } as never), 'resetTimeout', 'resetTimeoutMs'],
  [
    'circuitBreaker failureRate',
    () => circuitBreaker({ failureRate: { threshold: 0.5, windowMs: 10, minThroughput: 1 } } as never),
    'minThroughput',
    'minimumThroughput',
  ],
  ['smartResilience', () => smartResilience({ maxAttempt: 2 } as never), 'maxAttempt', 'maxAttempts'],
  [
    'smartResilience breaker',
    () => smartResilience({ breaker: { halfOpenProbe: 2 } } as never),
    'halfOpenProbe',
    'halfOpenProbes',
  ],
  ['inferredResilient', () => inferredResilient({ clok: clock } as never), 'clok', 'clock'],
  ['hedge', () => hedge({ delay: 10 } as never), 'delay', 'delayMs'],
  ['concurrencyLimit', () => concurrencyLimit(1, { onReject: () => {} } as never), 'onReject', 'onRejected'],
  [
    'bulkhead',
    () => bulkhead({ maxConcurrent: 1, maxQueue: 0, queueTimeout: 5 } as never),
    'queueTimeout',
    'queueTimeoutMs',
  ],
  [
    'mapConcurrent',
    () => mapConcurrent([1], (n) => n, { concurrency: 1, settled: true } as never),
    'settled',
    'settle',
  ],
  [
    'LoadShedder',
    () => webLoadShedder({ limits: { inFlight: 1 }, interval: 5 } as never),
    'interval',
    'intervalMs',
  ],
  ['LoadShedder limits', () => webLoadShedder({ limits: { cpu: 50 } } as never), 'cpu', 'cpuPercent'],
  [
    'LoadShedder thresholds',
    () => webLoadShedder({ limits: { inFlight: 1 }, thresholds: { hihg: 0.9 } } as never),
    'hihg',
    'high',
  ],
  [
    'loadShedder (bulwark/node)',
    () => loadShedder({ limits: { inFlight: 1 }, hysteresys: 0.1 } as never),
    'hysteresys',
    'hysteresis',
  ],
  ['processSignals', () => processSignals({ resolution: 10 } as never), 'resolution', 'resolutionMs'],
  ['rateLimiter', () => rateLimiter({ limit: 1, periodMs: 1, burts: 2 } as never), 'burts', 'burst'],
  ['rateLimiter.wait', () => limiter.wait('k', { maxWait: 5 } as never), 'maxWait', 'maxWaitMs'],
  ['rateLimiter.policy', () => limiter.policy('k', { waits: true } as never), 'waits', 'wait'],
  ['exponential', () => exponential({ base: 1 } as never), 'base', 'baseMs'],
  ['exponentialJitter', () => exponentialJitter({ jiter: 0.1 } as never), 'jiter', 'jitter'],
  ['fullJitter', () => fullJitter({ maxMS: 1 } as never), 'maxMS', 'maxMs'],
  ['decorrelatedJitter', () => decorrelatedJitter({ baseMS: 1 } as never), 'baseMS', 'baseMs'],
  ['memoryRateLimitStore', () => memoryRateLimitStore({ maxKey: 1 } as never), 'maxKey', 'maxKeys'],
  ['idempotency', () => idempotency({ leaseMS: 1 } as never), 'leaseMS', 'leaseMs'],
  ['memoryIdempotencyStore', () => memoryIdempotencyStore({ maxKey: 1 } as never), 'maxKey', 'maxKeys'],
  [
    'idempotencyMiddleware',
    () => idempotencyMiddleware({ idempotency: idempotency(), requird: false } as never),
    'requird',
    'required',
  ],
  [
    'fastifyIdempotency',
    () =>
      pluginError((done) =>
        fastifyIdempotency(fastify, { idempotency: idempotency(), method: [] } as never, done),
      ),
    'method',
    'methods',
  ],
  ['redisStores', () => redisStores(fakeRedis, { prefx: 'x' } as never), 'prefx', 'prefix'],
  [
    'rateLimitMiddleware',
    () => rateLimitMiddleware({ limiter, key: () => 'k', header: false } as never),
    'header',
    'headers',
  ],
  [
    'fastifyRateLimit',
    () =>
      pluginError((done) =>
        fastifyRateLimit(fastify, { limiter, key: () => 'k', skp: () => true } as never, done),
      ),
    'skp',
    'skip',
  ],
  [
    'loadSheddingMiddleware',
    () => loadSheddingMiddleware({ shedder, priority: () => 'low', skipp: () => true } as never),
    'skipp',
    'skip',
  ],
  [
    'fastifyLoadShedding',
    () =>
      pluginError((done) =>
        fastifyLoadShedding(fastify, { shedder, priority: () => 'low', jiter: 0 } as never, done),
      ),
    'jiter',
    'jitter',
  ],
  [
    'bulkheadMiddleware',
    () => bulkheadMiddleware({ bulkhead: held, retryAfter: 1 } as never),
    'retryAfter',
    'retryAfterMs',
  ],
  [
    'fastifyBulkhead',
    () => pluginError((done) => fastifyBulkhead(fastify, { bulkhead: held, random2: Math } as never, done)),
    'random2',
    'random',
  ],
  ['problemReply', () => problemReply(new Error('x'), { instanse: '/x' } as never), 'instanse', 'instance'],
  [
    'problemResponse',
    () => problemResponse({ headersSent: false } as ServerResponse, new Error('x'), { header: {} } as never),
    'header',
    'headers',
  ],
  ['toProblem', () => toProblem(new Error('x'), { now: 1 } as never), 'now', 'nowMs'],
  ['chaos.fault', () => chaos.fault({ rate: 1, error: {}, errors: {} } as never), 'errors', 'error'],
  ['chaos.latency', () => chaos.latency({ rate: 1, latencyMs: 5 } as never), 'latencyMs', null],
  ['chaos.outcome', () => chaos.outcome({ rate: 1, values: 1 } as never), 'values', 'value'],
  ['chaos.behavior', () => chaos.behavior({ rate: 1, run() {}, enable: true } as never), 'enable', 'enabled'],
  ['chaosStore', () => chaosStore({}, { rate: 1, method: [] } as never), 'method', 'methods'],
  [
    'faultProxy',
    () => faultProxy({ target: { host: '127.0.0.1', port: 1 }, latency: 5 } as never),
    'latency',
    'latencyMs',
  ],
];

describe('unknown option keys', () => {
  it.each(rows)(
    '%s refuses a misspelled key with a TypeError naming it',
    async (_name, call, key, suggestion) => {
      let error: unknown;
      try {
        await call();
      } catch (thrown) {
        error = thrown;
      }
      expect(error).toBeInstanceOf(TypeError);
      const message = (error as TypeError).message;
      expect(message).toContain(`unknown option "${key}"`);
      if (suggestion === null) expect(message).not.toContain('did you mean');
      else expect(message).toContain(`did you mean "${suggestion}"?`);
    },
  );
});
