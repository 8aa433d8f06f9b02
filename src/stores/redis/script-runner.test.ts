import { describe, expect, it } from 'vitest';
import { deferred } from '../../../test/support/deferred.js';
import { isStoreUnavailableError, isTimeoutError, type StoreUnavailableError } from '../../core/errors.js';
import { FakeClock } from '../../testing/fake-clock.js';
import { StoreDeadline } from './deadline.js';
import { RedisScript } from './script.js';
import { ScriptRunner, type ScriptRunnerClient } from './script-runner.js';

/** A client whose script calls answer `reply()` (a promise), recording what was sent. */
function client(reply: () => Promise<unknown>, status = 'ready') {
  const sent: unknown[][] = [];
  const answer = (_script: string, numKeys: number, ...keysAndArgs: (string | number)[]) => {
    sent.push([numKeys, ...keysAndArgs]);
    return reply();
  };
  const fake: ScriptRunnerClient = { status, eval: answer, evalsha: answer };
  return { fake, sent };
}

function runner(fake: ScriptRunnerClient) {
  const clock = new FakeClock();
  return { clock, scripts: new ScriptRunner(fake, new StoreDeadline(clock, 100)) };
}

const script = new RedisScript('return 1');
/** The rejection of `promise`, which must reject. */
const failure = (promise: Promise<unknown>) =>
  promise.then(
    () => {
      throw new Error('expected a rejection');
    },
    (error: unknown) => error as StoreUnavailableError,
  );
/** One call on key `k` that resolves its reply as it came. */
const callK = (scripts: ScriptRunner) =>
  scripts.run(
    script,
    1,
    () => ['k'],
    (reply) => reply,
  );

describe('ScriptRunner', () => {
  it('sends the keys then the arguments and resolves what read makes of the reply', async () => {
    const { fake, sent } = client(() => Promise.resolve(['a', 2]));
    const { scripts, clock } = runner(fake);
    expect(
      await scripts.run(
        script,
        2,
        () => ['k', 'j', 5],
        (reply) => (reply as unknown[]).length,
      ),
    ).toBe(2);
    expect(sent).toEqual([[2, 'k', 'j', 5]]);
    await clock.advance(100);
    expect(clock.pendingTimers).toBe(0);
  });

  it('bad input rejects with its own error: nothing is sent and no deadline starts', async () => {
    const { fake, sent } = client(() => Promise.resolve(1));
    const { scripts, clock } = runner(fake);
    const bad = new TypeError('expected "key" to be a non-empty string');
    const read = () => {
      throw new Error('never read');
    };
    await expect(
      scripts.run(
        script,
        1,
        () => {
          throw bad;
        },
        read,
      ),
    ).rejects.toBe(bad);
    expect(sent).toEqual([]);
    expect(clock.pendingTimers).toBe(0);
  });

  it('a read that throws is the rejection, as thrown', async () => {
    const { fake } = client(() => Promise.resolve('odd'));
    const { scripts } = runner(fake);
    const refused = new Error('stale');
    await expect(
      scripts.run(
        script,
        1,
        () => ['k'],
        () => {
          throw refused;
        },
      ),
    ).rejects.toBe(refused);
  });

  it('a failing call rejects with StoreUnavailableError, its cause the error, sync or async', async () => {
    const down = new Error('ECONNRESET');
    for (const reply of [
      () => Promise.reject(down),
      () => {
        throw down;
      },
    ]) {
      const { fake } = client(reply);
      const { scripts } = runner(fake);
      const error = await failure(callK(scripts));
      expect(isStoreUnavailableError(error)).toBe(true);
      expect(error.message).toBe('Redis failed: ECONNRESET');
      expect(error.cause).toBe(down);
    }
  });

  it('a reply after the deadline is dropped: the call already failed, and read never runs', async () => {
    const late = deferred<unknown>();
    const { fake } = client(() => late.promise);
    const { scripts, clock } = runner(fake);
    let reads = 0;
    const call = failure(
      scripts.run(
        script,
        1,
        () => ['k'],
        (reply) => {
          reads++;
          return reply;
        },
      ),
    );
    await clock.advance(100);
    const error = await call;
    expect(isTimeoutError(error.cause)).toBe(true);
    late.resolve(1);
    await clock.advance(0);
    expect(reads).toBe(0);
  });

  it('a connection that is down refuses at once, sending nothing', async () => {
    const { fake, sent } = client(() => Promise.resolve(1), 'reconnecting');
    const { scripts } = runner(fake);
    const error = await failure(callK(scripts));
    expect(error.message).toBe('Redis connection is reconnecting');
    expect(sent).toEqual([]);
  });

  it('owned: 1 is true, 0 false, anything else an unexpected reply naming the operation', async () => {
    for (const [reply, expected] of [
      [1, true],
      [0, false],
    ] as const) {
      const { fake } = client(() => Promise.resolve(reply));
      expect(await runner(fake).scripts.owned('renew', script, () => ['k', 'o'])).toBe(expected);
    }
    for (const reply of [2, '1', null, [1]]) {
      const { fake } = client(() => Promise.resolve(reply));
      const error = await failure(runner(fake).scripts.owned('renew', script, () => ['k']));
      expect(isStoreUnavailableError(error)).toBe(true);
      expect(error.message).toMatch(/^Redis failed: unexpected renew script reply: /);
    }
  });
});
