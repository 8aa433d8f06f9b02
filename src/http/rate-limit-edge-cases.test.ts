/**
 * rateLimitMiddleware against the limiters it must also accept (a duck-typed one from another copy
 * of bulwark, answering synchronously or through a promise) and the ways a request fails instead of
 * being limited: a bad key, a throwing cost, a limiter that throws or rejects.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { describe, expect, it } from 'vitest';
import { StoreUnavailableError } from '../core/errors.js';
import { rateLimiter } from '../rate-limit/rate-limiter.js';
import type { RateLimitResult } from '../rate-limit/store.js';
import { FakeClock } from '../testing/fake-clock.js';
import { rateLimitMiddleware } from './rate-limit.js';

/** How the middleware ended one request: `next()`, `next(error)`, or an answer it wrote. */
type Ending =
  | { readonly via: 'next'; readonly headers: Record<string, unknown> }
  | { readonly via: 'next(error)'; readonly error: unknown }
  | {
      readonly via: 'answer';
      readonly status: number;
      readonly headers: Record<string, string>;
      readonly body: unknown;
    };

/** Runs `middleware` on one request for `url` against a stand-in response, until it ends it. */
function handle(middleware: ReturnType<typeof rateLimitMiddleware>, url = '/orders'): Promise<Ending> {
  return new Promise((resolve) => {
    const set: Record<string, unknown> = {};
    let status = 0;
    let headers: Record<string, string> = {};
    const response = {
      headersSent: false,
      setHeader: (name: string, value: unknown) => {
        set[name] = value;
      },
      writeHead: (code: number, values: Record<string, string>) => {
        status = code;
        headers = values;
      },
      end: (body: string) => resolve({ via: 'answer', status, headers, body: JSON.parse(body) }),
    } as unknown as ServerResponse;
    middleware({ url, headers: {} } as IncomingMessage, response, (error?: unknown) =>
      resolve(error === undefined ? { via: 'next', headers: set } : { via: 'next(error)', error }),
    );
  });
}

const allowed: RateLimitResult = { allowed: true, remaining: 4, retryAfterMs: 0, resetMs: 1_000, limit: 5 };
const rule = rateLimiter({ name: 'foreign', limit: 5, periodMs: 1_000 }).rule;

/** A limiter from "another copy of bulwark": only `rule` and `take`. */
const foreignLimiter = (take: () => RateLimitResult | Promise<RateLimitResult>) =>
  ({ rule, take }) as unknown as ReturnType<typeof rateLimiter>;

const errorOf = (ending: Ending) => (ending.via === 'next(error)' ? (ending.error as Error) : undefined);

describe('rateLimitMiddleware: the limiters it accepts', () => {
  it('a duck-typed limiter that decides synchronously lets the request on with its headers', async () => {
    const ending = await handle(
      rateLimitMiddleware({ limiter: foreignLimiter(() => allowed), key: () => 'k' }),
    );
    expect(ending).toEqual({
      via: 'next',
      headers: { 'ratelimit-policy': '"foreign";q=5;w=1', ratelimit: '"foreign";r=4;t=1' },
    });
  });

  it.each([
    ['take but no rule', { take: () => allowed }],
    ['take and a rule without a name', { take: () => allowed, rule: {} }],
    ['a rule but no take', { rule }],
    ['null', null],
  ])('refuses a limiter with %s, naming the option', (_name, limiter) => {
    expect(() => rateLimitMiddleware({ limiter: limiter as never, key: () => 'k' })).toThrow(
      /^expected "limiter" to be a rate limiter from rateLimiter\(\) or rateLimiter\.all\(\), got /,
    );
  });
});

describe('rateLimitMiddleware: a request that cannot be limited fails, it is never let through', () => {
  const limiter = rateLimiter({ limit: 5, periodMs: 1_000, clock: new FakeClock() });

  it('a key of undefined fails the request with the whole explanation', async () => {
    const error = errorOf(await handle(rateLimitMiddleware({ limiter, key: () => undefined })));
    expect(error).toBeInstanceOf(TypeError);
    expect(error?.message).toBe(
      'the rate-limit "key" function returned undefined for this request (req.socket.remoteAddress ' +
        'is undefined once the client hung up): a request without a key is refused, never let ' +
        'through unlimited; use "skip" to exempt requests',
    );
  });

  it.each([
    ['an empty string', '', 'got ""'],
    ['a number', 42, 'got 42'],
  ])('a key that is %s fails the request', async (_name, key, got) => {
    const error = errorOf(await handle(rateLimitMiddleware({ limiter, key: () => key as never })));
    expect(error?.message).toBe(
      `expected the rate-limit "key" function to return a non-empty string, ${got}`,
    );
  });

  it('a cost function that throws fails the request with its error', async () => {
    const bug = new Error('cost bug');
    const ending = await handle(
      rateLimitMiddleware({
        limiter,
        key: () => 'k',
        cost: () => {
          throw bug;
        },
      }),
    );
    expect(errorOf(ending)).toBe(bug);
  });

  it('a limiter whose take throws fails the request with its error', async () => {
    const bug = new Error('take bug');
    const limiterThatThrows = foreignLimiter(() => {
      throw bug;
    });
    expect(errorOf(await handle(rateLimitMiddleware({ limiter: limiterThatThrows, key: () => 'k' })))).toBe(
      bug,
    );
  });

  it('a rejection that is not a store outage fails the request; a store outage is answered 503', async () => {
    const bug = new Error('limiter bug');
    const failing = foreignLimiter(() => Promise.reject(bug));
    expect(errorOf(await handle(rateLimitMiddleware({ limiter: failing, key: () => 'k' })))).toBe(bug);
    const down = foreignLimiter(() => Promise.reject(new StoreUnavailableError('rate-limit store failed')));
    const answer = await handle(rateLimitMiddleware({ limiter: down, key: () => 'k' }));
    expect(answer).toMatchObject({ via: 'answer', status: 503, body: { code: 'ERR_STORE_UNAVAILABLE' } });
  });
});
