import { describe, expect, it } from 'vitest';
import { FakeClock } from '../testing/fake-clock.js';
import { retryBudget } from './budget.js';

describe('retryBudget', () => {
  it('allows the floor with no successes, then refuses and emits onExhausted', () => {
    const clock = new FakeClock();
    const budget = retryBudget({ ratio: 0.1, minPerSecond: 1, windowMs: 10_000, clock });
    const events: unknown[] = [];
    budget.onExhausted((e) => events.push(e));
    expect(budget.available).toBe(10);
    for (let i = 0; i < 10; i++) expect(budget.tryWithdraw()).toBe(true);
    expect(budget.tryWithdraw()).toBe(false);
    expect(events).toEqual([{ retries: 10, successes: 0 }]);
  });

  it('earns ratio retries per success', () => {
    const clock = new FakeClock();
    const budget = retryBudget({ ratio: 0.5, minPerSecond: 0, clock });
    expect(budget.tryWithdraw()).toBe(false);
    for (let i = 0; i < 4; i++) budget.deposit();
    expect(budget.available).toBe(2);
    expect(budget.tryWithdraw()).toBe(true);
    expect(budget.tryWithdraw()).toBe(true);
    expect(budget.tryWithdraw()).toBe(false);
  });

  it('forgets successes and retries that slide out of the window', async () => {
    const clock = new FakeClock();
    const budget = retryBudget({ ratio: 1, minPerSecond: 0, windowMs: 1_000, clock });
    for (let i = 0; i < 5; i++) budget.deposit();
    for (let i = 0; i < 5; i++) expect(budget.tryWithdraw()).toBe(true);
    expect(budget.tryWithdraw()).toBe(false);
    await clock.advance(500);
    budget.deposit();
    expect(budget.tryWithdraw()).toBe(true);
    await clock.advance(600); // the first five of each fell out
    expect(budget.available).toBe(0);
    budget.deposit();
    expect(budget.available).toBe(1);
    await clock.advance(10_000); // everything fell out
    expect(budget.available).toBe(0);
  });

  it('is shared: retries taken by one user are gone for the other', () => {
    const budget = retryBudget({ ratio: 0, minPerSecond: 0.2, windowMs: 10_000, clock: new FakeClock() });
    expect(budget.tryWithdraw()).toBe(true);
    expect(budget.tryWithdraw()).toBe(true);
    expect(budget.tryWithdraw()).toBe(false);
  });

  it('refuses an unknown option, naming retryBudget and the option it may have meant', () => {
    expect(() => retryBudget({ ratio: 0.1, minPerSecond: 1, window: 5 } as never)).toThrow(
      new TypeError('unknown option "window" in retryBudget options; did you mean "windowMs"?'),
    );
  });

  it.each([
    [{ ratio: -1, minPerSecond: 1 }, /"ratio".*-1/],
    [{ ratio: Number.NaN, minPerSecond: 1 }, /"ratio".*NaN/],
    [{ ratio: 0.1, minPerSecond: Infinity }, /"minPerSecond".*Infinity/],
    [{ ratio: 0.1, minPerSecond: 1, windowMs: 0 }, /"windowMs".*0/],
    [{ ratio: 0.1, minPerSecond: 1, clock: {} }, /"clock"/],
  ])('rejects %o', (options, message) => {
    expect(() => retryBudget(options as never)).toThrow(message);
  });
});
