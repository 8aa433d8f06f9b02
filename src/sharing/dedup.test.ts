import { describe, expect, it } from 'vitest';
import { deferred } from '../../test/support/deferred.js';
import { dedup } from './dedup.js';
import type { CancelledEvent, SharedEvent } from './options.js';
import type { SharedCallContext } from './shared-calls.js';

const settledWith = (promise: Promise<unknown>) =>
  promise.then(
    (value) => ({ value }),
    (error: unknown) => ({ error }),
  );

/** A deduped action whose executions are held open until the test settles them. */
function heldAction() {
  const executions: {
    input: string;
    context: SharedCallContext;
    gate: ReturnType<typeof deferred<string>>;
  }[] = [];
  const action = (input: string, context: SharedCallContext) => {
    const gate = deferred<string>();
    executions.push({ input, context, gate });
    return gate.promise;
  };
  return { executions, action };
}

describe('dedup: cancellation', () => {
  it("one caller's abort cancels the execution: its signal aborts and every caller rejects with that reason at once", async () => {
    const cancelled: CancelledEvent[] = [];
    const { executions, action } = heldAction();
    const load = dedup(action, { key: (id) => id, name: 'users', onCancelled: (e) => cancelled.push(e) });
    const caller = new AbortController();
    const calls = [
      load('1'),
      load('1', { signal: caller.signal }),
      load('1', { signal: new AbortController().signal }),
    ].map(settledWith);
    const reason = new Error('client went away');
    caller.abort(reason);
    // The action ignores its signal and never settles: the callers do not wait for it.
    expect(await Promise.all(calls)).toEqual([{ error: reason }, { error: reason }, { error: reason }]);
    expect(executions[0]!.context.signal.reason).toBe(reason);
    expect(cancelled).toEqual([{ policy: 'users', key: '1', reason }]);
    expect(load.inFlight).toBe(0);
    const fresh = load('1');
    expect(executions).toHaveLength(2);
    executions[1]!.gate.resolve('new');
    executions[0]!.gate.resolve('old');
    expect(await fresh).toBe('new');
  });

  it('a signal aborted before the call rejects with its reason and starts nothing', async () => {
    const { executions, action } = heldAction();
    const load = dedup(action, { key: (id) => id });
    await expect(load('1', { signal: AbortSignal.abort('early') })).rejects.toBe('early');
    expect(executions).toHaveLength(0);
  });
});

describe('dedup: sharing', () => {
  it('concurrent calls with one key run the action once; other keys run their own', async () => {
    const shared: SharedEvent[] = [];
    const { executions, action } = heldAction();
    const load = dedup(action, { key: (id) => `user:${id}`, onShared: (e) => shared.push(e) });
    const calls = [load('1'), load('1'), load('2')];
    expect(executions.map((e) => e.input)).toEqual(['1', '2']);
    expect(load.inFlight).toBe(2);
    executions[0]!.gate.resolve('one');
    executions[1]!.gate.resolve('two');
    expect(await Promise.all(calls)).toEqual(['one', 'one', 'two']);
    expect(shared).toEqual([{ policy: 'dedup', key: 'user:1', waiters: 2 }]);
    expect(load.name).toBe('dedup');
  });

  it('every caller gets the same error, and it is not kept: the next call runs the action again', async () => {
    const { executions, action } = heldAction();
    const load = dedup(action, { key: (id) => id });
    const calls = [load('1'), load('1')].map(settledWith);
    const failure = new Error('down');
    executions[0]!.gate.reject(failure);
    expect(await Promise.all(calls)).toEqual([{ error: failure }, { error: failure }]);
    const again = load('1');
    expect(executions).toHaveLength(2);
    executions[1]!.gate.resolve('ok');
    expect(await again).toBe('ok');
  });

  it('forget: the next call starts a new execution', async () => {
    const { executions, action } = heldAction();
    const load = dedup(action, { key: (id) => id });
    const old = load('1');
    load.forget('1');
    const fresh = load('1');
    expect(executions).toHaveLength(2);
    executions[0]!.gate.resolve('old');
    executions[1]!.gate.resolve('new');
    expect([await old, await fresh]).toEqual(['old', 'new']);
  });

  it('onShared and onCancelled subscribe and return disposers', async () => {
    const { executions, action } = heldAction();
    const load = dedup(action, { key: (id) => id });
    const shared: SharedEvent[] = [];
    const cancelled: CancelledEvent[] = [];
    const unshare = load.onShared((e) => shared.push(e));
    load.onCancelled((e) => cancelled.push(e));
    const caller = new AbortController();
    const calls = [load('1'), load('1', { signal: caller.signal })].map(settledWith);
    unshare();
    caller.abort('x');
    await Promise.all(calls);
    expect(shared).toHaveLength(1);
    expect(cancelled).toHaveLength(1);
    void load('2');
    void load('2');
    expect(shared).toHaveLength(1);
    executions[1]!.gate.resolve('done');
  });
});

describe('dedup: bad input', () => {
  it('refuses a missing or bad key, a bad action and unknown options', () => {
    const action = async (id: string) => id;
    expect(() => dedup(action, undefined as never)).toThrow(/"key"/);
    expect(() => dedup(action, { key: 'id' as never })).toThrow(/"key" to be a function/);
    expect(() => dedup('action' as never, { key: (id: string) => id })).toThrow(/"action" to be a function/);
    expect(() => dedup(action, { key: (id: string) => id, keys: 1 } as never)).toThrow(
      /^unknown option "keys" in dedup options/,
    );
  });

  it('a call whose key is not a string rejects with a TypeError and runs nothing', async () => {
    const { executions, action } = heldAction();
    const load = dedup(action, { key: (id) => (id === 'bad' ? (42 as never) : id) });
    await expect(load('bad')).rejects.toThrow(/"key" to be a string, got 42/);
    const throwing = dedup(action, {
      key: () => {
        throw new TypeError('no key');
      },
    });
    await expect(throwing('1')).rejects.toThrow('no key');
    expect(executions).toHaveLength(0);
  });
});
