/**
 * The gate's hooks, through small policies built on `GatedPolicy` that log what the gate hands
 * them: `execute`'s fast path applies `passValue` and `recover`, `settle` learns the ticket and how
 * each call ended on every path, a synchronous call frees its slot before `execute` returns, a
 * broken `run` still fails the call and releases, `run` gets a note only while `onFailure` is
 * listened to, and an admission decided by a promise is honoured, refused, failed or abandoned.
 */
import { describe, expect, it, vi } from 'vitest';
import { fallback } from '../retry/fallback.js';
import { FakeClock } from '../testing/fake-clock.js';
import type { Clock } from './clock.js';
import type { Context, Operation } from './context.js';
import { GatedPolicy } from './gate.js';
import { type Admission, type CallNote, Refusal, type Ticket } from './gate-types.js';
import type { Outcome } from './outcome.js';
import { pipeline } from './pipeline.js';
import type { Policy, Step } from './policy.js';
import type { FailureEvent } from './policy-events.js';

interface Setup {
  readonly admit?: (context: Context) => Admission<'busy'>;
  readonly run?: (
    next: Step<unknown>,
    context: Context,
    note: CallNote | undefined,
  ) => Promise<Outcome<unknown>>;
  readonly passValue?: (value: unknown) => unknown;
  /** What `settle` answers: whether the policy acted on the failure. */
  readonly handles?: boolean;
  readonly onRelease?: () => void;
  /** Times `durationMs`. */
  readonly clock?: Clock;
}

/** Fills in only `admit`, `run` and `passValue` (from the setup); logs what the other hooks see. */
class Plain extends GatedPolicy<'busy'> {
  readonly log: unknown[] = [];

  constructor(readonly setup: Setup = {}) {
    super('gated');
    if (setup.passValue !== undefined) this.passValue = setup.passValue as <T>(value: T) => T;
    this.configure({}, setup.clock);
  }

  protected override admit(context: Context): Admission<'busy'> {
    return this.setup.admit === undefined ? 0 : this.setup.admit(context);
  }

  protected override run<T>(
    next: Step<T>,
    context: Context,
    ticket: Ticket,
    note: CallNote | undefined,
  ): Promise<Outcome<T>> {
    if (this.setup.run === undefined) return super.run(next, context, ticket, note);
    return this.setup.run(next as Step<unknown>, context, note) as Promise<Outcome<T>>;
  }
}

class Releasing extends Plain {
  protected override release(): void {
    this.log.push('release');
    this.setup.onRelease?.();
  }
}

class Settling extends Plain {
  protected override settle(ticket: Ticket, failed: boolean, error: unknown, _context: Context): boolean {
    this.log.push({ ticket, failed, error });
    return this.setup.handles ?? false;
  }
}

class Recovering extends Plain {
  protected override recover<T>(_operation: Operation<T>, _context: Context, error: unknown): Promise<T> {
    this.log.push({ recovered: error });
    return Promise.resolve(`recovered from ${(error as Error).message}` as T);
  }
}

/** Settles through the default `settle` and logs what it answered. */
class Deferring extends Plain {
  protected override settle(ticket: Ticket, failed: boolean, error: unknown, context: Context): boolean {
    const acted = super.settle(ticket, failed, error, context);
    this.log.push(acted);
    return acted;
  }
}

function deferred<T>() {
  let resolve!: (value: T) => void;
  let reject!: (error: unknown) => void;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

const throwing = (error: unknown) => () => {
  throw error;
};

describe('gate: the fast path (execute, nobody listening)', () => {
  it('hands each value to passValue, sync or async', async () => {
    const policy = new Plain({ passValue: (value) => `${String(value)}!` });
    await expect(policy.execute(() => 'sync')).resolves.toBe('sync!');
    await expect(policy.execute(async () => 'async')).resolves.toBe('async!');
  });

  it('hands a thrown or rejected failure to recover, whose answer the call resolves with', async () => {
    const policy = new Recovering();
    const thrown = new Error('thrown');
    const rejected = new Error('rejected');
    await expect(policy.execute(throwing(thrown))).resolves.toBe('recovered from thrown');
    await expect(policy.execute(() => Promise.reject(rejected))).resolves.toBe('recovered from rejected');
    expect(policy.log).toEqual([{ recovered: thrown }, { recovered: rejected }]);
  });

  it('settle gets the ticket and how the call ended: a value, a throw or a rejection, sync or async', async () => {
    const policy = new Settling({ admit: () => 7 });
    const thrown = new Error('thrown');
    const rejected = new Error('rejected');
    await expect(policy.execute(() => 'sync')).resolves.toBe('sync');
    await expect(policy.execute(async () => 'async')).resolves.toBe('async');
    await expect(policy.execute(throwing(thrown))).rejects.toBe(thrown);
    await expect(policy.execute(() => Promise.reject(rejected))).rejects.toBe(rejected);
    expect(policy.log).toEqual([
      { ticket: 7, failed: false, error: undefined },
      { ticket: 7, failed: false, error: undefined },
      { ticket: 7, failed: true, error: thrown },
      { ticket: 7, failed: true, error: rejected },
    ]);
  });

  it('a call that returns a value (not a promise) frees its slot before execute returns: back-to-back calls are all admitted', async () => {
    let busy = false;
    const policy = new Releasing({
      admit: () => {
        if (busy) return new Refusal('busy', new Error('busy'));
        busy = true;
        return 0;
      },
      onRelease: () => {
        busy = false;
      },
    });
    const calls = [policy.execute(() => ({ n: 1 })), policy.execute(() => null), policy.execute(() => 3)];
    await expect(Promise.all(calls)).resolves.toEqual([{ n: 1 }, null, 3]);
    expect(policy.log).toEqual(['release', 'release', 'release']);
  });
});

/** A fake clock that counts how often it is read. */
class CountingClock extends FakeClock {
  reads = 0;
  override now(): number {
    this.reads++;
    return super.now();
  }
}

describe('gate: events cost nothing unless someone listens for durations', () => {
  it.each([
    ['releases', (setup: Setup) => new Releasing(setup)],
    ['settles', (setup: Setup) => new Settling(setup)],
  ] as const)(
    'reads no clock while nobody listens to onSuccess or onFailure (a policy that %s)',
    async (_, make) => {
      const clock = new CountingClock(1_000);
      const policy = make({ clock });
      policy.onRejected(() => {});
      const error = new Error('down');
      for (const run of [
        (op: () => unknown) => policy.execute(op),
        (op: () => unknown) => pipeline(policy).execute(op),
      ]) {
        await expect(run(() => 'value')).resolves.toBe('value');
        await expect(run(() => Promise.reject(error))).rejects.toBe(error);
      }
      expect(clock.reads).toBe(0);
    },
  );

  it("inspects no failed call's error while only onSuccess is listened to", async () => {
    let reads = 0;
    const error = new Proxy(new Error('down'), {
      get(target, key, receiver) {
        reads++;
        return Reflect.get(target, key, receiver);
      },
    });
    const policy = new Releasing();
    policy.onSuccess(() => {});
    const caught: unknown[] = [];
    await policy.execute(() => Promise.reject(error)).catch((e: unknown) => void caught.push(e));
    await pipeline(policy)
      .execute(() => Promise.reject(error))
      .catch((e: unknown) => void caught.push(e));
    const seen = reads;
    expect(seen).toBe(0);
    expect(caught.length).toBe(2);
    expect(caught.every((e) => e === error)).toBe(true);
  });

  it("times each call on the policy's clock once someone listens", async () => {
    const clock = new CountingClock(1_000);
    const policy = new Releasing({ clock });
    const durations: number[] = [];
    policy.onSuccess((event) => durations.push(event.durationMs));
    const call = policy.execute(() => clock.sleep(25).then(() => 'value'));
    await clock.advance(25);
    await expect(call).resolves.toBe('value');
    expect(durations).toEqual([25]);
  });
});

describe('gate: the step path (in a pipeline)', () => {
  it('settle gets the ticket and how the call ended, and says whether the failure was handled', async () => {
    for (const handles of [false, true]) {
      const policy = new Settling({ admit: () => 3, handles });
      const failures: FailureEvent[] = [];
      const error = new Error('down');
      await expect(pipeline(policy).execute(() => 'value')).resolves.toBe('value');
      await expect(pipeline(policy).execute(() => Promise.reject(error))).rejects.toBe(error);
      policy.onFailure((event) => failures.push(event));
      await expect(pipeline(policy).execute(throwing(error))).rejects.toBe(error);
      expect(policy.log).toEqual([
        { ticket: 3, failed: false, error: undefined },
        { ticket: 3, failed: true, error },
        { ticket: 3, failed: true, error },
      ]);
      expect(failures).toMatchObject([{ policy: 'gated', error, handled: handles }]);
    }
  });

  it('a run that throws synchronously fails the call with its error and still releases', async () => {
    const boom = new Error('broken run');
    const policy = new Releasing({ run: throwing(boom) });
    await expect(pipeline(policy).execute(() => 'never')).rejects.toBe(boom);
    expect(policy.log).toEqual(['release']);
  });

  it('a run whose promise rejects fails the call with its error and still releases', async () => {
    const boom = new Error('broken run');
    const policy = new Releasing({ run: () => Promise.reject(boom) });
    await expect(pipeline(policy).execute(() => 'never')).rejects.toBe(boom);
    expect(policy.log).toEqual(['release']);
  });

  it('a run whose promise rejects reaches the policy around it as a failure, listened to or not', async () => {
    for (const observed of [false, true]) {
      const boom = new Error('broken run');
      const inner = new Plain({ run: () => Promise.reject(boom) });
      if (observed) inner.onFailure(() => {});
      const answered: unknown[] = [];
      const outer = fallback((error) => {
        answered.push(error);
        return 'answered';
      });
      await expect(pipeline(outer, inner).execute(() => 'never')).resolves.toBe('answered');
      expect(answered).toEqual([boom]);
    }
  });

  it('a run whose promise rejects is reported to onFailure, unhandled', async () => {
    const boom = new Error('broken run');
    const policy = new Plain({ run: () => Promise.reject(boom) });
    const failures: FailureEvent[] = [];
    policy.onFailure((event) => failures.push(event));
    await expect(pipeline(policy).execute(() => 'never')).rejects.toBe(boom);
    expect(failures).toMatchObject([{ policy: 'gated', error: boom, handled: false }]);
  });

  it('run gets a fresh, unhandled note only while someone listens to onFailure (or telemetry records the call)', async () => {
    const notes: unknown[] = [];
    const policy = new Plain({
      run: (next, context, note) => {
        notes.push(note === undefined ? undefined : { ...note });
        return next(context);
      },
    });
    await pipeline(policy).execute(() => 'unobserved');
    policy.onSuccess(() => {});
    await pipeline(policy).execute(() => 'successes observed');
    policy.onFailure(() => {});
    await pipeline(policy).execute(() => 'failures observed');
    expect(notes).toStrictEqual([undefined, undefined, { handled: false, answered: undefined }]);
  });

  it('a policy settling through the default settle is told it acted on nothing', async () => {
    const policy = new Deferring();
    const failures: FailureEvent[] = [];
    policy.onFailure((event) => failures.push(event));
    const error = new Error('down');
    await expect(pipeline(policy).execute(() => Promise.reject(error))).rejects.toBe(error);
    expect(policy.log).toEqual([false]);
    expect(failures).toMatchObject([{ error, handled: false }]);
  });
});

const ways = {
  execute: {
    observed: false,
    call: (policy: Policy, op: () => unknown, signal: AbortSignal) => policy.execute(op, { signal }),
  },
  'execute, observed': {
    observed: true,
    call: (policy: Policy, op: () => unknown, signal: AbortSignal) => policy.execute(op, { signal }),
  },
  pipeline: {
    observed: true,
    call: (policy: Policy, op: () => unknown, signal: AbortSignal) =>
      pipeline(policy).execute(op, { signal }),
  },
};

describe.each(Object.entries(ways))(
  'gate: admission decided by a promise (%s)',
  (_way, { observed, call }) => {
    function setUp<P extends Plain>(make: (setup: Setup) => P) {
      const admission = deferred<number | Refusal<'busy'>>();
      const policy = make({ admit: () => admission.promise });
      const failures: FailureEvent[] = [];
      if (observed) policy.onFailure((event) => failures.push(event));
      return { admission, policy, failures };
    }

    it('an admitted call runs once the promise says so', async () => {
      const { admission, policy } = setUp((setup) => new Releasing(setup));
      const op = vi.fn(() => 'ran');
      const result = call(policy, op, new AbortController().signal);
      await Promise.resolve();
      expect(op).not.toHaveBeenCalled();
      admission.resolve(0);
      await expect(result).resolves.toBe('ran');
      expect(policy.log).toEqual(['release']);
    });

    it('a caller that aborted while admission was pending never runs; its ticket is given back', async () => {
      const { admission, policy, failures } = setUp((setup) => new Releasing(setup));
      const controller = new AbortController();
      const op = vi.fn();
      const result = call(policy, op, controller.signal);
      const reason = new Error('caller left');
      controller.abort(reason);
      admission.resolve(0);
      await expect(result).rejects.toBe(reason);
      expect(op).not.toHaveBeenCalled();
      expect(policy.log).toEqual(['release']);
      expect(failures).toMatchObject(observed ? [{ error: reason, handled: false }] : []);
    });

    it('an abandoned ticket is settled as failed with the abort reason', async () => {
      const { admission, policy } = setUp((setup) => new Settling(setup));
      const controller = new AbortController();
      const result = call(policy, () => 'never', controller.signal);
      const reason = new Error('caller left');
      controller.abort(reason);
      admission.resolve(5);
      await expect(result).rejects.toBe(reason);
      expect(policy.log).toEqual([{ ticket: 5, failed: true, error: reason }]);
    });

    it('a refusal fails the call with its error and fires onRejected, unrun', async () => {
      const { admission, policy } = setUp((setup) => new Releasing(setup));
      const rejected: unknown[] = [];
      policy.onRejected((event) => rejected.push(event));
      const op = vi.fn();
      const result = call(policy, op, new AbortController().signal);
      const error = new Error('busy');
      admission.resolve(new Refusal('busy', error));
      await expect(result).rejects.toBe(error);
      expect(op).not.toHaveBeenCalled();
      expect(rejected).toEqual([{ policy: 'gated', reason: 'busy', error }]);
      expect(policy.log).toEqual([]);
    });

    it('an admission that rejects (a store down) fails the call with that error, unrun', async () => {
      const { admission, policy, failures } = setUp((setup) => new Releasing(setup));
      const op = vi.fn();
      const result = call(policy, op, new AbortController().signal);
      const storeDown = new Error('store down');
      admission.reject(storeDown);
      await expect(result).rejects.toBe(storeDown);
      expect(op).not.toHaveBeenCalled();
      expect(policy.log).toEqual([]);
      expect(failures).toMatchObject(observed ? [{ error: storeDown, handled: false }] : []);
    });
  },
);
