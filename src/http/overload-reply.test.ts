import { describe, expect, it } from 'vitest';
import { BulkheadFullError, LoadShedError } from '../admission/errors.js';
import { ResilienceError } from '../core/errors.js';
import { readOptions } from '../core/read-options.js';
import { seededRandom } from '../testing/seeded-random.js';
import { type OverloadReplyOptions, overloadReplier, overloadReplyFields } from './overload-reply.js';

/** A replier from raw options, read the way the adapters read them. */
const replier = (options: OverloadReplyOptions) =>
  overloadReplier(readOptions('overload reply options', options, overloadReplyFields));

const shed = (retryAfterMs: number) =>
  new LoadShedError({ priority: 'low', signal: 'cpuPercent', ratio: 0.8, retryAfterMs });

describe('overloadReplier', () => {
  it.each([
    [{ retryAfterMs: -1 }, /"retryAfterMs" to be a non-negative finite number, got -1/],
    [{ retryAfterMs: Infinity }, /"retryAfterMs"/],
    [{ jitter: -0.1 }, /"jitter" to be a non-negative finite number/],
    [{ jitter: Number.NaN }, /"jitter"/],
    [{ random: 0.5 }, /"random" to be a function, got 0.5/],
  ])('rejects %j with a TypeError', (options, message) => {
    expect(() => replier(options as never)).toThrow(TypeError);
    expect(() => replier(options as never)).toThrow(message);
  });

  it('Retry-After is the refusal’s own delay plus a jitter of whole seconds, and the body agrees', () => {
    const low = replier({ random: () => 0 }).reply(shed(3_000), '/x');
    expect(low.status).toBe(503);
    expect(low.headers).toEqual({ 'content-type': 'application/problem+json', 'retry-after': '3' });
    expect(low.body).toMatchObject({ code: 'ERR_LOAD_SHED', retryAfterMs: 3_000, instance: '/x' });
    const high = replier({ random: () => 0.999_999 }).reply(shed(3_000), '/x');
    // ⌈3 s⌉ + ⌈3 s × 0.5⌉ = 3 + 2
    expect(high.headers['retry-after']).toBe('5');
    expect(high.body.retryAfterMs).toBe(5_000);
  });

  it('falls back to retryAfterMs for refusals without a delay (a full bulkhead)', () => {
    const full = new BulkheadFullError('queue-full', {
      maxConcurrent: 1,
      maxQueue: 0,
      queueTimeoutMs: Infinity,
    });
    const reply = replier({ retryAfterMs: 10_000, jitter: 0, random: () => 0.9 }).reply(full, undefined);
    expect(reply.status).toBe(503);
    expect(reply.headers['retry-after']).toBe('10');
    expect(reply.body).toMatchObject({ code: 'ERR_BULKHEAD_FULL', retryAfterMs: 10_000 });
    expect(reply.body).not.toHaveProperty('instance');
  });

  it('spreads clients over the whole range, never below the base and at least one second', () => {
    const seeded = replier({ random: seededRandom(7), jitter: 1 });
    const seen = new Set<string>();
    for (let i = 0; i < 500; i++) seen.add(seeded.reply(shed(2_000), undefined).headers['retry-after']!);
    expect([...seen].sort()).toEqual(['2', '3', '4']);
    const zero = replier({ random: () => 0.5 }).reply(shed(0), undefined);
    expect(zero.headers['retry-after']).toBe('1');
  });

  it('clamps Retry-After to 24 h, jitter included', () => {
    const huge = new ResilienceError('busy', { code: 'ERR_BUSY', kind: 'overloaded', retryAfterMs: 1e25 });
    const reply = replier({ random: () => 0.999 }).reply(huge, undefined);
    expect(reply.headers['retry-after']).toBe('86400');
    expect(reply.body.retryAfterMs).toBe(86_400_000);
    const nearMax = replier({ random: () => 0.999 }).reply(shed(86_000_000), undefined);
    expect(nearMax.headers['retry-after']).toBe('86400');
  });

  it('a broken random source (NaN, out of range) means no jitter, never a bad header', () => {
    for (const value of [Number.NaN, -1, 7]) {
      const reply = replier({ random: () => value }).reply(shed(1_000), undefined);
      expect(reply.headers['retry-after']).toBe('1');
      // A negative draw never shortens the wait below the base.
      expect(replier({ random: () => value }).reply(shed(5_000), undefined).headers['retry-after']).toBe('5');
    }
  });

  it('non-transient errors keep their status and get no Retry-After', () => {
    const invalid = new ResilienceError('bad', { code: 'ERR_BAD', kind: 'invalid', retryAfterMs: 5 });
    const reply = replier({}).reply(invalid, undefined);
    expect(reply.status).toBe(400);
    expect(reply.headers).not.toHaveProperty('retry-after');
  });
});
