/**
 * The real services of `npm start -- --workers N`: their URLs (`REDIS_URL`, `DATABASE_URL`,
 * `NATS_URL`, defaults on localhost) and a check that each answers, failing with a message that
 * says which one did not and how to point the lab at it.
 */
import { jetstreamManager } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';
import { Redis } from 'ioredis';
import pg from 'pg';
import type { ServiceUrls } from './hosts/worker-protocol.js';

/**
 * The services' URLs from `env`.
 *
 * @example
 * const urls = serviceUrls(process.env);
 */
export function serviceUrls(env: NodeJS.ProcessEnv): ServiceUrls {
  return {
    redis: env.REDIS_URL || 'redis://127.0.0.1:6379',
    postgres: env.DATABASE_URL || 'postgres://postgres@127.0.0.1:5432/test',
    nats: env.NATS_URL || 'nats://127.0.0.1:4222',
  };
}

async function redisAnswers(url: string): Promise<void> {
  const redis = new Redis(url, { lazyConnect: true, connectTimeout: 2_000, maxRetriesPerRequest: 0 });
  redis.on('error', () => undefined);
  try {
    await redis.connect();
    await redis.ping();
  } finally {
    redis.disconnect();
  }
}

async function postgresAnswers(url: string): Promise<void> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 2_000 });
  try {
    await client.connect();
    await client.query('SELECT 1');
  } finally {
    await client.end().catch(() => undefined);
  }
}

async function natsAnswers(url: string): Promise<void> {
  const nc = await connect({ servers: url, timeout: 2_000, reconnect: false });
  try {
    await jetstreamManager(nc, { timeout: 2_000 });
  } finally {
    await nc.close();
  }
}

/**
 * Resolves when Redis, PostgreSQL and NATS (with JetStream) all answer at `urls`; otherwise
 * rejects with one line per service that did not.
 *
 * @example
 * await checkServices(serviceUrls(process.env)); // Error: Redis at redis://127.0.0.1:6379 does not answer (…); set REDIS_URL
 */
export async function checkServices(urls: ServiceUrls): Promise<void> {
  const checks = [
    { name: 'Redis', url: urls.redis, variable: 'REDIS_URL', answers: redisAnswers },
    { name: 'PostgreSQL', url: urls.postgres, variable: 'DATABASE_URL', answers: postgresAnswers },
    { name: 'NATS with JetStream', url: urls.nats, variable: 'NATS_URL', answers: natsAnswers },
  ];
  const results = await Promise.allSettled(checks.map((check) => check.answers(check.url)));
  const failures = results.flatMap((result, index) => {
    if (result.status === 'fulfilled') return [];
    const { name, url, variable } = checks[index]!;
    const reason = result.reason instanceof Error ? result.reason.message : String(result.reason);
    return [
      `${name} at ${url} does not answer (${reason || 'no reason given'}); start it, or set ${variable}`,
    ];
  });
  if (failures.length > 0) throw new Error(`--workers needs real services:\n  ${failures.join('\n  ')}`);
}
