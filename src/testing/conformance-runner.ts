/**
 * What every store conformance suite shares: the parts of a test runner it needs (so
 * `bulwark/testing` imports no test framework) and assertion helpers whose failures name the suite
 * and say what broke.
 */

/** The parts of a test runner the suites need (vitest, jest, node:test and mocha all fit). */
export interface ConformanceRunner {
  describe(name: string, body: () => void): void;
  it(name: string, body: () => Promise<void>): void;
}

/** Assertions that throw plain `Error`s prefixed with the suite's name. */
export interface ConformanceChecks {
  /** Fails the scenario with `message`. */
  fail(message: string): never;
  /** Fails unless `actual === expected`; `what` names the value. */
  equal(actual: unknown, expected: unknown, what: string): void;
  /** Fails unless `low ≤ actual ≤ high`; `what` names the value. */
  within(actual: number, low: number, high: number, what: string): void;
  /**
   * Fails unless `call()` returns a promise that rejects with a `TypeError` (a synchronous throw
   * fails too: a store reports bad input as a rejection); `what` names the bad input.
   */
  rejectsTypeError(call: () => Promise<unknown>, what: string): Promise<void>;
  /**
   * Lets time pass through `elapse` (10 ms a step, about 2 s in all) until `holds()`; fails with
   * `what` if it never does.
   */
  eventually(elapse: (ms: number) => Promise<void>, holds: () => boolean, what: string): Promise<void>;
}

/** The checks of the suite called `suite` (e.g. `rate-limit store conformance`). */
export function conformanceChecks(suite: string): ConformanceChecks {
  const fail = (message: string): never => {
    throw new Error(`${suite}: ${message}`);
  };
  return {
    fail,
    equal(actual, expected, what) {
      if (actual !== expected) fail(`${what}: expected ${String(expected)}, got ${String(actual)}`);
    },
    within(actual, low, high, what) {
      if (!(actual >= low && actual <= high)) fail(`${what}: expected ${low}…${high}, got ${actual}`);
    },
    async rejectsTypeError(call, what) {
      let pending: Promise<unknown>;
      try {
        pending = call();
      } catch (error) {
        return fail(`${what}: threw ${String(error)} synchronously instead of rejecting`);
      }
      let outcome = 'a fulfilled promise';
      try {
        await pending;
      } catch (error) {
        if (error instanceof TypeError) return;
        outcome = String(error);
      }
      fail(`${what}: expected a rejection with a TypeError, got ${outcome}`);
    },
    async eventually(elapse, holds, what) {
      for (let i = 0; i < 200 && !holds(); i++) await elapse(10);
      if (!holds()) fail(what);
    },
  };
}

/** A fixture a scenario may close after itself. */
export interface ClosableFixture {
  /** Called after the scenario, pass or fail. */
  close?(): void | Promise<void>;
}

/**
 * Registers scenarios under `runner.it`, each on a fresh `fixture()` that is closed afterwards,
 * pass or fail.
 */
export function scenarios<F extends ClosableFixture>(
  runner: ConformanceRunner,
  fixture: () => F | Promise<F>,
): (title: string, body: (f: F) => Promise<void>) => void {
  return (title, body) => {
    runner.it(title, async () => {
      const f = await fixture();
      try {
        await body(f);
      } finally {
        await f.close?.();
      }
    });
  };
}
