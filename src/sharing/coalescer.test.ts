import { describe, expect, it } from 'vitest';
import { deferred } from '../../test/support/deferred.js';
import { setListenerErrorHandler } from '../core/events.js';
import { Coalescer } from './coalescer.js';
import type { CancelledEvent, SharedEvent } from './options.js';
import type { SharedCallContext } from './shared-calls.js';

/** A call held open: `fn` records its context, the test settles it. */
function held<T>() {
  const gate = deferred<T>();
  const contexts: SharedCallContext[] = [];
  const fn = (context: SharedCallContext) => {
    contexts.push(context);
    return gate.promise;
  };
  return { gate, contexts, fn };
}

const settledWith = (promise: Promise<unknown>) =>
  promise.then(
    (value) => ({ value }),
    (error: unknown) => ({ error }),
  );

describe('Coalescer: callers that leave', () => {
  it('a caller whose signal aborts rejects at once with its reason; the call runs on for the others', async () => {
    const coalescer = new Coalescer();
    const { gate, contexts, fn } = held<string>();
    const leaving = new AbortController();
    const left = settledWith(coalescer.do('k', fn, { signal: leaving.signal }));
    const staying = coalescer.do('k', fn);
    const reason = new Error('caller left');
    leaving.abort(reason);
    expect(await left).toEqual({ error: reason });
    expect(contexts[0]!.signal.aborted).toBe(false);
    gate.resolve('value');
    expect(await staying).toBe('value');
  });

  it("when every caller has left, the call's signal aborts with the last reason, and the next caller starts afresh", async () => {
    const cancelled: CancelledEvent[] = [];
    const coalescer = new Coalescer({ name: 'users', onCancelled: (e) => cancelled.push(e) });
    const first = held<string>();
    const a = new AbortController();
    const b = new AbortController();
    const calls = [
      settledWith(coalescer.do('k', first.fn, { signal: a.signal })),
      settledWith(coalescer.do('k', first.fn, { signal: b.signal })),
    ];
    a.abort(new Error('a left'));
    expect(first.contexts[0]!.signal.aborted).toBe(false);
    const last = new Error('b left');
    b.abort(last);
    expect(await Promise.all(calls)).toEqual([{ error: new Error('a left') }, { error: last }]);
    expect(first.contexts[0]!.signal.reason).toBe(last);
    expect(cancelled).toEqual([{ policy: 'users', key: 'k', reason: last }]);
    expect(coalescer.inFlight).toBe(0);
    const second = held<string>();
    const fresh = coalescer.do('k', second.fn);
    expect(second.contexts).toHaveLength(1);
    second.gate.resolve('new');
    first.gate.resolve('old'); // the abandoned call's late value reaches no one
    expect(await fresh).toBe('new');
  });

  it('a signal first read after the call was abandoned is already aborted', async () => {
    const coalescer = new Coalescer();
    let context: SharedCallContext | undefined;
    const gate = deferred<void>();
    const caller = new AbortController();
    const call = settledWith(
      coalescer.do(
        'k',
        (c) => {
          context = c;
          return gate.promise;
        },
        { signal: caller.signal },
      ),
    );
    caller.abort('gone');
    await call;
    expect(context!.signal.aborted).toBe(true);
    expect(context!.signal.reason).toBe('gone');
  });

  it('keepRunningWhenAbandoned: the call is never aborted, a later caller joins it, and a late failure is no unhandled rejection', async () => {
    const cancelled: CancelledEvent[] = [];
    const coalescer = new Coalescer({
      keepRunningWhenAbandoned: true,
      onCancelled: (e) => cancelled.push(e),
    });
    const { gate, contexts, fn } = held<string>();
    const caller = new AbortController();
    const left = settledWith(coalescer.do('k', fn, { signal: caller.signal }));
    caller.abort('gone');
    expect(await left).toEqual({ error: 'gone' });
    expect(contexts[0]!.signal.aborted).toBe(false);
    expect(coalescer.inFlight).toBe(1);
    const later = coalescer.do('k', fn);
    expect(contexts).toHaveLength(1);
    gate.resolve('filled');
    expect(await later).toBe('filled');
    expect(cancelled).toEqual([]);

    const failing = held<string>();
    const other = new AbortController();
    const gone = settledWith(coalescer.do('j', failing.fn, { signal: other.signal }));
    other.abort('gone');
    await gone;
    failing.gate.reject(new Error('late failure')); // vitest fails the run on an unhandled rejection
    await new Promise((resolve) => setImmediate(resolve));
    expect(coalescer.inFlight).toBe(0);
  });

  it('a signal aborted before the call rejects with its reason and starts nothing', async () => {
    const coalescer = new Coalescer();
    let runs = 0;
    const reason = new Error('already');
    await expect(
      coalescer.do(
        'k',
        () => {
          runs++;
        },
        { signal: AbortSignal.abort(reason) },
      ),
    ).rejects.toBe(reason);
    expect(runs).toBe(0);
    expect(coalescer.inFlight).toBe(0);
  });

  it('a thousand callers on one request signal: one abort fails them all, the call is cancelled once', async () => {
    const cancelled: CancelledEvent[] = [];
    const coalescer = new Coalescer({ onCancelled: (e) => cancelled.push(e) });
    const { contexts, fn } = held<string>();
    const request = new AbortController();
    const calls = Array.from({ length: 1_000 }, () =>
      settledWith(coalescer.do('k', fn, { signal: request.signal })),
    );
    request.abort('request closed');
    const outcomes = await Promise.all(calls);
    expect(outcomes.every((o) => 'error' in o && o.error === 'request closed')).toBe(true);
    expect(contexts[0]!.signal.reason).toBe('request closed');
    expect(cancelled).toHaveLength(1);
  });
});

describe('Coalescer: callers with signals that stay', () => {
  it('a caller with a signal gets the value, and its signal aborting afterwards changes nothing', async () => {
    const cancelled: CancelledEvent[] = [];
    const coalescer = new Coalescer({ onCancelled: (e) => cancelled.push(e) });
    const { gate, contexts, fn } = held<string>();
    const caller = new AbortController();
    const call = coalescer.do('k', fn, { signal: caller.signal });
    gate.resolve('value');
    expect(await call).toBe('value');
    caller.abort('too late');
    expect(cancelled).toEqual([]);
    expect(contexts[0]!.signal.aborted).toBe(false);
  });

  it('an abort that lands after the call settled but before its callers heard cancels nothing', async () => {
    const cancelled: CancelledEvent[] = [];
    const coalescer = new Coalescer({ onCancelled: (e) => cancelled.push(e) });
    const { gate, contexts, fn } = held<string>();
    const caller = new AbortController();
    const call = settledWith(coalescer.do('k', fn, { signal: caller.signal }));
    gate.resolve('value');
    await null; // the call has settled; its callers hear of it on a later tick
    caller.abort('just then');
    await call;
    expect(cancelled).toEqual([]);
    expect(contexts[0]!.signal.aborted).toBe(false);
  });

  it('onShared and onCancelled subscribe on the instance; their disposers unsubscribe', async () => {
    const coalescer = new Coalescer({ name: 'prices' });
    const shared: SharedEvent[] = [];
    const cancelled: CancelledEvent[] = [];
    const unshare = coalescer.onShared((e) => shared.push(e));
    const uncancel = coalescer.onCancelled((e) => cancelled.push(e));
    expect(coalescer.name).toBe('prices');
    const { fn } = held<string>();
    const caller = new AbortController();
    const calls = [
      coalescer.do('k', fn, { signal: caller.signal }),
      coalescer.do('k', fn, { signal: caller.signal }),
    ].map(settledWith);
    caller.abort('gone');
    await Promise.all(calls);
    expect(shared).toEqual([{ policy: 'prices', key: 'k', waiters: 2 }]);
    expect(cancelled).toEqual([{ policy: 'prices', key: 'k', reason: 'gone' }]);
    unshare();
    uncancel();
    const again = new AbortController();
    const more = [
      coalescer.do('j', fn, { signal: again.signal }),
      coalescer.do('j', fn, { signal: again.signal }),
    ].map(settledWith);
    again.abort('gone');
    await Promise.all(more);
    expect(shared).toHaveLength(1);
    expect(cancelled).toHaveLength(1);
  });
});

describe('Coalescer: sharing', () => {
  it('a thousand concurrent callers of a cold key: the function runs once and every caller gets its value', async () => {
    const shared: SharedEvent[] = [];
    const coalescer = new Coalescer({ onShared: (e) => shared.push(e) });
    const { gate, contexts, fn } = held<{ id: number }>();
    const calls = Array.from({ length: 1_000 }, () => coalescer.do('user:1', fn));
    expect(contexts).toHaveLength(1);
    expect(coalescer.inFlight).toBe(1);
    const value = { id: 1 };
    gate.resolve(value);
    const values = await Promise.all(calls);
    expect(values.every((v) => v === value)).toBe(true);
    expect(shared).toHaveLength(999);
    expect(shared.at(-1)).toEqual({ policy: 'coalescer', key: 'user:1', waiters: 1_000 });
  });

  it('every caller gets the same error, and nothing is kept: the next caller runs the function again', async () => {
    const coalescer = new Coalescer();
    const { gate, fn } = held<string>();
    const calls = [coalescer.do('k', fn), coalescer.do('k', fn)].map(settledWith);
    const failure = new Error('down');
    gate.reject(failure);
    expect(await Promise.all(calls)).toEqual([{ error: failure }, { error: failure }]);
    expect(coalescer.inFlight).toBe(0);
    expect(await coalescer.do('k', () => 'again')).toBe('again');
  });

  it('keys are the caller’s: two functions with one key share the first one’s call; other keys are independent', async () => {
    const coalescer = new Coalescer();
    const runs: string[] = [];
    const [a, b, c] = await Promise.all([
      coalescer.do('k', async () => {
        runs.push('first');
        return 1;
      }),
      coalescer.do('k', async () => {
        runs.push('second');
        return 2;
      }),
      coalescer.do('other', async () => {
        runs.push('other');
        return 3;
      }),
    ]);
    expect([a, b, c]).toEqual([1, 1, 3]);
    expect(runs).toEqual(['first', 'other']);
  });

  it('a function that throws or returns synchronously settles every caller the same way', async () => {
    const coalescer = new Coalescer();
    const failure = new Error('sync');
    const thrown = [
      coalescer.do('k', () => {
        throw failure;
      }),
      coalescer.do('k', () => 'unused'),
    ].map(settledWith);
    expect(await thrown[0]).toEqual({ error: failure });
    expect(await thrown[1]).toEqual({ value: 'unused' }); // the throw ended the first call at once
    expect(await coalescer.do('k', () => 42)).toBe(42);
  });

  it('forget: the next caller starts a new call; the old one settles its own callers and leaves the new entry alone', async () => {
    const coalescer = new Coalescer();
    const first = held<string>();
    const second = held<string>();
    const old = coalescer.do('k', first.fn);
    coalescer.forget('k');
    const fresh = coalescer.do('k', second.fn);
    expect(second.contexts).toHaveLength(1);
    first.gate.resolve('old');
    expect(await old).toBe('old');
    expect(coalescer.inFlight).toBe(1);
    const joined = coalescer.do('k', () => 'unused');
    second.gate.resolve('new');
    expect([await fresh, await joined]).toEqual(['new', 'new']);
  });

  it('a throwing listener breaks no call, and is reported', async () => {
    const reported: unknown[] = [];
    const previous = setListenerErrorHandler((e) => reported.push(e));
    try {
      const coalescer = new Coalescer({
        onShared: () => {
          throw new Error('listener');
        },
      });
      const { gate, fn } = held<string>();
      const calls = [coalescer.do('k', fn), coalescer.do('k', fn)];
      gate.resolve('v');
      expect(await Promise.all(calls)).toEqual(['v', 'v']);
      expect(reported).toEqual([new Error('listener')]);
    } finally {
      setListenerErrorHandler(previous);
    }
  });
});

describe('Coalescer: bad input', () => {
  it('refuses bad and unknown options at construction', () => {
    expect(() => new Coalescer({ keepRunningWhenAbandoned: 'yes' as never })).toThrow(
      /"keepRunningWhenAbandoned" to be a boolean/,
    );
    expect(() => new Coalescer({ name: '' })).toThrow(/"name"/);
    expect(() => new Coalescer({ keepRunning: true } as never)).toThrow(
      'unknown option "keepRunning" in Coalescer options',
    );
  });

  it('rejects a key that is not a string, a function that is not one, and bad call options', async () => {
    const coalescer = new Coalescer();
    await expect(coalescer.do(1 as never, () => 1)).rejects.toThrow(/"key" to be a string, got 1/);
    await expect(coalescer.do('k', 'fn' as never)).rejects.toThrow(/"fn" to be a function/);
    await expect(coalescer.do('k', () => 1, { signal: {} as never })).rejects.toThrow(/"signal"/);
    await expect(coalescer.do('k', () => 1, { timeoutMs: 5 } as never)).rejects.toThrow(
      'unknown option "timeoutMs" in call options',
    );
    expect(await coalescer.do('', () => 'empty keys are keys')).toBe('empty keys are keys');
    expect(coalescer.inFlight).toBe(0);
  });
});
