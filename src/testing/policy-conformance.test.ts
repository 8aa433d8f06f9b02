/**
 * The policy contract suite catches broken policies: a small hand-written policy passes every
 * scenario, and each deliberately broken copy of it fails the scenario named for its flaw.
 */
import { describe, expect, it } from 'vitest';
import { classify } from '../core/classify.js';
import type { Context, Operation } from '../core/context.js';
import { Listeners } from '../core/events.js';
import type { ExecuteOptions, Policy } from '../core/policy.js';
import { type MakePolicy, policyConformance } from './policy-conformance.js';

type Flaw =
  | 'leaks-abort-listener'
  | 'ignores-pre-aborted-signal'
  | 'leaves-live-timer'
  | 'throws-synchronously'
  | 'listener-breaks-call'
  | 'events-without-policy-name'
  | 'swallows-abort-reason';

/**
 * A policy written the way a user might write one: it passes the caller's signal and deadline to
 * the operation, keeps a per-call watchdog timer, and emits the uniform success/failure events.
 */
function userPolicy(
  clock: { now(): number; setTimer(cb: () => void, ms: number): unknown; clearTimer(h: unknown): void },
  flaw?: Flaw,
) {
  const succeeded = new Listeners<{ policy: string; durationMs: number }>();
  const failed = new Listeners<{
    policy: string;
    error: unknown;
    kind: string;
    durationMs: number;
    handled: boolean;
  }>();
  const name = flaw === 'events-without-policy-name' ? '' : 'user-policy';
  const emit = <E>(listeners: Listeners<E>, event: E): void => {
    if (flaw !== 'listener-breaks-call') {
      listeners.emit(event);
      return;
    }
    for (const listener of (listeners as unknown as { list?: ((e: E) => void)[] }).list ?? [])
      listener(event);
  };
  const policy = {
    onSuccess: (listener: (event: { policy: string; durationMs: number }) => void) => succeeded.add(listener),
    onFailure: (listener: (event: unknown) => void) => failed.add(listener),
    execute<T>(operation: Operation<T>, options?: ExecuteOptions): Promise<T> {
      if (flaw === 'throws-synchronously') {
        // The flaw: the operation is called outside any try, so its throw escapes execute.
        const first = operation({ signal: new AbortController().signal, attempt: 1 });
        return Promise.resolve(first);
      }
      if (typeof operation !== 'function')
        return Promise.reject(new TypeError('operation must be a function'));
      const signal = options?.signal === undefined ? new AbortController().signal : options.signal;
      if (!(signal instanceof AbortSignal))
        return Promise.reject(new TypeError('signal must be an AbortSignal'));
      if (signal.aborted && flaw !== 'ignores-pre-aborted-signal') return Promise.reject(signal.reason);
      const startedAt = clock.now();
      const watchdog = clock.setTimer(() => {}, 60_000);
      const aborted = (): void => {};
      signal.addEventListener('abort', aborted);
      const context: Context = { signal, attempt: 1, deadline: options?.deadline };
      const done = (): void => {
        if (flaw !== 'leaves-live-timer') clock.clearTimer(watchdog);
        if (flaw !== 'leaks-abort-listener') signal.removeEventListener('abort', aborted);
      };
      return new Promise<T>((resolve) => resolve(operation(context))).then(
        (value) => {
          done();
          emit(succeeded, { policy: name, durationMs: clock.now() - startedAt });
          return value;
        },
        (error: unknown) => {
          done();
          emit(failed, {
            policy: name,
            error,
            kind: classify(error),
            durationMs: clock.now() - startedAt,
            handled: false,
          });
          throw flaw === 'swallows-abort-reason' && signal.aborted ? new Error('canceled') : error;
        },
      );
    },
  };
  return policy satisfies Policy;
}

interface Failure {
  readonly test: string;
  readonly message: string;
}

/** Runs the whole suite on `make` with a runner of our own, collecting what failed. */
async function failuresOf(make: MakePolicy): Promise<{ tests: number; failures: Failure[] }> {
  const tests: { name: string; body: () => Promise<void> }[] = [];
  const path: string[] = [];
  policyConformance('under test', make, {
    describe(name, body) {
      path.push(name);
      body();
      path.pop();
    },
    it(name, body) {
      tests.push({ name: [...path, name].join(' > '), body });
    },
  });
  const failures: Failure[] = [];
  for (const test of tests) {
    try {
      await test.body();
    } catch (error) {
      failures.push({ test: test.name, message: error instanceof Error ? error.message : String(error) });
    }
  }
  return { tests: tests.length, failures };
}

const flawed =
  (flaw?: Flaw): MakePolicy =>
  ({ clock }) => ({ policy: userPolicy(clock, flaw), enforcesDeadline: false });

describe('policyConformance', () => {
  it('passes a correct user policy, every scenario in all three ways', async () => {
    const { tests, failures } = await failuresOf(flawed());
    expect(failures).toEqual([]);
    expect(tests).toBe(3 * 12); // 9 for every policy, 1 for listeners, 2 for onSuccess/onFailure
  });

  // Each flaw, the scenario (in every way that reaches the flaw) that must report it, and the message.
  const cases: [Flaw, RegExp, RegExp, number][] = [
    [
      'leaks-abort-listener',
      /leaves no abort listener on the caller's signal and no live timer/,
      /a value returned at once: 1 abort listener\(s\) left on the caller's signal/,
      3,
    ],
    [
      'ignores-pre-aborted-signal',
      /an already-aborted signal rejects with its reason/,
      /a call with an already-aborted signal: (expected it to reject|the operation ran)/,
      1, // inside a pipeline the pipeline's own edge refuses the aborted signal first
    ],
    [
      'leaves-live-timer',
      /leaves no abort listener on the caller's signal and no live timer/,
      /a value returned at once: 1 live timer\(s\) left after the call settled/,
      3,
    ],
    [
      'throws-synchronously',
      /a synchronous throw rejects with the operation's error/,
      /execute threw synchronously \(Error: "policy conformance: the operation failed"\)/,
      1, // in a pipeline the suite's operation runs inside the pipeline's step, which catches it
    ],
    [
      'listener-breaks-call',
      /a throwing listener \(on every on\* subscription\) never breaks a call/,
      /with a throwing listener on onFailure, onSuccess: a value returned at once: expected it to resolve/,
      3,
    ],
    [
      'events-without-policy-name',
      /onSuccess\(\{ policy, durationMs \}\) fires once/,
      /onSuccess for a value returned at once: "policy" must be the policy's name, got ""/,
      3,
    ],
    [
      'swallows-abort-reason',
      /an abort mid-call reaches the operation's signal at once/,
      /a call aborted by its caller mid-call: expected it to reject with Error: "policy conformance: the caller aborted", got Error: "canceled"/,
      3,
    ],
  ];

  it.each(cases)('reports a policy that %s, naming the scenario', async (flaw, scenario, message, ways) => {
    const { failures } = await failuresOf(flawed(flaw));
    const named = failures.filter((f) => scenario.test(f.test));
    expect(named.map((f) => f.test.split(' > ')[1])).toHaveLength(ways);
    for (const failure of named) expect(failure.message).toMatch(message);
    expect(named[0]!.message).toMatch(/^policy conformance: /);
  });

  it('reports a policy whose execute throws for a bad argument instead of rejecting', async () => {
    const { failures } = await failuresOf(({ clock }) => {
      const inner = userPolicy(clock);
      return {
        policy: {
          execute: (operation: Operation<unknown>, options?: ExecuteOptions) => {
            if (typeof operation !== 'function') throw new TypeError('not a function');
            return inner.execute(operation, options);
          },
        },
        enforcesDeadline: false,
      };
    });
    const named = failures.filter((f) => /an operation that is not a function/.test(f.test));
    expect(named).toHaveLength(1); // the pipelines check the operation at their own edge
    expect(named[0]!.message).toMatch(/operation: 42: execute threw synchronously \(TypeError/);
  });

  it('reports a declared deadline the policy does not keep', async () => {
    const { failures } = await failuresOf(({ clock }) => ({ policy: userPolicy(clock) }));
    const named = failures.filter((f) => /a caller's deadline/.test(f.test));
    expect(named).toHaveLength(3);
    expect(named[0]!.message).toMatch(
      /a call with a deadline 50 ms away: the call had not ended at its deadline/,
    );
  });

  it('reports a refusal that runs the operation, and an onRejected-less policy that refuses', async () => {
    const { failures } = await failuresOf(({ clock }) => ({
      policy: userPolicy(clock),
      enforcesDeadline: false,
      refuse: () => {},
    }));
    const refusals = failures.filter((f) => /a refusal rejects without running the operation/.test(f.test));
    expect(refusals).toHaveLength(3);
    expect(refusals[0]!.message).toMatch(/a call after refuse\(\): the call was admitted/);
    const events = failures.filter((f) => /onRejected/.test(f.test));
    expect(events).toHaveLength(3);
    expect(events[0]!.message).toMatch(/the policy refuses calls but has no onRejected/);
  });
});
