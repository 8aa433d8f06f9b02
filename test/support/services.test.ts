import { execFile } from 'node:child_process';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Redis } from 'ioredis';
import type { Pool } from 'pg';
import { beforeAll, describe, expect, it } from 'vitest';
import {
  deleteByPrefix,
  probePostgres,
  probeRedis,
  redactUrl,
  reportUnavailable,
  scanKeys,
  targetOf,
  uniqueToken,
  usePostgres,
  useRedis,
} from './services.js';

const redis = await useRedis();
const pg = await usePostgres();

function thrown(action: () => unknown): unknown {
  try {
    action();
  } catch (error) {
    return error;
  }
  return undefined;
}

redis.describe('useRedis: per-test isolation against real Redis', () => {
  let outsideTest: unknown;
  let fileClient: Redis;
  let previous: { prefix: string; client: Redis } | undefined;

  beforeAll(() => {
    outsideTest = thrown(() => redis.prefix);
    fileClient = redis.client();
  });

  it('refuses the per-test prefix outside a test', () => {
    expect(outsideTest).toBeInstanceOf(Error);
    expect((outsideTest as Error).message).toMatch(/redis\.prefix is per test/);
  });

  it('gives the test a t:<random>: prefix and keys under it', async () => {
    expect(redis.prefix).toMatch(/^t:[0-9a-f]{12}:$/);
    expect(redis.key('bucket', 7)).toBe(`${redis.prefix}bucket:7`);
    const client = redis.client();
    await client.set(redis.key('a'), '1');
    await client.set(redis.key('b'), '2', 'PX', 60_000);
    expect(await redis.keys()).toEqual([redis.key('a'), redis.key('b')]);
    previous = { prefix: redis.prefix, client };
  });

  it('gives the next test a different prefix; the previous test keys are gone and its clients closed', async () => {
    expect(previous).toBeDefined();
    expect(redis.prefix).not.toBe(previous?.prefix);
    expect(await scanKeys(redis.admin(), previous?.prefix ?? '')).toEqual([]);
    expect(previous?.client.status).toBe('end');
    expect(await fileClient.ping()).toBe('PONG');
  });

  it('deleteByPrefix deletes only keys under the prefix, taking glob characters literally', async () => {
    const admin = redis.admin();
    await admin.mset(
      redis.key('a*', 1),
      'x',
      redis.key('a*', 2),
      'x',
      redis.key('ab'),
      'x',
      redis.key('a?'),
      'x',
    );
    expect(await deleteByPrefix(admin, redis.key('a*'))).toBe(2);
    expect(await redis.keys()).toEqual([redis.key('a?'), redis.key('ab')].sort());
    expect(await deleteByPrefix(admin, redis.key('zzz'))).toBe(0);
    await expect(deleteByPrefix(admin, '')).rejects.toThrow(TypeError);
  });
});

pg.describe('usePostgres: per-test schema against real PostgreSQL', () => {
  let outsideTest: unknown;
  let previous: { schema: string; pool: Pool } | undefined;

  beforeAll(() => {
    outsideTest = thrown(() => pg.schema);
  });

  it('refuses the per-test schema outside a test', () => {
    expect((outsideTest as Error).message).toMatch(/pg\.schema is per test/);
  });

  it('creates a t_<random> schema that pools and clients use as search_path', async () => {
    expect(pg.schema).toMatch(/^t_[0-9a-f]{12}$/);
    const pool = pg.pool();
    await pool.query('CREATE TABLE items (id int PRIMARY KEY)');
    await pool.query('INSERT INTO items VALUES (1), (2)');
    const { rows } = await pool.query<{ schema: string; n: string }>(
      'SELECT current_schema() AS schema, (SELECT count(*) FROM items) AS n',
    );
    expect(rows[0]).toEqual({ schema: pg.schema, n: '2' });

    const client = pg.client();
    await client.connect();
    const fromClient = await client.query<{ n: string }>(`SELECT count(*) AS n FROM ${pg.schema}.items`);
    expect(fromClient.rows[0]?.n).toBe('2');
    previous = { schema: pg.schema, pool };
  });

  it('gives the next test a fresh schema; the previous one is dropped and its pool ended', async () => {
    expect(previous).toBeDefined();
    expect(pg.schema).not.toBe(previous?.schema);
    const { rows } = await pg
      .admin()
      .query<{ n: string }>('SELECT count(*) AS n FROM information_schema.schemata WHERE schema_name = $1', [
        previous?.schema,
      ]);
    expect(rows[0]?.n).toBe('0');
    expect(previous?.pool.ended).toBe(true);
  });

  it('config() is plain data with the search_path, merging your own options', () => {
    const config = pg.config({ max: 3, options: '-c statement_timeout=500' });
    expect(config).toEqual({
      connectionString: pg.url,
      max: 3,
      options: `-c search_path=${pg.schema} -c statement_timeout=500`,
    });
    expect(structuredClone(config)).toEqual(config);
  });

  it('ends a pool whose client is still checked out', async () => {
    const pool = pg.pool();
    const leaked = await pool.connect();
    await leaked.query('SELECT 1');
    previous = { schema: pg.schema, pool };
  });

  it('(after the leaked client) the pool was ended anyway', () => {
    expect(previous?.pool.ending).toBe(true);
  });
});

describe('probes and URL helpers (no service needed)', () => {
  it('probeRedis and probePostgres report an unreachable service quickly, with the reason', async () => {
    const [r, p] = await Promise.all([
      probeRedis('redis://127.0.0.1:1'),
      probePostgres('postgres://postgres@127.0.0.1:1/test'),
    ]);
    expect(r).toEqual({ reachable: false, reason: expect.stringMatching(/ECONNREFUSED/) });
    expect(p).toEqual({ reachable: false, reason: expect.stringMatching(/ECONNREFUSED/) });
  });

  it('targetOf and redactUrl read service URLs', () => {
    expect(targetOf('redis://127.0.0.1:6380/1', 6379)).toEqual({ host: '127.0.0.1', port: 6380 });
    expect(targetOf('postgres://u@db/test', 5432)).toEqual({ host: 'db', port: 5432 });
    expect(targetOf('redis://[::1]:6379', 6379)).toEqual({ host: '::1', port: 6379 });
    expect(redactUrl('redis://user:secret@host:6379')).toBe('redis://user:***@host:6379');
    expect(uniqueToken()).not.toBe(uniqueToken());
  });
});

const repoRoot = fileURLToPath(new URL('../../', import.meta.url));
const vitestBin = join(dirname(createRequire(import.meta.url).resolve('vitest/package.json')), 'vitest.mjs');

/** Runs the fixture file in a child vitest with `env` and returns its exit code and output. */
function runFixture(env: Record<string, string>): Promise<{ code: number; output: string }> {
  const childEnv: NodeJS.ProcessEnv = { ...process.env, NO_COLOR: '1', ...env };
  for (const name of Object.keys(childEnv)) {
    if (name.startsWith('VITEST') || name === 'CI' || name === 'REQUIRE_SERVICES' || name === 'FORCE_COLOR') {
      delete childEnv[name];
    }
  }
  Object.assign(childEnv, env);
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [vitestBin, 'run', '--config', 'test/support/fixtures/vitest.config.ts'],
      { cwd: repoRoot, env: childEnv, timeout: 15_000 },
      (error, stdout, stderr) => {
        const code = error === null ? 0 : typeof error.code === 'number' ? error.code : -1;
        resolve({ code, output: `${stdout}\n${stderr}` });
      },
    );
  });
}

describe('a file that needs an unreachable service', () => {
  it('is skipped (child vitest) with a loud notice naming the service, its URL and how to start it', async () => {
    const { code, output } = await runFixture({ REDIS_URL: 'redis://127.0.0.1:1' });
    expect(code, output).toBe(0);
    expect(output).toContain('Redis is unreachable at redis://127.0.0.1:1 (connect ECONNREFUSED');
    expect(output).toContain('SKIPPING the Redis tests of test/support/fixtures/needs-services.fixture.ts');
    expect(output).toContain('docker run --rm -d -p 6379:6379 redis:7');
    expect(output).toMatch(/Tests\s+1 passed \| 1 skipped|Tests\s+2 skipped/);
  });

  it('fails with that message when services are required (CI=true or REQUIRE_SERVICES=1)', () => {
    const service = {
      name: 'Redis',
      url: 'redis://:pw@127.0.0.1:1',
      envVar: 'REDIS_URL',
      start: ['redis-server'],
    };
    expect(() => reportUnavailable(service, 'connect ECONNREFUSED 127.0.0.1:1', true)).toThrow(
      /Redis is unreachable at redis:\/\/:\*\*\*@127\.0\.0\.1:1 \(connect ECONNREFUSED 127\.0\.0\.1:1\)\.\nIt is required here \(CI=true or REQUIRE_SERVICES=1\), so test\/support\/services\.test\.ts FAILS\.\nStart it with one of:\n {2}redis-server\nor point REDIS_URL at a running Redis\./,
    );
  });
});
