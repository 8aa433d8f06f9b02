import { describe, expect, it, vi } from 'vitest';
import type { Context } from '../core/context.js';
import { ResilienceError } from '../core/errors.js';
import { pipeline } from '../core/pipeline.js';
import type { Policy } from '../core/policy.js';
import { FakeClock } from '../testing/fake-clock.js';
import { type CircuitBreakerPolicy, circuitBreaker } from './circuit-breaker.js';
import { CircuitOpenError, isCircuitOpenError } from './errors.js';
import type { CircuitBreakerOptions, StateChangeEvent } from './options.js';

const transient = () => new ResilienceError('down', { code: 'E_DOWN', kind: 'unavailable' });
const badRequest = () => Object.assign(new Error('bad request'), { status: 400 });
const fail = (error: () => unknown) => () => Promise.reject(error());
const succeed = () => Promise.resolve('ok');

/** Runs a call and returns its settled result (never rejects). */
const run = (policy: Policy, op: (ctx: Context) => unknown, signal?: AbortSignal) =>
  policy.execute(op, signal ? { signal } : undefined).then(
    (value) => ({ ok: true as const, value }),
    (error: unknown) => ({ ok: false as const, error }),
  );

// Every behaviour holds both through execute (the fast path) and inside a pipeline (runStep).
const ways = [
  ['execute', (b: CircuitBreakerPolicy): Policy => b],
  ['pipeline', (b: CircuitBreakerPolicy): Policy => pipeline(b)],
] as const;

function setup(options: CircuitBreakerOptions = {}) {
  const clock = new FakeClock();
  const changes: string[] = [];
  const breaker = circuitBreaker({ clock, ...options });
  breaker.onStateChange(({ from, to }: StateChangeEvent) => changes.push(`${from}→${to}`));
  return { clock, breaker, changes };
}

describe.each(ways)('circuitBreaker via %s', (_name, wrap) => {
  it('opens after failureThreshold consecutive failures and then refuses without calling', async () => {
    const { clock, breaker, changes } = setup({ failureThreshold: 3, resetTimeoutMs: 1_000 });
    const policy = wrap(breaker);
    for (let i = 0; i < 3; i++) expect((await run(policy, fail(transient))).ok).toBe(false);
    expect(breaker.state).toBe('open');
    expect(changes).toEqual(['closed→open']);
    await clock.advance(400);
    const op = vi.fn(succeed);
    const rejected = vi.fn();
    breaker.onRejected(rejected);
    const r = await run(policy, op);
    expect(op).not.toHaveBeenCalled();
    const error = (r as { error: CircuitOpenError }).error;
    expect(isCircuitOpenError(error)).toBe(true);
    expect(error).toBeInstanceOf(CircuitOpenError);
    expect(error).toMatchObject({
      kind: 'unavailable',
      code: 'ERR_CIRCUIT_OPEN',
      state: 'open',
      retryAfterMs: 600,
    });
    expect(rejected).toHaveBeenCalledWith({ policy: 'circuit-breaker', reason: 'open', error });
  });

  it('a success resets the consecutive count', async () => {
    const { breaker } = setup({ failureThreshold: 3 });
    const policy = wrap(breaker);
    for (const op of [fail(transient), fail(transient), succeed, fail(transient), fail(transient)])
      await run(policy, op);
    expect(breaker.state).toBe('closed');
  });

  it('4xx storms, conflicts and rate limits never open it: the dependency answered', async () => {
    const { breaker } = setup({ failureThreshold: 2 });
    const policy = wrap(breaker);
    const conflict = () => Object.assign(new Error('dup'), { code: '23505' });
    const limited = () => Object.assign(new Error('slow down'), { status: 429 });
    for (let i = 0; i < 200; i++) {
      await run(policy, fail([badRequest, conflict, limited][i % 3]!));
    }
    expect(breaker.state).toBe('closed');
  });

  it('caller aborts count as nothing', async () => {
    const { breaker } = setup({ failureThreshold: 2 });
    const policy = wrap(breaker);
    for (let i = 0; i < 5; i++) {
      const controller = new AbortController();
      const call = run(
        policy,
        ({ signal }) =>
          new Promise((_, reject) => signal.addEventListener('abort', () => reject(transient()))),
        controller.signal,
      );
      controller.abort();
      await call;
    }
    expect(breaker.state).toBe('closed');
  });

  it('half-opens on the first call after resetTimeoutMs; a probe success closes it', async () => {
    const { clock, breaker, changes } = setup({ failureThreshold: 1, resetTimeoutMs: 1_000 });
    const policy = wrap(breaker);
    await run(policy, fail(transient));
    await clock.advance(999);
    expect(isCircuitOpenError(((await run(policy, succeed)) as { error: unknown }).error)).toBe(true);
    await clock.advance(1);
    expect(breaker.state).toBe('open'); // a pure read: the next call half-opens it
    expect(await run(policy, succeed)).toEqual({ ok: true, value: 'ok' });
    expect(breaker.state).toBe('closed');
    expect(changes).toEqual(['closed→open', 'open→half-open', 'half-open→closed']);
  });

  it.each([1, 3])(
    '100 concurrent callers in half-open: exactly %i probes reach the operation',
    async (probes) => {
      const { clock, breaker } = setup({ failureThreshold: 1, resetTimeoutMs: 100, halfOpenProbes: probes });
      const policy = wrap(breaker);
      await run(policy, fail(transient));
      await clock.advance(100);
      let reached = 0;
      const release: (() => void)[] = [];
      const op = () =>
        new Promise<string>((resolve) => {
          reached++;
          release.push(() => resolve('probe ok'));
        });
      const calls = Array.from({ length: 100 }, () => run(policy, op));
      await clock.advance(0);
      expect(reached).toBe(probes);
      for (const r of release) r();
      const results = await Promise.all(calls);
      expect(results.filter((r) => r.ok)).toHaveLength(probes);
      const refused = results.filter((r) => !r.ok).map((r) => (r as { error: CircuitOpenError }).error);
      expect(refused).toHaveLength(100 - probes);
      expect(refused.every((e) => e.state === 'half-open')).toBe(true);
      expect(breaker.state).toBe('closed');
    },
  );

  it('successThreshold probe successes are needed; any probe failure re-opens', async () => {
    const { clock, breaker, changes } = setup({
      failureThreshold: 1,
      resetTimeoutMs: 100,
      successThreshold: 2,
    });
    const policy = wrap(breaker);
    await run(policy, fail(transient));
    await clock.advance(100);
    await run(policy, succeed);
    expect(breaker.state).toBe('half-open');
    await run(policy, fail(transient));
    expect(breaker.state).toBe('open');
    await clock.advance(100);
    await run(policy, succeed);
    await run(policy, succeed);
    expect(breaker.state).toBe('closed');
    expect(changes).toEqual([
      'closed→open',
      'open→half-open',
      'half-open→open',
      'open→half-open',
      'half-open→closed',
    ]);
  });

  it('a probe answered with a permanent error (a 400) proves the dependency answers: it closes', async () => {
    const { clock, breaker } = setup({ failureThreshold: 1, resetTimeoutMs: 100 });
    const policy = wrap(breaker);
    await run(policy, fail(transient));
    await clock.advance(100);
    const r = await run(policy, fail(badRequest));
    expect(r.ok).toBe(false);
    expect(breaker.state).toBe('closed');
  });

  it('a probe aborted by its own caller frees its slot (never stuck half-open)', async () => {
    const { clock, breaker } = setup({ failureThreshold: 1, resetTimeoutMs: 100 });
    const policy = wrap(breaker);
    await run(policy, fail(transient));
    await clock.advance(100);
    const controller = new AbortController();
    const probe = run(
      policy,
      ({ signal }) =>
        new Promise((_, reject) => signal.addEventListener('abort', () => reject(signal.reason))),
      controller.signal,
    );
    expect(isCircuitOpenError(((await run(policy, succeed)) as { error: unknown }).error)).toBe(true); // slot taken
    controller.abort(new Error('caller left'));
    await probe;
    expect(breaker.state).toBe('half-open');
    expect(await run(policy, succeed)).toEqual({ ok: true, value: 'ok' });
    expect(breaker.state).toBe('closed');
  });

  it('re-open time grows with resetBackoff up to maxResetTimeoutMs, and closing resets it', async () => {
    const { clock, breaker } = setup({
      failureThreshold: 1,
      resetTimeoutMs: 100,
      resetBackoff: 2,
      maxResetTimeoutMs: 350,
    });
    const policy = wrap(breaker);
    const openFor = async () => {
      const r = await run(policy, succeed);
      return (r as { error: CircuitOpenError }).error.retryAfterMs;
    };
    await run(policy, fail(transient));
    expect(await openFor()).toBe(100);
    for (const expected of [200, 350, 350]) {
      await clock.advance(1_000);
      await run(policy, fail(transient)); // the probe fails: re-open
      expect(await openFor()).toBe(expected);
    }
    await clock.advance(1_000);
    await run(policy, succeed); // the probe succeeds: closed, backoff forgotten
    await run(policy, fail(transient));
    expect(await openFor()).toBe(100);
  });

  it('ignores the late outcome of a call admitted before the circuit opened', async () => {
    const { clock, breaker } = setup({ failureThreshold: 1, resetTimeoutMs: 1_000 });
    const policy = wrap(breaker);
    let finishSlow!: (v: string) => void;
    const slow = run(policy, () => new Promise<string>((resolve) => (finishSlow = resolve)));
    await run(policy, fail(transient));
    expect(breaker.state).toBe('open');
    finishSlow('late');
    expect(await slow).toEqual({ ok: true, value: 'late' });
    expect(breaker.state).toBe('open');
    await clock.advance(999);
    expect(isCircuitOpenError(((await run(policy, succeed)) as { error: unknown }).error)).toBe(true);
  });

  it('isolate() refuses everything until reset()', async () => {
    const { breaker } = setup();
    const policy = wrap(breaker);
    breaker.isolate();
    const op = vi.fn(succeed);
    const r = await run(policy, op);
    expect((r as { error: CircuitOpenError }).error).toMatchObject({
      state: 'isolated',
      retryAfterMs: undefined,
    });
    expect(op).not.toHaveBeenCalled();
    breaker.reset();
    expect(await run(policy, op)).toEqual({ ok: true, value: 'ok' });
  });

  it('isFailure overrides the kind rule; a throwing isFailure counts as a failure', async () => {
    const { breaker } = setup({ failureThreshold: 2, isFailure: (e) => (e as Error).message === 'count me' });
    const policy = wrap(breaker);
    await run(policy, fail(transient)); // not counted: message differs
    await run(policy, fail(transient));
    expect(breaker.state).toBe('closed');
    await run(
      policy,
      fail(() => new Error('count me')),
    );
    await run(
      policy,
      fail(() => new Error('count me')),
    );
    expect(breaker.state).toBe('open');
    const broken = setup({
      failureThreshold: 1,
      isFailure: () => {
        throw new Error('predicate bug');
      },
    });
    await run(wrap(broken.breaker), fail(badRequest));
    expect(broken.breaker.state).toBe('open');
  });
});

describe('circuitBreaker failure rate', () => {
  it('respects minimumThroughput, then trips at the threshold', async () => {
    const { breaker } = setup({ failureRate: { threshold: 0.5, windowMs: 10_000, minimumThroughput: 20 } });
    for (let i = 0; i < 19; i++) await run(breaker, fail(transient));
    expect(breaker.state).toBe('closed'); // 19 calls < 20: not judged yet
    await run(breaker, fail(transient));
    expect(breaker.state).toBe('open');
  });

  it('stays closed below the threshold and opens the moment the rate reaches it', async () => {
    const { breaker } = setup({ failureRate: { threshold: 0.5, windowMs: 1_000, minimumThroughput: 10 } });
    for (let i = 0; i < 20; i++) await run(breaker, i % 3 === 0 ? fail(transient) : succeed);
    expect(breaker.state).toBe('closed'); // 7 of 20 failed
    for (let i = 0; i < 5; i++) await run(breaker, fail(transient));
    expect(breaker.state).toBe('closed'); // 12 of 25 = 0.48
    await run(breaker, fail(transient));
    expect(breaker.state).toBe('open'); // 13 of 26 = 0.5
  });

  it('counts only the window', async () => {
    const { clock, breaker } = setup({
      failureRate: { threshold: 0.5, windowMs: 1_000, minimumThroughput: 4 },
    });
    for (let i = 0; i < 3; i++) await run(breaker, fail(transient));
    await clock.advance(2_000); // those three slid out
    await run(breaker, fail(transient));
    for (let i = 0; i < 3; i++) await run(breaker, succeed);
    expect(breaker.state).toBe('closed'); // 1 of 4 in the window
  });

  it('the slow-call rule opens on slow successes', async () => {
    const { clock, breaker } = setup({
      slowCallMs: 100,
      slowCallRate: 0.5,
      failureRate: { threshold: 1, windowMs: 10_000, minimumThroughput: 4 },
    });
    const slowOk = async () => {
      await clock.sleep(150);
      return 'slow';
    };
    for (let i = 0; i < 2; i++) await run(breaker, succeed);
    const first = run(breaker, slowOk);
    await clock.advance(150);
    await first;
    expect(breaker.state).toBe('closed'); // 1 slow of 3 calls
    const second = run(breaker, slowOk);
    await clock.advance(150);
    expect(await second).toEqual({ ok: true, value: 'slow' });
    expect(breaker.state).toBe('open'); // 2 slow of 4
  });
});
