import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { BulkheadFullError, ConcurrencyLimitError, LoadShedError } from '../admission/errors.js';
import { CircuitOpenError } from '../circuit-breaker/errors.js';
import { RateLimitedError } from '../rate-limit/errors.js';
import { RetriesExhaustedError } from '../retry/errors.js';
import { classify } from './classify.js';
import { RejectedError, ResilienceError, StoreUnavailableError, TimeoutError } from './errors.js';
import { fromHttpStatus, toHttpStatus, toProblem } from './http-status.js';
import { isTransientKind, type Kind, kinds } from './kind.js';

function err(fields: Record<string, unknown>, message = 'boom'): Error {
  return Object.assign(new Error(message), fields);
}

describe('toHttpStatus', () => {
  it.each<[Kind, number]>([
    ['invalid', 400],
    ['unauthorized', 401],
    ['forbidden', 403],
    ['not_found', 404],
    ['conflict', 409],
    ['rate_limited', 429],
    ['canceled', 499],
    ['internal', 500],
    ['unavailable', 503],
    ['overloaded', 503],
    ['timeout', 504],
    ['transient', 503],
  ])('%s → %i', (kind, status) => {
    expect(toHttpStatus(kind)).toBe(status);
  });

  it('has a status for every kind', () => {
    for (const kind of kinds) expect(toHttpStatus(kind)).toBeGreaterThanOrEqual(400);
  });

  it('throws a TypeError for anything that is not a kind', () => {
    for (const bad of ['nope', 'toString', '__proto__', undefined, 404]) {
      expect(() => toHttpStatus(bad as Kind)).toThrow(TypeError);
    }
    expect(() => toHttpStatus('nope' as Kind)).toThrow('expected "kind" to be one of "transient"');
  });
});

describe('fromHttpStatus', () => {
  it.each<[number, Kind]>([
    [400, 'invalid'],
    [401, 'unauthorized'],
    [402, 'forbidden'],
    [403, 'forbidden'],
    [404, 'not_found'],
    [405, 'invalid'],
    [406, 'invalid'],
    [407, 'unauthorized'],
    [408, 'timeout'],
    [409, 'conflict'],
    [410, 'not_found'],
    [411, 'invalid'],
    [412, 'conflict'],
    [413, 'invalid'],
    [414, 'invalid'],
    [415, 'invalid'],
    [416, 'invalid'],
    [417, 'invalid'],
    [418, 'invalid'],
    [421, 'transient'],
    [422, 'invalid'],
    [423, 'conflict'],
    [424, 'invalid'],
    [425, 'transient'],
    [426, 'invalid'],
    [428, 'invalid'],
    [429, 'rate_limited'],
    [431, 'invalid'],
    [451, 'forbidden'],
    [499, 'canceled'],
    [500, 'internal'],
    [501, 'internal'],
    [502, 'unavailable'],
    [503, 'unavailable'],
    [504, 'timeout'],
    [505, 'internal'],
    [507, 'internal'],
    [508, 'internal'],
    [509, 'overloaded'],
    [511, 'unauthorized'],
    [520, 'internal'],
    [521, 'unavailable'],
    [522, 'timeout'],
    [523, 'unavailable'],
    [524, 'timeout'],
    [525, 'unavailable'],
    [529, 'overloaded'],
    [598, 'timeout'],
    [599, 'timeout'],
  ])('%i → %s', (status, kind) => {
    expect(fromHttpStatus(status)).toBe(kind);
  });

  it('throws a TypeError for statuses that are not failures or not statuses', () => {
    for (const status of [
      100,
      101,
      200,
      201,
      204,
      301,
      304,
      399,
      600,
      0,
      -404,
      404.5,
      Number.NaN,
      Infinity,
    ]) {
      expect(() => fromHttpStatus(status)).toThrow(TypeError);
    }
    expect(() => fromHttpStatus('503' as unknown as number)).toThrow(TypeError);
    expect(() => fromHttpStatus(200)).toThrow(
      'expected "status" to be an HTTP error status (an integer from 400 to 599), got 200',
    );
  });

  it('maps every error status to a kind (property)', () => {
    fc.assert(
      fc.property(fc.integer({ min: 400, max: 599 }), (status) => {
        const kind = fromHttpStatus(status);
        expect(kinds).toContain(kind);
        expect(classify({ status })).toBe(kind);
        // 4xx stays in the 4xx family except the kinds that mean "try again" or "the server failed".
        if (status < 500 && !isTransientKind(kind)) expect(toHttpStatus(kind)).toBeLessThan(500);
      }),
    );
  });

  it('round-trips every kind: fromHttpStatus(toHttpStatus(kind)) keeps its meaning', () => {
    for (const kind of kinds) {
      const back = fromHttpStatus(toHttpStatus(kind));
      // 503 is shared by transient, unavailable and overloaded: all three come back transient-ish.
      if (toHttpStatus(kind) === 503) {
        expect(back).toBe('unavailable');
        expect(isTransientKind(kind)).toBe(true);
      } else {
        expect(back).toBe(kind);
      }
      expect(isTransientKind(back)).toBe(isTransientKind(kind));
    }
  });

  it('is a fixed point on the canonical statuses: toHttpStatus(fromHttpStatus(s)) = s', () => {
    for (const status of [400, 401, 403, 404, 409, 429, 499, 500, 503, 504]) {
      expect(toHttpStatus(fromHttpStatus(status))).toBe(status);
    }
  });
});

describe('toProblem', () => {
  it('describes our errors with their message and code', () => {
    const problem = toProblem(new TimeoutError(250), { instance: '/orders/7' });
    expect(problem).toEqual({
      type: 'urn:bulwark:problem:timeout',
      title: 'Timed out',
      status: 504,
      detail: 'operation timed out after 250 ms',
      code: 'ERR_TIMEOUT',
      kind: 'timeout',
      instance: '/orders/7',
    });
  });

  it('carries retryAfterMs for transient kinds', () => {
    const limited = new RejectedError('rate limit exceeded', {
      code: 'ERR_RATE_LIMITED',
      kind: 'rate_limited',
      retryAfterMs: 1_500,
    });
    expect(toProblem(limited)).toEqual({
      type: 'urn:bulwark:problem:rate_limited',
      title: 'Too many requests',
      status: 429,
      detail: 'Too many requests; slow down and retry later.',
      code: 'ERR_RATE_LIMITED',
      kind: 'rate_limited',
      retryAfterMs: 1_500,
    });
  });

  it('reads Retry-After headers, and HTTP-dates only with nowMs', () => {
    const upstream = err({
      response: { status: 503, headers: { 'retry-after': 'Wed, 21 Oct 2015 07:28:00 GMT' } },
    });
    expect(toProblem(upstream).retryAfterMs).toBeUndefined();
    expect(toProblem(upstream, { nowMs: Date.UTC(2015, 9, 21, 7, 27, 0) }).retryAfterMs).toBe(60_000);
    expect(toProblem(err({ statusCode: 429, headers: { 'Retry-After': '2' } })).retryAfterMs).toBe(2_000);
  });

  it('gives retryAfterMs in whole milliseconds, rounded up, at most 24 h', () => {
    const wait = (retryAfterMs: number) =>
      toProblem(new ResilienceError('x', { code: 'ERR_X', kind: 'unavailable', retryAfterMs })).retryAfterMs;
    expect(wait(9_999.738)).toBe(10_000);
    expect(wait(Infinity)).toBe(86_400_000);
    expect(toProblem(err({ status: 503, headers: { 'retry-after': '99999999999' } })).retryAfterMs).toBe(
      86_400_000,
    );
  });

  it('leaves retryAfterMs out for kinds that retrying does not fix', () => {
    const error = new ResilienceError('bad', { code: 'ERR_BAD', kind: 'invalid', retryAfterMs: 5 });
    expect(toProblem(error)).not.toHaveProperty('retryAfterMs');
  });

  it('never leaks foreign messages or codes', () => {
    const pgError = err(
      { code: '23505' },
      'duplicate key value violates unique constraint "users_email_key"',
    );
    const problem = toProblem(pgError);
    expect(problem).toEqual({
      type: 'urn:bulwark:problem:conflict',
      title: 'Conflict',
      status: 409,
      detail: 'The request conflicts with the current state of the resource.',
      kind: 'conflict',
    });
    const bug = toProblem(new TypeError("Cannot read properties of undefined (reading 'password')"));
    expect(bug.status).toBe(500);
    expect(bug.detail).toBe('An internal error occurred.');
    expect(bug).not.toHaveProperty('code');
    expect(
      JSON.stringify(toProblem(err({ code: 'ECONNREFUSED' }, 'connect ECONNREFUSED 10.0.0.5:5432'))),
    ).not.toContain('10.0.0.5');
  });

  it('does not repeat the foreign message a RetriesExhaustedError quotes', () => {
    const last = err({ code: 'ECONNREFUSED' }, 'connect ECONNREFUSED 10.0.0.5:5432');
    const problem = toProblem(new RetriesExhaustedError(3, 'attempts', last, 'unavailable'));
    expect(problem.detail).toBe(
      'A service needed to handle the request is unavailable. Gave up after 3 attempts.',
    );
    expect(problem.code).toBe('ERR_RETRIES_EXHAUSTED');
    expect(problem.status).toBe(503);
    expect(JSON.stringify(problem)).not.toContain('10.0.0.5');
  });

  it('uses the message of errors marked expose: true (http-errors)', () => {
    const error = err({ status: 422, expose: true }, 'email is required');
    expect(toProblem(error).detail).toBe('email is required');
    expect(toProblem(err({ status: 422, expose: 'yes' }, 'secret')).detail).toBe('The request is not valid.');
  });

  it('never puts an internal message of our own error type in detail unless it is marked expose', () => {
    const url = 'https://api.example.com/v1/charge?api_key=sk_live_51H8secret';
    const upstream = new ResilienceError(`GET ${url} answered 503`, {
      code: 'ERR_UPSTREAM',
      kind: 'unavailable',
    });
    const problem = toProblem(upstream);
    expect(problem.detail).toBe('A service needed to handle the request is unavailable.');
    expect(problem.code).toBe('ERR_UPSTREAM');
    expect(JSON.stringify(problem)).not.toContain('sk_live');
    expect(JSON.stringify(toProblem(new Error(`GET ${url} failed`)))).not.toContain('sk_live');
    const shown = new ResilienceError('the order is already paid', {
      code: 'ERR_PAID',
      kind: 'conflict',
      expose: true,
    });
    expect(shown.expose).toBe(true);
    expect(upstream.expose).toBe(false);
    expect(toProblem(shown).detail).toBe('the order is already paid');
  });

  it('a store failure quoting its driver never reaches the client; our refusals keep their message', () => {
    const store = new StoreUnavailableError(
      'rate-limit store failed: connect ECONNREFUSED 10.0.0.5:6379',
      new Error('connect ECONNREFUSED 10.0.0.5:6379'),
    );
    expect(toProblem(store).detail).toBe('A service needed to handle the request is unavailable.');
    expect(JSON.stringify(toProblem(store))).not.toContain('10.0.0.5');
    expect(
      toProblem(new RejectedError('internal: pool 7 drained', { code: 'ERR_X', kind: 'overloaded' })).detail,
    ).toBe('The service is overloaded; retry later.');
    // Written by bulwark, with no key, user input or upstream text in them.
    expect(toProblem(new TimeoutError(250)).detail).toBe('operation timed out after 250 ms');
    expect(toProblem(new RateLimitedError('user:42', 1_000, { limit: 5, remaining: 0 })).detail).toBe(
      'rate limit exceeded; retry in 1000 ms',
    );
    expect(toProblem(new CircuitOpenError('isolated')).detail).toBe(
      'circuit isolated: calls refused until reset()',
    );
    expect(toProblem(new ConcurrencyLimitError(4)).detail).toMatch(/^concurrency limit reached/);
    expect(
      toProblem(new BulkheadFullError('queue-full', { maxConcurrent: 1, maxQueue: 0, queueTimeoutMs: 5 }))
        .detail,
    ).toMatch(/^bulkhead full/);
    expect(
      toProblem(new LoadShedError({ priority: 'low', signal: 'inFlight', ratio: 1, retryAfterMs: 1_000 }))
        .detail,
    ).toMatch(/^load shed/);
  });

  it('the cause chain never leaks, whatever it holds', () => {
    const exposedCause = err({ status: 422, expose: true }, 'cause message');
    const wrapper = new Error('wrapper: token=abc123', { cause: exposedCause });
    expect(toProblem(wrapper).detail).toBe('The request is not valid.');
    const ours = new ResilienceError('outer', {
      code: 'ERR_OUTER',
      kind: 'unavailable',
      cause: new Error('password=hunter2'),
    });
    const exposedOuter = new ResilienceError('shown', {
      code: 'ERR_OUTER',
      kind: 'unavailable',
      expose: true,
      cause: new Error('password=hunter2'),
    });
    const retried = new RetriesExhaustedError(2, 'attempts', exposedOuter, 'unavailable');
    for (const error of [wrapper, ours, exposedOuter, retried]) {
      const text = JSON.stringify(toProblem(error));
      expect(text).not.toContain('hunter2');
      expect(text).not.toContain('abc123');
      expect(text).not.toContain('cause message');
    }
  });

  it('answers for anything thrown, without throwing', () => {
    for (const value of [undefined, null, 'boom', 42, {}, Object.create(null)]) {
      expect(toProblem(value)).toEqual({
        type: 'urn:bulwark:problem:internal',
        title: 'Internal error',
        status: 500,
        detail: 'An internal error occurred.',
        kind: 'internal',
      });
    }
    const hostile = new Proxy(
      {},
      {
        get() {
          throw new Error('get');
        },
      },
    );
    expect(toProblem(hostile).status).toBe(500);
  });

  it('is consistent with classify and toHttpStatus (property)', () => {
    fc.assert(
      fc.property(fc.anything(), fc.option(fc.webPath(), { nil: undefined }), (value, instance) => {
        const problem = toProblem(value, { instance, nowMs: 0 });
        expect(problem.kind).toBe(classify(value));
        expect(problem.status).toBe(toHttpStatus(problem.kind));
        expect(problem.type).toBe(`urn:bulwark:problem:${problem.kind}`);
        expect(typeof problem.title).toBe('string');
        expect(typeof problem.detail).toBe('string');
        expect(problem.instance).toBe(instance);
        expect(JSON.parse(JSON.stringify(problem))).toEqual(problem);
      }),
    );
  });

  it('gives every kind its own type, title and a generic detail', () => {
    const titles = new Set<string>();
    for (const kind of kinds) {
      const problem = toProblem({
        [Symbol.for('bulwark.ResilienceError')]: true,
        kind,
        code: 'ERR_X',
        message: '',
      });
      expect(problem.kind).toBe(kind);
      expect(problem.detail.length).toBeGreaterThan(0);
      titles.add(problem.title);
    }
    expect(titles.size).toBe(kinds.length);
  });

  it('throws a TypeError for a bad nowMs', () => {
    expect(() => toProblem(new Error('x'), { nowMs: Number.NaN })).toThrow(TypeError);
  });
});
