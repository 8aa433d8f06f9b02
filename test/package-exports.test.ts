/**
 * The published shape: every subpath in package.json `exports` resolves from the built `dist/`
 * (npm test builds first) through the package's own name, and the main entry exposes the
 * documented API. Nothing here imports from src/.
 */
import { execFile } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { dirname, join, normalize } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';

const manifest = JSON.parse(await readFile(new URL('../package.json', import.meta.url), 'utf8')) as {
  name: string;
  exports: Record<string, unknown>;
  sideEffects: boolean;
  engines: { node: string };
  license: string;
  repository?: { type: string; url: string };
};

const root = fileURLToPath(new URL('..', import.meta.url));

const specifiers = Object.keys(manifest.exports)
  .filter((subpath) => subpath !== './package.json')
  .map((subpath) => (subpath === '.' ? manifest.name : `${manifest.name}/${subpath.slice(2)}`));

/** Imports by a runtime string, so type checking never depends on a built dist/. */
const load = (specifier: string): Promise<Record<string, unknown>> => import(specifier);

describe('package exports', () => {
  it('has the final export map and no side effects', () => {
    expect(Object.keys(manifest.exports).sort()).toEqual(
      ['.', './http', './nats', './node', './package.json', './postgres', './redis', './testing'].sort(),
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
    'bulwark/nats',
  ])('%s resolves from dist (run `npm run build` first)', async (specifier) => {
    await expect(load(specifier)).resolves.toBeDefined();
  });

  it('every subpath loads with require() from CommonJS, without a flag (require(esm), Node >= 20.19)', async () => {
    const script = fileURLToPath(new URL('./package/require-every-subpath.cjs', import.meta.url));
    // A top-level await anywhere in a module graph would fail here with ERR_REQUIRE_ASYNC_MODULE.
    const { stdout } = await promisify(execFile)(process.execPath, [script, ...specifiers]);
    const loaded = JSON.parse(stdout) as Record<string, { exports?: string[]; error?: string }>;
    for (const specifier of specifiers) {
      expect(loaded[specifier]?.error, specifier).toBeUndefined();
    }
    expect(loaded.bulwark?.exports).toEqual(expect.arrayContaining(['pipeline', 'retry', 'circuitBreaker']));
    expect(loaded['bulwark/testing']?.exports).toEqual(
      expect.arrayContaining(['FakeClock', 'chaos', 'chaosStore', 'faultProxy']),
    );
    expect(loaded['bulwark/node']?.exports).toContain('loadShedder');
    expect(loaded['bulwark/redis']?.exports).toContain('redisStores');
    expect(loaded['bulwark/http']?.exports).toContain('rateLimitMiddleware');
    expect(loaded['bulwark/nats']?.exports).toEqual(
      expect.arrayContaining(['natsJetStreamPublisher', 'jetStreamConsumer', 'deadLetterHeaders']),
    );
    expect(manifest.engines.node).toBe('>=20.19');
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
      'delays',
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
      'keyed',
      'mapConcurrentIterable',
      'mapSkip',
      'BulkheadFullError',
      'ConcurrencyLimitError',
      'LoadShedError',
      'isLoadShedError',
      'rateLimiter',
      'RateLimitedError',
      'isRateLimitedError',
      'memoryRateLimitStore',
      'telemetryOptions',
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
    const testing = await load('bulwark/testing');
    for (const name of ['rateLimitStoreConformance', 'chaos', 'chaosStore', 'faultProxy']) {
      expect(testing, name).toHaveProperty(name);
    }
    expect(Object.keys(testing.chaos as object).sort()).toEqual(['behavior', 'fault', 'latency', 'outcome']);
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

describe('published files (npm pack)', () => {
  /** The paths `npm pack` would put in the tarball, relative to the package root. */
  const packed = async (): Promise<Set<string>> => {
    const { stdout } = await promisify(execFile)('npm', ['pack', '--dry-run', '--json', '--ignore-scripts'], {
      cwd: root,
    });
    const [pack] = JSON.parse(stdout) as { files: { path: string }[] }[];
    return new Set(pack?.files.map((file) => file.path));
  };

  it('ships the sources every source map and declaration map points to, and no tests', async () => {
    const files = await packed();
    const maps = [...files].filter((path) => path.endsWith('.map'));
    expect(maps).toContain('dist/index.js.map');
    expect(maps, 'declaration maps, for go-to-definition into src/').toContain('dist/index.d.ts.map');
    const missing: string[] = [];
    for (const map of maps) {
      const { sources, sourceRoot = '' } = JSON.parse(await readFile(join(root, map), 'utf8')) as {
        sources: string[];
        sourceRoot?: string;
      };
      for (const source of sources) {
        const shipped = normalize(join(dirname(map), sourceRoot, source));
        if (!files.has(shipped)) missing.push(`${map} -> ${shipped}`);
      }
    }
    expect(missing).toEqual([]);
    expect([...files].filter((path) => /\.test\.|(^|\/)test\//.test(path))).toEqual([]);
  }, 60_000);

  it('ships a LICENSE matching package.json and names its repository', async () => {
    const files = await packed();
    expect(files).toContain('LICENSE');
    expect(files).toContain('README.md');
    expect(manifest.license).toBe('MIT');
    const license = await readFile(join(root, 'LICENSE'), 'utf8');
    expect(license).toMatch(/^MIT License/);
    expect(license).toContain('Copyright (c) 2026 the bulwark authors');
    expect(manifest.repository).toEqual({ type: 'git', url: expect.stringMatching(/^git\+https:\/\//) });
  }, 60_000);
});
