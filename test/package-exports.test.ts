/**
 * The published shape: every subpath in package.json `exports` resolves from the built `dist/`
 * (npm test builds first) through the package's own name, and the main entry exposes the
 * documented API. Nothing here imports from src/.
 */
import { readFile } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';

const manifest = JSON.parse(await readFile(new URL('../package.json', import.meta.url), 'utf8')) as {
  name: string;
  exports: Record<string, unknown>;
  sideEffects: boolean;
};

/** Imports by a runtime string, so type checking never depends on a built dist/. */
const load = (specifier: string): Promise<Record<string, unknown>> => import(specifier);

describe('package exports', () => {
  it('has the final export map and no side effects', () => {
    expect(Object.keys(manifest.exports).sort()).toEqual(
      ['.', './http', './node', './package.json', './postgres', './redis', './testing'].sort(),
    );
    expect(manifest.sideEffects).toBe(false);
  });

  it.each([
    'bulwark',
    'bulwark/testing',
    'bulwark/redis',
    'bulwark/postgres',
    'bulwark/http',
    'bulwark/node',
  ])('%s resolves from dist (run `npm run build` first)', async (specifier) => {
    await expect(load(specifier)).resolves.toBeDefined();
  });

  it('the main entry exposes the core API and bulwark/testing the FakeClock', async () => {
    const main = await load('bulwark');
    for (const name of [
      'pipeline',
      'retry',
      'retryIf',
      'retryAll',
      'retryBudget',
      'timeout',
      'fallback',
      'constant',
      'linear',
      'exponential',
      'exponentialJitter',
      'fullJitter',
      'decorrelatedJitter',
      'classify',
      'isTransient',
      'toHttpStatus',
      'fromHttpStatus',
      'toProblem',
      'systemClock',
      'ResilienceError',
      'RejectedError',
      'TimeoutError',
      'RetriesExhaustedError',
      'isTimeoutError',
      'isRetriesExhaustedError',
      'circuitBreaker',
      'smartResilience',
      'inferredResilient',
      'CircuitOpenError',
      'isCircuitOpenError',
      'hedge',
      'concurrencyLimit',
      'bulkhead',
      'mapConcurrent',
      'BulkheadFullError',
      'ConcurrencyLimitError',
      'LoadShedError',
      'isLoadShedError',
      'rateLimiter',
      'RateLimitedError',
      'isRateLimitedError',
      'memoryRateLimitStore',
    ]) {
      expect(main, name).toHaveProperty(name);
    }
    const { FakeClock } = (await load('bulwark/testing')) as {
      FakeClock: new (startMs: number) => { now(): number };
    };
    expect(new FakeClock(5).now()).toBe(5);
  });

  it('bulwark/node and bulwark/http expose their adapters', async () => {
    expect(await load('bulwark/node')).toHaveProperty('loadShedder');
    expect(await load('bulwark/redis')).toHaveProperty('redisStores');
    expect(await load('bulwark/testing')).toHaveProperty('rateLimitStoreConformance');
    const http = await load('bulwark/http');
    for (const name of [
      'problemReply',
      'problemResponse',
      'loadSheddingMiddleware',
      'fastifyLoadShedding',
      'bulkheadMiddleware',
      'fastifyBulkhead',
      'rateLimitMiddleware',
      'fastifyRateLimit',
      'rateLimitHeaders',
    ]) {
      expect(http, name).toHaveProperty(name);
    }
  });
});
