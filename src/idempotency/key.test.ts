import { describe, expect, it } from 'vitest';
import { ResilienceError } from '../core/errors.js';
import { pipeline } from '../core/pipeline.js';
import { hedge } from '../hedge/hedge.js';
import { constant } from '../retry/backoff.js';
import { retry } from '../retry/retry.js';
import { FakeClock } from '../testing/fake-clock.js';
import { idempotencyKey, withIdempotencyKey } from './key.js';

const transient = () => new ResilienceError('flaky', { code: 'E_FLAKY', kind: 'transient' });

describe('idempotencyKey', () => {
  it('is deterministic: the same parts give the same key, whatever the key order inside objects', async () => {
    const a = await idempotencyKey('charge', { order: 42, cents: 100 });
    expect(a).toMatch(/^[0-9a-f]{64}$/);
    expect(await idempotencyKey('charge', { cents: 100, order: 42 })).toBe(a);
    expect(await idempotencyKey('charge', { order: 43, cents: 100 })).not.toBe(a);
    expect(await idempotencyKey({ order: 42, cents: 100 }, 'charge')).not.toBe(a);
  });

  it('keeps parts apart: ("ab") and ("a", "b") differ', async () => {
    expect(await idempotencyKey('ab')).not.toBe(await idempotencyKey('a', 'b'));
  });

  it('refuses no parts, or a part that is not JSON', () => {
    expect(() => idempotencyKey()).toThrow(/at least one part/);
    expect(() => idempotencyKey('x', undefined)).toThrow(TypeError);
    expect(() => idempotencyKey(Number.NaN)).toThrow(TypeError);
  });
});

describe('withIdempotencyKey', () => {
  it('every retry of one call carries the same key; the next call gets another', async () => {
    const clock = new FakeClock();
    const keyed = withIdempotencyKey(retry({ maxAttempts: 3, backoff: constant(0), clock }));
    const seen: string[][] = [[], []];
    for (const calls of seen) {
      await keyed.execute(({ idempotencyKey, attempt }) => {
        calls.push(idempotencyKey);
        if (attempt < 3) throw transient();
        return 'ok';
      });
    }
    expect(seen[0]).toHaveLength(3);
    expect(new Set(seen[0]).size).toBe(1);
    expect(new Set(seen[1]).size).toBe(1);
    expect(seen[0]?.[0]).not.toBe(seen[1]?.[0]);
  });

  it('every hedge of one call carries the same key, and the attempt number and signal of its try', async () => {
    const clock = new FakeClock();
    const keyed = withIdempotencyKey(pipeline(hedge({ attempts: 2, delayMs: 10, clock })));
    const seen: { key: string; attempt: number; signal: AbortSignal }[] = [];
    const call = keyed.execute(
      ({ idempotencyKey, attempt, signal }) => {
        seen.push({ key: idempotencyKey, attempt, signal });
        return attempt === 1 ? clock.sleep(1_000).then(() => 'slow') : 'fast';
      },
      { idempotencyKey: 'order-42' },
    );
    await clock.advance(10);
    expect(await call).toBe('fast');
    expect(seen.map((s) => [s.key, s.attempt])).toEqual([
      ['order-42', 1],
      ['order-42', 2],
    ]);
    expect(seen[0]?.signal.aborted).toBe(true);
    await clock.advance(1_000);
  });

  it('passes the call options on (signal) and refuses a bad key or policy', async () => {
    const keyed = withIdempotencyKey(retry({ maxAttempts: 1 }));
    await expect(keyed.execute(() => 1, { signal: AbortSignal.abort(new Error('gone')) })).rejects.toThrow(
      'gone',
    );
    expect(() => keyed.execute(() => 1, { idempotencyKey: '' })).toThrow(/"idempotencyKey"/);
    for (const bad of [{}, null, 5, { execute: 1 }])
      expect(() => withIdempotencyKey(bad as never)).toThrow(/policy/);
  });
});
