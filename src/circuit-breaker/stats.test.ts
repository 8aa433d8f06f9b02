import { describe, expect, it } from 'vitest';
import type { Context } from '../core/context.js';
import { ResilienceError } from '../core/errors.js';
import { pipeline } from '../core/pipeline.js';
import type { Policy } from '../core/policy.js';
import { FakeClock } from '../testing/fake-clock.js';
import { timeout } from '../timeout/timeout.js';
import { type CircuitBreakerPolicy, circuitBreaker } from './circuit-breaker.js';
import type { CircuitBreakerOptions } from './options.js';
import { LATENCY_SAMPLE } from './stats.js';

const down = () => new ResilienceError('down', { code: 'E_DOWN', kind: 'unavailable' });
const badRequest = () => Object.assign(new Error('bad request'), { status: 400 });

const ways = [
  ['execute', (b: CircuitBreakerPolicy): Policy => b],
  ['pipeline', (b: CircuitBreakerPolicy): Policy => pipeline(b)],
] as const;

const empty = { successes: 0, failures: 0, timeouts: 0, slowCalls: 0, rejections: 0, latencyMs: undefined };

function setup(options: CircuitBreakerOptions = {}) {
  const clock = new FakeClock();
  const breaker = circuitBreaker({ clock, resetTimeoutMs: 1_000, ...options });
  return { clock, breaker };
}

describe.each(ways)('circuitBreaker stats() (via %s)', (_name, wrap) => {
  /** One call taking `ms` of fake time, then resolving (or failing with `error`); never rejects. */
  const call = async (clock: FakeClock, policy: Policy, ms: number, error?: unknown) => {
    const done = policy
      .execute(async ({ signal }: Context) => {
        await clock.sleep(ms, signal);
        if (error !== undefined) throw error;
        return 'ok';
      })
      .catch((e: unknown) => e);
    await clock.advance(ms);
    return done;
  };

  it('counts what the breaker judged: a 4xx is a success, a caller cancel nothing, a refusal a rejection', async () => {
    const { clock, breaker } = setup({ failureThreshold: 2 });
    const policy = wrap(breaker);
    expect(breaker.stats()).toEqual(empty);
    await call(clock, policy, 0);
    await call(clock, policy, 0, badRequest());
    const controller = new AbortController();
    const canceled = policy.execute(({ signal }) => clock.sleep(10, signal), { signal: controller.signal });
    controller.abort();
    await canceled.catch(() => {});
    await call(clock, policy, 0, down());
    await call(clock, policy, 0, down()); // opens it
    await call(clock, policy, 0);
    await call(clock, policy, 0);
    expect(breaker.stats()).toEqual({ ...empty, successes: 2, failures: 2, rejections: 2 });
  });

  it('counts timeouts among the failures: the call timeout, and an outer deadline', async () => {
    const { clock, breaker } = setup({ failureThreshold: 10, callTimeoutMs: 100, trackLatency: false });
    await call(clock, wrap(breaker), 200); // cut at 100
    await call(clock, pipeline(timeout(50, { clock }), breaker), 200);
    await call(clock, wrap(breaker), 0, down());
    expect(breaker.stats()).toEqual({ ...empty, failures: 3, timeouts: 2 });
  });

  it('counts slow calls with a slow-call rule, whatever their outcome', async () => {
    const { clock, breaker } = setup({
      slowCallMs: 100,
      slowCallRate: 1,
      failureThreshold: 10,
      trackLatency: false,
    });
    const policy = wrap(breaker);
    await call(clock, policy, 100);
    await call(clock, policy, 150, down());
    await call(clock, policy, 99);
    expect(breaker.stats()).toEqual({ ...empty, successes: 2, failures: 1, slowCalls: 2 });
  });

  it('gives exact latency percentiles (nearest rank) over a count window with trackLatency', async () => {
    const { clock, breaker } = setup({ window: { type: 'count', size: 100 }, trackLatency: true });
    const policy = wrap(breaker);
    for (let ms = 200; ms >= 101; ms--) await call(clock, policy, ms); // slid out by the next 100
    for (let ms = 100; ms >= 1; ms--) await call(clock, policy, ms);
    expect(breaker.stats()).toEqual({
      ...empty,
      successes: 100,
      latencyMs: { p50: 50, p90: 90, p99: 99, max: 100 },
    });
  });

  it("a count window's rejections take places: while refusing, they push the calls out", async () => {
    const { clock, breaker } = setup({
      window: { type: 'count', size: 5 },
      failureThreshold: 1,
      trackLatency: true,
    });
    const policy = wrap(breaker);
    await call(clock, policy, 30);
    await call(clock, policy, 10, down()); // opens it
    for (let i = 0; i < 3; i++) await call(clock, policy, 0);
    expect(breaker.stats()).toEqual({
      ...empty,
      successes: 1,
      failures: 1,
      rejections: 3,
      latencyMs: { p50: 10, p90: 30, p99: 30, max: 30 },
    });
    await call(clock, policy, 0);
    expect(breaker.stats()).toMatchObject({ successes: 0, failures: 1, rejections: 4 });
    await call(clock, policy, 0);
    expect(breaker.stats()).toEqual({ ...empty, rejections: 5 });
  });

  it('a time window counts its span, in buckets: calls slide out with the buckets, latencies with them', async () => {
    const { clock, breaker } = setup({ window: { type: 'time', sizeMs: 1_000 }, trackLatency: true });
    const policy = wrap(breaker);
    await call(clock, policy, 40); // ends at 40, in bucket 0 (0–99)
    await clock.advance(460);
    await call(clock, policy, 20); // ends at 520, in bucket 5
    expect(breaker.stats()).toMatchObject({ successes: 2, latencyMs: { p50: 20, max: 40 } });
    await clock.advance(540); // 1,060: bucket 10; buckets 1–10 remain: the first call slid out
    expect(breaker.stats()).toMatchObject({ successes: 1, latencyMs: { p50: 20, p99: 20, max: 20 } });
    await clock.advance(500); // 1,560: the second slid out too
    expect(breaker.stats()).toEqual(empty);
  });

  it('a time window keeps a call that ended on the first instant of its oldest bucket, latency with it', async () => {
    const { clock, breaker } = setup({ window: { type: 'time', sizeMs: 1_000 }, trackLatency: true });
    await call(clock, wrap(breaker), 100); // ends at 100: the first instant of bucket 1
    await clock.advance(900); // 1,000: bucket 10; buckets 1–10 remain
    expect(breaker.stats()).toEqual({
      ...empty,
      successes: 1,
      latencyMs: { p50: 100, p90: 100, p99: 100, max: 100 },
    });
    await clock.advance(100); // 1,100: bucket 11; bucket 1 slid out
    expect(breaker.stats()).toEqual(empty);
  });

  it(`a time window's latencies are its latest ${LATENCY_SAMPLE} calls; its counts all calls`, async () => {
    const { clock, breaker } = setup({ window: { type: 'time', sizeMs: 60_000 }, trackLatency: true });
    const policy = wrap(breaker);
    for (let i = 0; i < 500; i++) await call(clock, policy, 9); // pushed out of the sample
    for (let i = 0; i < LATENCY_SAMPLE; i++) await call(clock, policy, 1 + (i % 2));
    expect(breaker.stats()).toEqual({
      ...empty,
      successes: 500 + LATENCY_SAMPLE,
      latencyMs: { p50: 1, p90: 2, p99: 2, max: 2 },
    });
  });

  it('tracks latency by itself with callTimeoutMs or a slow-call rule; trackLatency: false turns it off', async () => {
    for (const [options, tracked] of [
      [{ callTimeoutMs: 1_000 }, true],
      [{ slowCallMs: 500, slowCallRate: 1 }, true],
      [{ callTimeoutMs: 1_000, trackLatency: false }, false],
      [{}, false],
      [{ trackLatency: true }, true],
    ] as const) {
      const { clock, breaker } = setup(options);
      await call(clock, wrap(breaker), 7);
      expect(breaker.stats().latencyMs, JSON.stringify(options)).toEqual(
        tracked ? { p50: 7, p90: 7, p99: 7, max: 7 } : undefined,
      );
    }
  });

  it("a time window's latencies are cleared with it, on closing and on reset()", async () => {
    const { clock, breaker } = setup({
      window: { type: 'time', sizeMs: 60_000 },
      failureThreshold: 1,
      trackLatency: true,
    });
    const policy = wrap(breaker);
    await call(clock, policy, 40);
    await call(clock, policy, 10, down()); // opens it
    await clock.advance(1_000);
    await call(clock, policy, 5); // the probe closes it
    expect(breaker.stats()).toEqual(empty);
    await call(clock, policy, 7);
    expect(breaker.stats()).toEqual({
      ...empty,
      successes: 1,
      latencyMs: { p50: 7, p90: 7, p99: 7, max: 7 },
    });
    breaker.reset();
    expect(breaker.stats()).toEqual(empty);
  });

  it('closing and reset() clear it; reading it changes nothing', async () => {
    const { clock, breaker } = setup({ failureThreshold: 1 });
    const policy = wrap(breaker);
    const changes: string[] = [];
    breaker.onStateChange(({ to }) => changes.push(to));
    await call(clock, policy, 0, down());
    await clock.advance(5_000);
    for (let i = 0; i < 10; i++) expect(breaker.stats()).toEqual({ ...empty, failures: 1 });
    expect(changes).toEqual(['open']);
    await call(clock, policy, 0); // the probe closes it
    expect(breaker.stats()).toEqual(empty);
    await call(clock, policy, 0);
    breaker.reset();
    expect(breaker.stats()).toEqual(empty);
  });
});
