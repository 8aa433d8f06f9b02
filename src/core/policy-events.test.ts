/**
 * The uniform events of every built-in policy (docs/events.md): `onSuccess`, `onFailure` and
 * `onRejected` fire once per call with exactly the documented shapes, through `execute` and inside a
 * pipeline; the factory's options of the same names subscribe too; a throwing listener never breaks
 * a call; disposers unsubscribe; `name` names the policy in every event.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { bulkhead } from '../admission/bulkhead.js';
import { concurrencyLimit } from '../admission/concurrency-limit.js';
import { LoadShedder } from '../admission/load-shedder.js';
import { circuitBreaker } from '../circuit-breaker/circuit-breaker.js';
import { hedge } from '../hedge/hedge.js';
import { rateLimiter } from '../rate-limit/rate-limiter.js';
import { constant } from '../retry/backoff.js';
import { fallback } from '../retry/fallback.js';
import { retry } from '../retry/retry.js';
import { FakeClock } from '../testing/fake-clock.js';
import { timeout } from '../timeout/timeout.js';
import { classify } from './classify.js';
import type { Clock } from './clock.js';
import { ResilienceError } from './errors.js';
import { setListenerErrorHandler } from './events.js';
import { pipeline } from './pipeline.js';
import type { Policy } from './policy.js';
import {
  CallEvents,
  type FailureEvent,
  type PolicyOptions,
  type RejectedEvent,
  type SuccessEvent,
} from './policy-events.js';

type Events = { [K in 'onSuccess' | 'onFailure' | 'onRejected']-?: Exclude<PolicyOptions[K], undefined> };
interface Evented extends Policy<unknown> {
  onSuccess(listener: (event: SuccessEvent) => void): () => void;
  onFailure(listener: (event: FailureEvent) => void): () => void;
  onRejected?(listener: (event: RejectedEvent) => void): () => void;
}

interface Row {
  /** The default name. */
  readonly pattern: string;
  /** Builds the policy with the uniform options (and the test's clock). */
  readonly make: (options: PolicyOptions, clock: FakeClock) => Evented;
  /** A failure the policy passes through untouched, and whether it acted on it. */
  readonly failure: {
    readonly error: () => unknown;
    readonly handled: boolean;
    readonly seen?: (error: unknown) => unknown;
  };
  /** Puts the policy into a state where the next call is refused, with this reason. */
  readonly refuse?: { readonly reason: string; readonly prepare: (policy: Evented) => void };
  /** False when the factory takes no `name` option. */
  readonly named?: boolean;
  /** Fallback: a failure resolves with this value. */
  readonly answers?: unknown;
}

const transient = () => new ResilienceError('down', { code: 'E_DOWN', kind: 'unavailable' });
const permanent = () => Object.assign(new Error('bad request'), { status: 400 });
const holdForever = () => new Promise<never>(() => {});

const rows: Row[] = [
  {
    pattern: 'retry',
    make: (o, clock) => retry({ ...o, clock, maxAttempts: 2, backoff: constant(5) }),
    failure: { error: transient, handled: true, seen: (e) => (e as { cause: unknown }).cause },
  },
  {
    pattern: 'timeout',
    make: (o, clock) => timeout(1_000, { ...o, clock }),
    failure: { error: transient, handled: false },
  },
  {
    pattern: 'fallback',
    make: (o, clock) => fallback(() => 'substitute', { ...o, clock }) as Evented,
    failure: { error: transient, handled: true },
    answers: 'substitute',
  },
  {
    pattern: 'circuit-breaker',
    make: (o, clock) => circuitBreaker({ ...o, clock }),
    failure: { error: transient, handled: true },
    refuse: { reason: 'isolated', prepare: (p) => (p as ReturnType<typeof circuitBreaker>).isolate() },
  },
  {
    pattern: 'hedge',
    make: (o, clock) => hedge({ ...o, clock, attempts: 2, delayMs: 100 }) as unknown as Evented,
    failure: { error: permanent, handled: false },
  },
  {
    pattern: 'concurrency-limit',
    make: (o, clock) => concurrencyLimit(1, { ...o, clock }),
    failure: { error: transient, handled: false },
    refuse: { reason: 'limit-reached', prepare: (p) => void p.execute(holdForever) },
  },
  {
    pattern: 'bulkhead',
    make: (o, clock) => bulkhead({ ...o, clock, maxConcurrent: 1, maxQueue: 0 }),
    failure: { error: transient, handled: false },
    refuse: { reason: 'queue-full', prepare: (p) => void p.execute(holdForever) },
  },
  {
    pattern: 'load-shedder',
    // The shedder takes no `name` or event options yet (see docs/events.md): subscribe on the policy.
    make: (o, clock) => {
      const policy = new LoadShedder({ clock, limits: { inFlight: 1 } }).policy('critical');
      if (o.onSuccess !== undefined) policy.onSuccess(o.onSuccess);
      if (o.onFailure !== undefined) policy.onFailure(o.onFailure);
      if (o.onRejected !== undefined) policy.onRejected(o.onRejected as never);
      return policy as never;
    },
    named: false,
    failure: { error: transient, handled: false },
    refuse: { reason: 'shed', prepare: (p) => void p.execute(holdForever) },
  },
  {
    pattern: 'rate-limit',
    make: (o, clock) =>
      rateLimiter({ algorithm: 'token-bucket', limit: 2, periodMs: 60_000, clock }).policy('k', o) as never,
    failure: { error: transient, handled: false },
    refuse: {
      reason: 'rate-limited',
      prepare: (p) => {
        for (let i = 0; i < 2; i++) void p.execute(() => 'spends the quota').catch(() => {});
      },
    },
  },
];

const paths = [
  ['execute', (p: Evented): Policy<unknown> => p],
  ['pipeline', (p: Evented): Policy<unknown> => pipeline(p)],
] as const;

/** Subscribes to the three events on the policy (or through its options) and logs them. */
function logged(row: Row, via: 'methods' | 'options', name?: string) {
  const clock = new FakeClock();
  const log: { success: SuccessEvent[]; failure: FailureEvent[]; rejected: RejectedEvent[] } = {
    success: [],
    failure: [],
    rejected: [],
  };
  const listeners: Events = {
    onSuccess: (e) => log.success.push(e),
    onFailure: (e) => log.failure.push(e),
    onRejected: (e) => log.rejected.push(e),
  };
  const naming = name === undefined ? {} : { name };
  const policy = row.make(via === 'options' ? { ...naming, ...listeners } : naming, clock);
  if (via === 'methods') {
    policy.onSuccess(listeners.onSuccess);
    policy.onFailure(listeners.onFailure);
    policy.onRejected?.(listeners.onRejected);
  }
  return { clock, policy, log };
}

let reported: unknown[] = [];
let previous: (error: unknown) => void;
beforeEach(() => {
  reported = [];
  previous = setListenerErrorHandler((error) => reported.push(error));
});
afterEach(() => {
  setListenerErrorHandler(previous);
});

describe.each(rows)('$pattern events', (row) => {
  describe.each(paths)('via %s', (_path, wrap) => {
    it('onSuccess({ policy, durationMs }) once per resolved call, on the policy clock', async () => {
      const { clock, policy, log } = logged(row, 'methods');
      const call = wrap(policy).execute(() => clock.sleep(30).then(() => 'value'));
      await clock.advance(30);
      await expect(call).resolves.toBe('value');
      expect(log).toEqual({ success: [{ policy: row.pattern, durationMs: 30 }], failure: [], rejected: [] });
    });

    it('onFailure({ policy, error, kind, durationMs, handled }) once per failed call', async () => {
      const { clock, policy, log } = logged(row, 'methods');
      const error = row.failure.error();
      const call = wrap(policy)
        .execute(() => Promise.reject(error))
        .then(
          (value) => ({ value }),
          (reason: unknown) => ({ reason }),
        );
      await clock.advance(1_000);
      const result = await call;
      if (row.answers !== undefined) expect(result).toEqual({ value: row.answers });
      else expect((result as { reason: unknown }).reason).toBeDefined();
      expect(log.success).toEqual([]);
      expect(log.failure).toHaveLength(1);
      const event = log.failure[0]!;
      const seen = row.answers !== undefined ? error : (result as { reason: unknown }).reason;
      expect(event).toEqual({
        policy: row.pattern,
        error: seen,
        kind: classify(seen),
        durationMs: expect.any(Number),
        handled: row.failure.handled,
      });
      if (row.failure.seen !== undefined) expect(row.failure.seen(event.error)).toBe(error);
    });

    if (row.refuse !== undefined) {
      const refuse = row.refuse;
      it(`onRejected({ policy, reason: '${refuse.reason}', error }) once per refusal, the operation never runs`, async () => {
        const { policy, log } = logged(row, 'methods');
        refuse.prepare(policy);
        log.success.length = 0;
        let ran = false;
        const result = await wrap(policy)
          .execute(() => {
            ran = true;
          })
          .catch((reason: unknown) => reason);
        expect(ran).toBe(false);
        expect(log.rejected).toEqual([{ policy: row.pattern, reason: refuse.reason, error: result }]);
        expect(log.failure).toEqual([]);
      });
    }

    it('the factory options subscribe too, and `name` names the policy', async () => {
      const name = row.named === false ? undefined : 'payments';
      const { policy, log } = logged(row, 'options', name);
      await wrap(policy).execute(() => 'value');
      expect(log.success).toEqual([{ policy: name ?? row.pattern, durationMs: 0 }]);
    });

    if (row.named !== false) {
      it('the factory options onFailure and onRejected subscribe too', async () => {
        const { clock, policy, log } = logged(row, 'options');
        const error = row.failure.error();
        const call = wrap(policy)
          .execute(() => Promise.reject(error))
          .catch(() => {});
        await clock.advance(1_000);
        await call;
        expect(log.failure).toHaveLength(1);
        if (row.refuse !== undefined) {
          row.refuse.prepare(policy);
          await wrap(policy)
            .execute(() => 'never')
            .catch(() => {});
          // (the rate limiter's preparation may itself be refused: every refusal is logged)
          expect(log.rejected.length).toBeGreaterThan(0);
          for (const event of log.rejected) {
            expect(event).toMatchObject({ policy: row.pattern, reason: row.refuse.reason });
          }
        }
      });
    }

    it('a throwing listener never breaks the call; disposers unsubscribe', async () => {
      const { policy } = logged(row, 'methods');
      const seen: string[] = [];
      const boom = new Error('listener bug');
      const throwing = () => {
        throw boom;
      };
      const disposers = [
        policy.onSuccess(throwing),
        policy.onFailure(throwing),
        policy.onSuccess(() => seen.push('success')),
      ];
      await expect(wrap(policy).execute(() => 'value')).resolves.toBe('value');
      expect(reported).toEqual([boom]);
      expect(seen).toEqual(['success']);
      for (const dispose of disposers) dispose();
      await wrap(policy).execute(() => 'again');
      expect(seen).toEqual(['success']);
      if (row.refuse !== undefined && policy.onRejected !== undefined) {
        const dispose = policy.onRejected(throwing);
        row.refuse.prepare(policy);
        const refusal = await wrap(policy)
          .execute(() => 'never')
          .catch((reason: unknown) => reason);
        expect(refusal).toBeInstanceOf(ResilienceError);
        dispose();
      }
    });
  });
});

describe('policy names', () => {
  it.each(rows.filter((row) => row.named !== false))(
    '$pattern refuses a name that is not a non-empty string',
    (row) => {
      expect(() => row.make({ name: '' }, new FakeClock())).toThrow(
        /expected "name" to be a non-empty string, got ""/,
      );
      expect(() => row.make({ name: 3 as never }, new FakeClock())).toThrow(/"name"/);
    },
  );

  it.each(rows.filter((row) => row.named !== false))(
    '$pattern refuses a listener option that is not a function, naming it',
    (row) => {
      for (const key of ['onSuccess', 'onFailure', 'onRejected'] as const) {
        expect(() => row.make({ [key]: 5 } as PolicyOptions, new FakeClock())).toThrow(
          new TypeError(`expected "${key}" to be a function, got 5`),
        );
      }
    },
  );

  it.each(rows.filter((row) => row.named !== false))(
    '$pattern checks `name` before the listeners: a bad name is the error named first',
    (row) => {
      expect(() => row.make({ name: '', onSuccess: 5 as never }, new FakeClock())).toThrow(
        /expected "name" to be a non-empty string, got ""/,
      );
      expect(() => row.make({ name: 3 as never, onSuccess: 5 as never }, new FakeClock())).toThrow(
        /expected "name" to be a non-empty string, got 3/,
      );
      expect(() => row.make({ name: 'Stryker was here!', onSuccess: 5 as never }, new FakeClock())).toThrow(
        /"onSuccess"/,
      );
    },
  );

  it.each(rows)('$pattern exposes its name', (row) => {
    expect((row.make({}, new FakeClock()) as unknown as { name: string }).name).toBe(row.pattern);
  });
});

describe('CallEvents', () => {
  it('refuses a bad option with a TypeError naming it', () => {
    const events = new CallEvents('retry');
    expect(() => events.configure({ name: '' }, undefined)).toThrow(/"name"/);
    expect(() => events.configure({ onSuccess: 1 } as never, undefined)).toThrow(/"onSuccess"/);
    expect(() => events.configure({ onFailure: 1 } as never, undefined)).toThrow(/"onFailure"/);
    expect(() => events.configure({ onRejected: 1 } as never, undefined)).toThrow(/"onRejected"/);
  });

  it('a call that began unobserved reports a duration of 0 to an onSuccess or onFailure added meanwhile', () => {
    const clock = new FakeClock();
    const succeeded = new CallEvents('retry');
    succeeded.configure({}, clock);
    const startedOk = succeeded.start();
    const successes: SuccessEvent[] = [];
    succeeded.succeeded.add((event) => successes.push(event));
    succeeded.report({ ok: true, value: 1 }, startedOk, undefined, false);
    expect(successes).toEqual([{ policy: 'retry', durationMs: 0 }]);

    const failed = new CallEvents('retry');
    failed.configure({}, clock);
    const startedFailing = failed.start();
    const failures: FailureEvent[] = [];
    failed.failed.add((event) => failures.push(event));
    const error = new ResilienceError('down', { code: 'E_DOWN', kind: 'unavailable' });
    failed.report({ ok: false, error }, startedFailing, undefined, true);
    expect(failures).toEqual([{ policy: 'retry', error, kind: 'unavailable', durationMs: 0, handled: true }]);
  });

  it('reads no clock at the end of a call no one listens to any more', () => {
    let reads = 0;
    const clock = new FakeClock();
    const counting: Clock = {
      now: () => ++reads,
      sleep: (ms, signal) => clock.sleep(ms, signal),
      setTimer: (callback, ms) => clock.setTimer(callback, ms),
      clearTimer: (handle) => clock.clearTimer(handle),
    };
    const events = new CallEvents('retry');
    events.configure({}, counting);
    const dispose = events.succeeded.add(() => {});
    const startedAt = events.start();
    expect(reads).toBe(1);
    dispose();
    events.report({ ok: true, value: 1 }, startedAt, undefined, false);
    expect(reads).toBe(1);
  });
});
