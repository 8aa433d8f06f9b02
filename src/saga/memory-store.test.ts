/**
 * What the memory log adds to the conformance suite (test/saga/memory-log-conformance.test.ts):
 * retention, which a portable suite cannot wait out; which run a claim takes; the messages of its
 * argument checks.
 */
import { describe, expect, it } from 'vitest';
import { FakeClock } from '../testing/fake-clock.js';
import { memorySagaLog } from './memory-store.js';
import { SAGA_RETENTION_MS } from './store.js';

const lease = (id: string) => ({ name: 's', id, owner: 'o', leaseMs: 1_000 });

describe('memorySagaLog retention', () => {
  it('forgets completed and compensated runs once retained long enough; keeps runs that need attention', async () => {
    const clock = new FakeClock();
    const log = memorySagaLog({ clock });
    for (const [id, status] of [
      ['done', 'completed'],
      ['undone', 'compensated'],
      ['odd', 'attention'],
    ] as const) {
      await log.start(lease(id), '{}');
      await log.write(lease(id), { status });
    }
    await log.start(lease('open'), '{}');
    await clock.advance(SAGA_RETENTION_MS - 1);
    expect(await log.start(lease('done'), '{}')).toBe(false);
    await clock.advance(1);
    expect(await log.start(lease('done'), '{}')).toBe(true);
    expect(await log.start(lease('undone'), '{}')).toBe(true);
    expect(await log.start(lease('odd'), '{}')).toBe(false);
    expect(await log.start(lease('open'), '{}')).toBe(false);
  });

  it('forgets runs in the order they finished, the later ones kept', async () => {
    const clock = new FakeClock();
    const log = memorySagaLog({ clock });
    await log.start(lease('first'), '{}');
    await log.write(lease('first'), { status: 'completed' });
    await clock.advance(1_000);
    await log.start(lease('second'), '{}');
    await log.write(lease('second'), { status: 'completed' });
    await clock.advance(SAGA_RETENTION_MS - 500);
    expect(await log.start(lease('second'), '{}')).toBe(false);
    expect(await log.start(lease('first'), '{}')).toBe(true);
    await clock.advance(500);
    expect(await log.start(lease('second'), '{}')).toBe(true);
  });

  it('a run id started again once forgotten is kept like any other run', async () => {
    const clock = new FakeClock();
    const log = memorySagaLog({ clock });
    await log.start(lease('done'), '{}');
    await log.write(lease('done'), { status: 'completed' });
    await clock.advance(SAGA_RETENTION_MS);
    expect(await log.start(lease('done'), '{}')).toBe(true);
    expect(await log.start(lease('other'), '{}')).toBe(true);
    expect(await log.start(lease('done'), '{}')).toBe(false);
    expect(await log.write(lease('done'), { step: 'a', position: 0, state: 'running' })).toBe(true);
  });
});

describe('memorySagaLog claims', () => {
  it('takes the run whose lease ended first; of runs whose leases ended together, the one started first', async () => {
    const clock = new FakeClock();
    const log = memorySagaLog({ clock });
    const run = (id: string, leaseMs: number) => log.start({ name: 's', id, owner: 'dead', leaseMs }, '{}');
    await run('late', 2_000);
    await run('first', 500);
    await run('tie-1', 1_000);
    await run('tie-2', 1_000);
    await clock.advance(2_000);
    const claimed: (string | undefined)[] = [];
    for (let i = 0; i < 5; i++) claimed.push((await log.claim('s', 'r', 60_000))?.id);
    expect(claimed).toEqual(['first', 'tie-1', 'tie-2', 'late', undefined]);
  });
});

describe('memorySagaLog argument checks', () => {
  it('refuses a bad call with a TypeError naming what is wrong', async () => {
    const log = memorySagaLog({ clock: new FakeClock() });
    await expect(log.start(lease('a'), 5 as never)).rejects.toThrow(
      /^expected "input" to be JSON text \(well-formed, without U\+0000\), got 5$/,
    );
    await expect(log.start('a' as never, '{}')).rejects.toThrow(
      /^expected "lease" to be an object, got "a"$/,
    );
    await expect(log.renew(null as never)).rejects.toThrow(/^expected "lease" to be an object, got null$/);
    await log.start(lease('a'), '{}');
    await expect(log.write(lease('a'), 'completed' as never)).rejects.toThrow(
      /^expected "change" to be an object, got "completed"$/,
    );
    await expect(log.claim('', 'o', 1_000)).rejects.toThrow(
      /^expected "name" to be a non-empty string, got ""$/,
    );
    await expect(log.claim('s', '', 1_000)).rejects.toThrow(
      /^expected "owner" to be a non-empty string, got ""$/,
    );
    await expect(log.claim('s', 'o', 0)).rejects.toThrow(
      /^expected "leaseMs" to be a positive safe integer, got 0$/,
    );
  });

  it.each([
    [
      'a lease without a name',
      { ...lease('a'), name: '' },
      /^expected "name" to be a non-empty string, got ""$/,
    ],
    ['a lease without an id', { ...lease('a'), id: 7 }, /^expected "id" to be a non-empty string, got 7$/],
    [
      'a lease without an owner',
      { ...lease('a'), owner: undefined },
      /^expected "owner" to be a non-empty string/,
    ],
    [
      'a lease of no length',
      { ...lease('a'), leaseMs: 0.5 },
      /^expected "leaseMs" to be a positive safe integer, got 0.5$/,
    ],
  ])('refuses %s, naming the field', async (_, bad, message) => {
    const log = memorySagaLog({ clock: new FakeClock() });
    await expect(log.start(bad as never, '{}')).rejects.toThrow(message);
  });

  it.each([
    ['null', null, /^expected "change" to be an object, got null$/],
    [
      'a status no run moves to',
      { status: 'running' },
      /^expected "status" to be a status a run can move to, got "running"$/,
    ],
    [
      'an empty step name',
      { step: '', position: 0, state: 'done' },
      /^expected "step" to be a non-empty string, got ""$/,
    ],
    [
      'a position out of range',
      { step: 'a', position: 2 ** 31, state: 'done' },
      /^expected "position" to be an integer from 0 to 2\^31 - 1, got 2147483648$/,
    ],
    [
      'an unknown state',
      { step: 'a', position: 0, state: 'ok' },
      /^expected "state" to be a step state, got "ok"$/,
    ],
    [
      'an output that is not JSON text',
      { step: 'a', position: 0, state: 'done', output: 1 },
      /^expected "output" to be JSON text \(well-formed, without U\+0000\), got 1$/,
    ],
  ])('refuses a change that is %s, naming the field', async (_, change, message) => {
    const log = memorySagaLog({ clock: new FakeClock() });
    await log.start(lease('a'), '{}');
    await expect(log.write(lease('a'), change as never)).rejects.toThrow(message);
  });

  it('a bad or unknown option is a TypeError naming memorySagaLog options', () => {
    expect(() => memorySagaLog({ clok: new FakeClock() } as never)).toThrow(
      /^unknown option "clok" in memorySagaLog options; did you mean "clock"\?$/,
    );
  });
});
