import { describe, expect, it } from 'vitest';
import { isStoreUnavailableError, isTimeoutError, type StoreUnavailableError } from '../../core/errors.js';
import { FakeClock } from '../../testing/fake-clock.js';
import { QueryDeadline } from './deadline.js';

describe('QueryDeadline', () => {
  it('a released ticket never expires; its shared timer lets the process exit', async () => {
    const clock = new FakeClock();
    const deadline = new QueryDeadline(clock, 100, 'PostgreSQL');
    const failures: unknown[] = [];
    const ticket = deadline.begin((error) => failures.push(error));
    expect(ticket.release()).toBe(true);
    expect(clock.aliveTimers).toBe(0);
    await clock.advance(200);
    expect(failures).toEqual([]);
    expect(ticket.expired).toBe(false);
  });

  it('expires at the deadline with StoreUnavailableError (cause TimeoutError); a late release returns false', async () => {
    const clock = new FakeClock();
    const deadline = new QueryDeadline(clock, 100, 'PGlite');
    const failures: StoreUnavailableError[] = [];
    const ticket = deadline.begin((error) => failures.push(error));
    await clock.advance(99);
    expect(failures).toEqual([]);
    await clock.advance(1);
    expect(failures).toHaveLength(1);
    expect(isStoreUnavailableError(failures[0])).toBe(true);
    expect(isTimeoutError(failures[0]!.cause)).toBe(true);
    expect(failures[0]!.message).toBe('PGlite did not answer within 100 ms');
    expect(ticket.expired).toBe(true);
    expect(ticket.release()).toBe(false);
  });

  it("calls of the store's own timeout share one timer; a longer one adds its own", () => {
    const clock = new FakeClock();
    const deadline = new QueryDeadline(clock, 100, 'PostgreSQL');
    const tickets = [1, 2, 3].map(() => deadline.begin(() => {}));
    expect(clock.pendingTimers).toBe(1);
    const long = deadline.begin(() => {}, 30_000);
    expect(clock.pendingTimers).toBe(2);
    for (const ticket of [...tickets, long]) ticket.release();
    deadline.stop();
    expect(clock.pendingTimers).toBe(0);
  });

  it('a longer deadline (a migration) gets its own timer, cleared on release', async () => {
    const clock = new FakeClock();
    const deadline = new QueryDeadline(clock, 100, 'PostgreSQL');
    const failures: unknown[] = [];
    const long = deadline.begin((error) => failures.push(error), 30_000);
    const short = deadline.begin((error) => failures.push(error));
    await clock.advance(100);
    expect(short.expired).toBe(true);
    expect(long.expired).toBe(false);
    expect(long.release()).toBe(true);
    expect(long.release()).toBe(false); // over once released
    await clock.advance(30_000);
    expect(failures).toHaveLength(1);
    deadline.stop();
    expect(clock.pendingTimers).toBe(0);
  });

  it('failure() wraps a driver error once, keeping it as the cause', () => {
    const deadline = new QueryDeadline(new FakeClock(), 100, 'PostgreSQL');
    const driver = new Error('connection refused');
    const failure = deadline.failure(driver);
    expect(failure.message).toBe('PostgreSQL failed: connection refused');
    expect(failure.cause).toBe(driver);
    expect(deadline.failure(failure)).toBe(failure);
    expect(deadline.failure('odd').message).toBe('PostgreSQL failed: odd');
  });

  it('failure() asks whether the schema was migrated for a missing schema, table or function only', () => {
    const deadline = new QueryDeadline(new FakeClock(), 100, 'PostgreSQL');
    const coded = (code: string) => Object.assign(new Error(`code ${code}`), { code });
    const hint = ' (has `await stores.migrate()` run on this schema?)';
    for (const code of ['3F000', '42P01', '42883'])
      expect(deadline.failure(coded(code)).message).toBe(`PostgreSQL failed: code ${code}${hint}`);
    expect(deadline.failure(coded('23505')).message).toBe('PostgreSQL failed: code 23505');
    expect(deadline.failure(null).message).toBe('PostgreSQL failed: null');
  });
});
