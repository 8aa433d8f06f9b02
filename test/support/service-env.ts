/**
 * Where the integration-test services are and whether they are reachable: their URLs
 * (`REDIS_URL`, `DATABASE_URL`), whether an unreachable one fails the run, the reachability
 * probes, the loud skip/fail report, and small helpers shared by the fixtures.
 */
import { randomBytes } from 'node:crypto';
import { relative } from 'node:path';
import { Redis } from 'ioredis';
import pg from 'pg';
import { expect } from 'vitest';
import { forceEndClient } from './pg-teardown.js';

/** Redis used by integration tests: `REDIS_URL`, default `redis://127.0.0.1:6379`. */
export const redisUrl: string = process.env.REDIS_URL || 'redis://127.0.0.1:6379';

/**
 * PostgreSQL used by integration tests: `DATABASE_URL`, default
 * `postgres://postgres@127.0.0.1:5432/test`.
 */
export const databaseUrl: string = process.env.DATABASE_URL || 'postgres://postgres@127.0.0.1:5432/test';

/**
 * Whether an unreachable service fails the run instead of skipping the files that need it:
 * `CI=true` or `REQUIRE_SERVICES=1`.
 */
export const requireServices: boolean = process.env.CI === 'true' || process.env.REQUIRE_SERVICES === '1';

/** Longest a reachability probe waits for a service, in milliseconds. */
export const probeTimeoutMs = 1_000;

/** Host and TCP port of a service, e.g. the target of a fault proxy. */
export interface ServiceTarget {
  readonly host: string;
  readonly port: number;
}

/** Outcome of {@link probeRedis} / {@link probePostgres}. */
export type ProbeResult =
  | { readonly reachable: true }
  | { readonly reachable: false; readonly reason: string };

/**
 * Host and port of a `redis://` or `postgres://` URL (brackets of an IPv6 host removed).
 *
 * @param url - the service URL
 * @param defaultPort - the port when the URL names none
 * @throws TypeError when `url` is not a URL
 */
export function targetOf(url: string, defaultPort: number): ServiceTarget {
  const parsed = new URL(url);
  const host = parsed.hostname.replace(/^\[(.*)\]$/, '$1') || '127.0.0.1';
  return { host, port: parsed.port === '' ? defaultPort : Number(parsed.port) };
}

/** `url` with its password replaced by `***`, for messages. */
export function redactUrl(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.password !== '') parsed.password = '***';
    return parsed.toString();
  } catch {
    return url;
  }
}

function describeError(error: unknown): string {
  if (error instanceof Error) {
    const code = (error as { code?: unknown }).code;
    const detail = error.message || error.name;
    return typeof code === 'string' && !detail.includes(code) ? `${code}: ${detail}` : detail;
  }
  return String(error);
}

function withDeadline<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: no answer within ${ms} ms`)), ms);
  });
  return Promise.race([promise, deadline]).finally(() => clearTimeout(timer));
}

/**
 * Whether Redis answers `PING` at `url` within `timeoutMs`. Never throws; the probe's
 * connection is always closed.
 *
 * @param url - default {@link redisUrl}
 * @param timeoutMs - default {@link probeTimeoutMs}
 */
export async function probeRedis(
  url: string = redisUrl,
  timeoutMs: number = probeTimeoutMs,
): Promise<ProbeResult> {
  const client = new Redis(url, {
    lazyConnect: true,
    connectTimeout: timeoutMs,
    commandTimeout: timeoutMs,
    maxRetriesPerRequest: 0,
    enableOfflineQueue: false,
    retryStrategy: () => null,
  });
  // The socket error (ECONNREFUSED, ENOTFOUND, ...) says more than connect()'s "Connection is closed.".
  let socketError: unknown;
  client.on('error', (error) => {
    socketError ??= error;
  });
  try {
    await withDeadline(
      (async () => {
        await client.connect();
        await client.ping();
      })(),
      timeoutMs,
      'Redis probe',
    );
    return { reachable: true };
  } catch (error) {
    return { reachable: false, reason: describeError(socketError ?? error) };
  } finally {
    client.disconnect();
  }
}

/**
 * Whether PostgreSQL accepts a connection and answers `SELECT 1` at `url` within `timeoutMs`.
 * Never throws; the probe's connection is always closed.
 *
 * @param url - default {@link databaseUrl}
 * @param timeoutMs - default {@link probeTimeoutMs}
 */
export async function probePostgres(
  url: string = databaseUrl,
  timeoutMs: number = probeTimeoutMs,
): Promise<ProbeResult> {
  const client = new pg.Client({
    connectionString: url,
    connectionTimeoutMillis: timeoutMs,
    query_timeout: timeoutMs,
  });
  client.on('error', () => {});
  try {
    await withDeadline(
      (async () => {
        await client.connect();
        await client.query('SELECT 1');
      })(),
      timeoutMs,
      'PostgreSQL probe',
    );
    return { reachable: true };
  } catch (error) {
    return { reachable: false, reason: describeError(error) };
  } finally {
    await forceEndClient(client, 500);
  }
}

/** What {@link reportUnavailable} says about a service. */
export interface ServiceInfo {
  /** Display name, e.g. `Redis`. */
  readonly name: string;
  /** The URL that was probed (its password is redacted in messages). */
  readonly url: string;
  /** The environment variable that overrides the URL. */
  readonly envVar: string;
  /** Commands that start the service locally. */
  readonly start: readonly string[];
}

function currentTestFile(): string | undefined {
  try {
    const path = expect.getState().testPath;
    return path === undefined ? undefined : relative(process.cwd(), path);
  } catch {
    return undefined;
  }
}

/**
 * Reports an unreachable service: throws when it is required, otherwise prints a loud notice on
 * stderr. Exported for helpers that probe other services the same way.
 *
 * @param required - @default {@link requireServices}
 * @throws Error naming the service, the URL, the reason and how to start it, when `required`
 */
export function reportUnavailable(
  service: ServiceInfo,
  reason: string,
  required: boolean = requireServices,
): void {
  const file = currentTestFile();
  const lines = [
    `${service.name} is unreachable at ${redactUrl(service.url)} (${reason}).`,
    required
      ? `It is required here (CI=true or REQUIRE_SERVICES=1), so ${file ?? 'this test file'} FAILS.`
      : `SKIPPING the ${service.name} tests of ${file ?? 'this test file'}.`,
    'Start it with one of:',
    ...service.start.map((command) => `  ${command}`),
    `or point ${service.envVar} at a running ${service.name}.`,
  ];
  if (required) throw new Error(lines.join('\n'));
  lines.push('Set REQUIRE_SERVICES=1 to make this a failure instead of a skip.');
  const width = Math.max(...lines.map((line) => line.length)) + 4;
  const bar = '!'.repeat(width);
  const box = [bar, ...lines.map((line) => `!! ${line}`), bar].join('\n');
  process.stderr.write(`\n${box}\n\n`);
}

/** How {@link reportUnavailable} describes Redis. */
export const redisInfo: ServiceInfo = {
  name: 'Redis',
  url: redisUrl,
  envVar: 'REDIS_URL',
  start: ['docker run --rm -d -p 6379:6379 redis:7', 'redis-server --daemonize yes'],
};

/** How {@link reportUnavailable} describes PostgreSQL. */
export const postgresInfo: ServiceInfo = {
  name: 'PostgreSQL',
  url: databaseUrl,
  envVar: 'DATABASE_URL',
  start: [
    'docker run --rm -d -p 5432:5432 -e POSTGRES_HOST_AUTH_METHOD=trust -e POSTGRES_DB=test postgres:16',
    'sudo service postgresql start && createdb -U postgres test',
  ],
};

/** A fresh random token of `bytes` random bytes in hex, for names that must not collide. */
export function uniqueToken(bytes = 6): string {
  return randomBytes(bytes).toString('hex');
}

const fixtureNames: Readonly<Record<string, string>> = { Redis: 'redis', PostgreSQL: 'pg', NATS: 'nats' };

/** The error a fixture member throws when its service is not available. */
export function unavailableError(service: string): Error {
  return new Error(
    `${service} is not available: wrap the suites of this file in ${fixtureNames[service] ?? 'pg'}.describe(...) ` +
      'or describe.skipIf(!service.available)(...)',
  );
}

/** The error a per-test fixture member throws outside a test. */
export function outsideTestError(member: string): Error {
  return new Error(`${member} is per test: use it inside a test or beforeEach/afterEach, not at file level`);
}
