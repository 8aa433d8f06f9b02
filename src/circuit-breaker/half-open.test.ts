import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { Context } from '../core/context.js';
import { ResilienceError } from '../core/errors.js';
import { pipeline } from '../core/pipeline.js';
import type { Policy } from '../core/policy.js';
import { FakeClock } from '../testing/fake-clock.js';
import { type CircuitBreakerPolicy, circuitBreaker } from './circuit-breaker.js';
import type { CircuitOpenError } from './errors.js';
import { probeRule } from './half-open.js';
import type { CircuitBreakerOptions } from './options.js';

const down = () => new ResilienceError('down', { code: 'E_DOWN', kind: 'unavailable' });

const ways = [
  ['execute', (b: CircuitBreakerPolicy): Policy => b],
  ['pipeline', (b: CircuitBreakerPolicy): Policy => pipeline(b)],
] as const;

/** A probe held open until the test settles it (with an error, or a value). */
function held() {
  let settle!: (error?: unknown) => void;
  let started = false;
  const op = (_ctx: Context) =>
    new Promise<string>((resolve, reject) => {
      started = true;
      settle = (error) => (error === undefined ? resolve('probe ok') : reject(error));
    });
  return { op, settle: (error?: unknown) => settle(error), started: () => started };
}

/** A breaker opened by one failure, now past its reset timeout: the next call half-opens it. */
async function halfOpenable(wrap: (b: CircuitBreakerPolicy) => Policy, options: CircuitBreakerOptions) {
  const clock = new FakeClock();
  const breaker = circuitBreaker({ clock, failureThreshold: 1, resetTimeoutMs: 100, ...options });
  const changes: string[] = [];
  breaker.onStateChange(({ from, to }) => changes.push(`${from}→${to}`));
  const policy = wrap(breaker);
  await policy.execute(() => Promise.reject(down())).catch(() => {});
  await clock.advance(100);
  /** Starts one call; its settled result (never rejects). */
  const call = (op: (ctx: Context) => unknown, signal?: AbortSignal) =>
    policy.execute(op, signal ? { signal } : undefined).then(
      (value) => ({ ok: true as const, value }),
      (error: unknown) => ({ ok: false as const, error: error as CircuitOpenError }),
    );
  return { clock, breaker, changes, call };
}

describe.each(ways)('circuitBreaker half-open sampling (via %s)', (_name, wrap) => {
  const sampling = { halfOpenProbes: 4, halfOpenSuccessRate: 0.75 };

  it('admits exactly halfOpenProbes probes at once and refuses the rest, as half-open', async () => {
    const { call } = await halfOpenable(wrap, sampling);
    const probes = Array.from({ length: 4 }, held);
    const running = probes.map((p) => call(p.op));
    const refused = await call(() => 'never');
    expect(refused).toMatchObject({ ok: false, error: { code: 'ERR_CIRCUIT_OPEN', state: 'half-open' } });
    expect(probes.every((p) => p.started())).toBe(true);
    for (const p of probes) p.settle();
    expect((await Promise.all(running)).every((r) => r.ok)).toBe(true);
  });

  it('a probe that ended keeps its place: no more than halfOpenProbes in all until the decision', async () => {
    const { breaker, call } = await halfOpenable(wrap, sampling);
    expect(await call(() => 'ok')).toEqual({ ok: true, value: 'ok' });
    expect(await call(() => Promise.reject(down()))).toMatchObject({ ok: false });
    const third = held();
    const fourth = held();
    const running = [call(third.op), call(fourth.op)];
    expect(await call(() => 'fifth')).toMatchObject({ ok: false, error: { state: 'half-open' } });
    expect(breaker.state).toBe('half-open'); // 1 success, 1 failure: still undecided
    third.settle();
    fourth.settle();
    await Promise.all(running);
    expect(breaker.state).toBe('closed'); // 3 of 4 succeeded: 0.75
  });

  it('re-opens the moment failures make the rate unreachable; the probes still running say nothing', async () => {
    const { breaker, changes, call } = await halfOpenable(wrap, sampling);
    const probes = Array.from({ length: 4 }, held);
    const running = probes.map((p) => call(p.op));
    probes[0]!.settle(down());
    await running[0];
    expect(breaker.state).toBe('half-open'); // 3 of 4 can still succeed
    probes[1]!.settle(down());
    await running[1];
    expect(breaker.state).toBe('open'); // at most 2 of 4 now
    probes[2]!.settle();
    probes[3]!.settle();
    await Promise.all(running);
    expect(breaker.state).toBe('open');
    expect(changes).toEqual(['closed→open', 'open→half-open', 'half-open→open']);
    expect(breaker.toJSON()).toMatchObject({ reopenCount: 1 });
  });

  it('closes the moment enough probes succeeded, without waiting for the rest', async () => {
    const { breaker, call } = await halfOpenable(wrap, sampling);
    const probes = Array.from({ length: 4 }, held);
    const running = probes.map((p) => call(p.op));
    for (const p of probes.slice(0, 3)) p.settle();
    await Promise.all(running.slice(0, 3));
    expect(breaker.state).toBe('closed');
    probes[3]!.settle(down()); // admitted as a probe: it says nothing about the closed circuit
    await running[3];
    expect(breaker.toJSON()).toEqual({ state: 'closed', consecutiveFailures: 0, reopenCount: 0 });
  });

  it('a probe that times out (callTimeoutMs) counts as a failed probe', async () => {
    const { clock, breaker, call } = await halfOpenable(wrap, {
      halfOpenProbes: 2,
      halfOpenSuccessRate: 1,
      callTimeoutMs: 50,
    });
    const hung = call(
      ({ signal }) =>
        new Promise((_, reject) => signal.addEventListener('abort', () => reject(signal.reason))),
    );
    await clock.advance(breaker.callTimeoutMs!); // 55: stretched by the failure that opened it
    expect(await hung).toMatchObject({ ok: false, error: { name: 'TimeoutError' } });
    expect(breaker.state).toBe('open');
  });

  it('a probe its own caller canceled is no outcome: it frees its place for another probe', async () => {
    const { breaker, call } = await halfOpenable(wrap, { halfOpenProbes: 2, halfOpenSuccessRate: 1 });
    const controller = new AbortController();
    const canceled = call(
      ({ signal }) =>
        new Promise((_, reject) => signal.addEventListener('abort', () => reject(signal.reason))),
      controller.signal,
    );
    const first = held();
    const running = call(first.op);
    expect(await call(() => 'third')).toMatchObject({ ok: false, error: { state: 'half-open' } });
    controller.abort(new Error('caller left'));
    await canceled;
    expect(await call(() => 'takes the freed place')).toEqual({ ok: true, value: 'takes the freed place' });
    expect(breaker.state).toBe('half-open');
    first.settle();
    await running;
    expect(breaker.state).toBe('closed');
  });

  it("a new half-open period starts afresh: the last one's outcomes and running probes take no place", async () => {
    const { clock, breaker, call } = await halfOpenable(wrap, sampling);
    expect(await call(() => 'ok')).toMatchObject({ ok: true });
    const late = held();
    const lateCall = call(late.op);
    await call(() => Promise.reject(down()));
    await call(() => Promise.reject(down()));
    expect(breaker.state).toBe('open'); // 2 of 4 failed: re-opened with a probe still running
    late.settle(); // ends under the old period: says nothing now
    await lateCall;
    await clock.advance(100);
    const probes = Array.from({ length: 4 }, held);
    const running = probes.map((p) => call(p.op));
    expect(probes.every((p) => p.started())).toBe(true); // all 4 places are free again
    expect(await call(() => 'fifth')).toMatchObject({ ok: false, error: { state: 'half-open' } });
    probes[0]!.settle(down()); // one failure of this period: 3 of 4 can still succeed
    await running[0];
    expect(breaker.state).toBe('half-open');
    for (const p of probes.slice(1)) p.settle();
    await Promise.all(running);
    expect(breaker.state).toBe('closed');
  });

  it('without halfOpenSuccessRate the first probe failure re-opens it, as before', async () => {
    const { breaker, call } = await halfOpenable(wrap, { halfOpenProbes: 4, successThreshold: 3 });
    await call(() => 'ok');
    await call(() => 'ok');
    await call(() => Promise.reject(down()));
    expect(breaker.state).toBe('open');
  });
});

describe.each(ways)('circuitBreaker half-open sampling against a model (property, via %s)', (_name, wrap) => {
  type Event = 'start' | 'succeed' | 'fail' | 'cancel';
  const event = fc.constantFrom<Event>('start', 'start', 'succeed', 'fail', 'cancel');

  it('admits, refuses, closes and re-opens exactly as the model says, at every step', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 1, max: 6 }),
        fc.double({ min: 0.05, max: 1, noNaN: true }),
        fc.array(event, { maxLength: 40 }),
        async (probes, rate, events) => {
          const { breaker, call } = await halfOpenable(wrap, {
            halfOpenProbes: probes,
            halfOpenSuccessRate: rate,
          });
          // The model: the fewest successes whose share of `probes` reaches the rate.
          let need = 1;
          while (need / probes < rate) need++;
          let successes = 0;
          let failures = 0;
          // Open until the first call half-opens it; then half-open until the probes decide.
          let state: 'open' | 'half-open' | 'closed' = 'open';
          const running: {
            probe: ReturnType<typeof held>;
            controller: AbortController;
            done: Promise<unknown>;
          }[] = [];
          for (const e of events) {
            if (state === 'closed' || (state === 'open' && e !== 'start')) continue;
            if (e === 'start') {
              if (state === 'open') state = 'half-open';
              const probe = held();
              const controller = new AbortController();
              const admitted = running.length + successes + failures < probes;
              const done = call((ctx) => {
                ctx.signal.addEventListener('abort', () => probe.settle(ctx.signal.reason));
                return probe.op(ctx);
              }, controller.signal);
              expect(probe.started()).toBe(admitted);
              if (admitted) running.push({ probe, controller, done });
              else expect(await done).toMatchObject({ ok: false, error: { state: 'half-open' } });
              continue;
            }
            const oldest = running.shift();
            if (oldest === undefined) continue;
            if (e === 'cancel') oldest.controller.abort(new Error('caller left'));
            else oldest.probe.settle(e === 'fail' ? down() : undefined);
            await oldest.done;
            if (e === 'succeed' && ++successes >= need) state = 'closed';
            if (e === 'fail' && ++failures > probes - need) state = 'open';
            expect(breaker.state).toBe(state);
            if (state === 'open') break; // re-opened: a later call is refused until resetTimeoutMs
          }
          for (const r of running) r.probe.settle(); // leave nothing pending
          await Promise.all(running.map((r) => r.done));
        },
      ),
      { numRuns: 300 },
    );
  });
});

describe('probeRule', () => {
  it.each([
    [10, 0.8, 8],
    [100, 0.07, 7], // 0.07 × 100 is 7.000000000000001 in floating point
    [100, 0.29, 29], // 0.29 × 100 is 28.999999999999996
    [5, 1, 5],
    [10, 0.01, 1],
    [3, 0.5, 2],
    [1, 0.3, 1],
  ])(
    '%i probes at %f: %i successes close, one failure more than the rest re-opens',
    (probes, rate, close) => {
      expect(probeRule(probes, undefined, rate)).toEqual({
        probes,
        sampled: true,
        successesToClose: close,
        failuresToOpen: probes - close + 1,
      });
    },
  );

  it('without a rate: successThreshold successes close (default 1) and the first failure re-opens', () => {
    expect(probeRule(3, undefined, undefined)).toEqual({
      probes: 3,
      sampled: false,
      successesToClose: 1,
      failuresToOpen: 1,
    });
    expect(probeRule(1, 4, undefined)).toMatchObject({ successesToClose: 4 });
  });
});
