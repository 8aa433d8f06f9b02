/**
 * The HTTP adapters with limiters combined by `rateLimiter.all()`: every limit stated in
 * `RateLimit-Policy`, the binding one in `RateLimit`, refusals 429 with the longest wait; and the
 * headers function itself on combined decisions.
 */
import { createServer } from 'node:http';
import express from 'express';
import Fastify from 'fastify';
import { describe, expect, it } from 'vitest';
import { afterThisTest, listen } from '../../test/support/http-server.js';
import { memoryRateLimitStore } from '../rate-limit/memory-store.js';
import { rateLimiter } from '../rate-limit/rate-limiter.js';
import { FakeClock } from '../testing/fake-clock.js';
import { fastifyRateLimit, rateLimitMiddleware } from './rate-limit.js';
import { legacyRateLimitHeaders, rateLimitHeaders } from './rate-limit-headers.js';

/** 2 per second and 3 per minute on one in-memory store, combined. */
function limits() {
  const clock = new FakeClock();
  const store = memoryRateLimitStore({ clock });
  const second = rateLimiter({ name: 'second', limit: 2, periodMs: 1_000, store, clock });
  const minute = rateLimiter({ name: 'minute', limit: 3, periodMs: 60_000, store, clock });
  return { clock, second, minute, both: rateLimiter.all([second, minute]) };
}

/** Three requests one after the other: status, RateLimit, RateLimit-Policy and Retry-After of each. */
async function threeRequests(url: string) {
  const seen = [];
  for (let i = 0; i < 3; i++) {
    const response = await fetch(url, { headers: { 'x-user': 'u1' } });
    await response.arrayBuffer();
    seen.push([
      response.status,
      response.headers.get('ratelimit'),
      response.headers.get('ratelimit-policy'),
      response.headers.get('retry-after'),
    ]);
  }
  return seen;
}

const policy = '"second";q=2;w=1, "minute";q=3;w=60';
const expected = [
  [200, '"second";r=1;t=1', policy, null],
  [200, '"second";r=0;t=1', policy, null],
  [429, '"second";r=0;t=1', policy, '1'],
];

describe('HTTP adapters with rateLimiter.all()', () => {
  it('node:http and Express: every limit in RateLimit-Policy, the binding one in RateLimit, 429 when one refuses', async () => {
    const node = limits();
    const middleware = rateLimitMiddleware({
      limiter: node.both,
      key: (req) => String(req.headers['x-user']),
      clock: node.clock,
    });
    const { url: nodeUrl } = await listen(
      createServer((req, res) => middleware(req, res, () => res.end('ok'))),
    );
    expect(await threeRequests(nodeUrl)).toEqual(expected);

    const viaExpress = limits();
    const app = express();
    app.use(rateLimitMiddleware({ limiter: viaExpress.both, key: (req) => String(req.headers['x-user']) }));
    app.get('/', (_req, res) => res.send('ok'));
    const { url: expressUrl } = await listen(createServer(app));
    expect(await threeRequests(expressUrl)).toEqual(expected);
    // The refusal took nothing: the minute limit still has the unit the second one refused.
    expect((await viaExpress.minute.peek('u1')).remaining).toBe(1);
  });

  it('Fastify: the same headers and refusal', async () => {
    const { both } = limits();
    const app = Fastify();
    afterThisTest(() => app.close());
    await app.register(fastifyRateLimit, { limiter: both, key: (req) => String(req.headers['x-user']) });
    app.get('/', async () => 'ok');
    const url = await app.listen({ port: 0, host: '127.0.0.1' });
    expect(await threeRequests(url)).toEqual(expected);
  });

  it('refuses an option that is neither a limiter nor a combined one', () => {
    const key = () => 'k';
    expect(() => rateLimitMiddleware({ limiter: { take: () => null, rules: [] } as never, key })).toThrow(
      /"limiter" to be a rate limiter from rateLimiter\(\) or rateLimiter.all\(\)/,
    );
    expect(() =>
      rateLimitMiddleware({ limiter: { take: () => null, rules: [{ name: 1 }] } as never, key }),
    ).toThrow(TypeError);
    expect(() => rateLimitMiddleware({ limiter: { rules: limits().both.rules } as never, key })).toThrow(
      TypeError,
    );
  });
});

describe('rateLimitHeaders with several rules', () => {
  it('names the binding limit with its own numbers; legacy headers carry the combined ones', async () => {
    const { clock, both } = limits();
    await both.take('k', 2);
    const refused = await both.take('k');
    expect(rateLimitHeaders(both.rules, refused)).toEqual({
      'ratelimit-policy': policy,
      ratelimit: '"second";r=0;t=1',
    });
    expect(legacyRateLimitHeaders(refused, clock.now())).toEqual({
      'x-ratelimit-limit': '2',
      'x-ratelimit-remaining': '0',
      'x-ratelimit-reset': '40',
    });
  });

  it('a plain decision under a list of rules names the first; a fail-open one states only the policies', () => {
    const { both } = limits();
    const plain = { allowed: true, remaining: 1, retryAfterMs: 0, resetMs: 500, limit: 2 };
    expect(rateLimitHeaders(both.rules, plain).ratelimit).toBe('"second";r=1;t=1');
    expect(rateLimitHeaders(both.rules, { ...plain, fallback: 'fail-open' })).toEqual({
      'ratelimit-policy': policy,
    });
  });
});
