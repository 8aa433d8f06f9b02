import { describe, expect, it, vi } from 'vitest';
import { isStoreUnavailableError, StoreUnavailableError } from '../core/errors.js';
import { idempotency } from '../idempotency/idempotency.js';
import { memoryIdempotencyStore } from '../idempotency/memory-store.js';
import { distributedLock } from '../lock/lock.js';
import { memoryLockStore } from '../lock/memory-store.js';
import { memoryRateLimitStore } from '../rate-limit/memory-store.js';
import { rateLimiter } from '../rate-limit/rate-limiter.js';
import { chaosStore } from './chaos-store.js';
import { FakeClock } from './fake-clock.js';

/** A store of its own: async methods, synchronous hooks, a deadline, a getter and a private field. */
class ToyStore {
  readonly timeoutMs = 100;
  #entries = new Map<string, string>();
  readonly unwatched = vi.fn();

  get size(): number {
    return this.#entries.size;
  }
  async put(key: string, value: string): Promise<void> {
    this.#entries.set(key, value);
  }
  async read(key: string): Promise<string | undefined> {
    return this.#entries.get(key);
  }
  readSync(key: string): string | undefined {
    return this.#entries.get(key);
  }
  watch(_key: string, _wake: () => void): () => void {
    return this.unwatched;
  }
}

/** Settles `promise` into what it rejected with (or 'resolved'), attached at once. */
const outcomeOf = (promise: Promise<unknown>): Promise<unknown> =>
  promise.then(
    () => 'resolved',
    (error: unknown) => error,
  );

describe('chaosStore (throw)', () => {
  it('at rate 1 rejects every async method with a StoreUnavailableError naming it, never reaching the store', async () => {
    const toy = new ToyStore();
    const store = chaosStore(toy, { rate: 1 });
    const error = await outcomeOf(store.put('a', '1'));
    expect(isStoreUnavailableError(error)).toBe(true);
    expect(error).toMatchObject({ kind: 'unavailable', code: 'ERR_STORE_UNAVAILABLE' });
    expect((error as Error).message).toBe('chaosStore: the store call "put" failed (injected)');
    expect(toy.size).toBe(0);
  });

  it('at rate 0 passes every call through, with the store as `this`', async () => {
    const toy = new ToyStore();
    const store = chaosStore(toy, { rate: 0 });
    await store.put('a', '1');
    await expect(store.read('a')).resolves.toBe('1');
    expect(store.size).toBe(1);
  });

  it('passes the synchronous hooks, every non-method property (live) and getters through', async () => {
    const toy = new ToyStore();
    const store = chaosStore(toy, { rate: 1 });
    expect(store.watch('a', () => {})).toBe(toy.unwatched);
    expect(store.timeoutMs).toBe(100);
    await toy.put('a', '1');
    expect(store.readSync('a')).toBe('1');
    expect(store.size).toBe(1);
  });

  it('faults only the listed methods with `methods`', async () => {
    const toy = new ToyStore();
    const store = chaosStore(toy, { rate: 1, methods: ['read'] });
    await store.put('a', '1');
    expect(isStoreUnavailableError(await outcomeOf(store.read('a')))).toBe(true);
    expect(toy.size).toBe(1);
  });

  it('rejects with the given error, or what the error function gives for the method', async () => {
    const down = new Error('down');
    await expect(chaosStore(new ToyStore(), { rate: 1, error: down }).read('a')).rejects.toBe(down);
    const named = chaosStore(new ToyStore(), { rate: 1, error: (method) => new Error(`${method} is down`) });
    await expect(named.read('a')).rejects.toThrow('read is down');
    const broken = new Error('the factory broke');
    const throwing = chaosStore(new ToyStore(), {
      rate: 1,
      error: () => {
        throw broken;
      },
    });
    await expect(throwing.put('a', '1')).rejects.toBe(broken);
  });

  it('an enabled function that throws rejects that call, the store unreached', async () => {
    const toy = new ToyStore();
    const broken = new Error('flag service down');
    const store = chaosStore(toy, {
      rate: 1,
      enabled: () => {
        throw broken;
      },
    });
    await expect(store.put('a', '1')).rejects.toBe(broken);
    expect(toy.size).toBe(0);
  });

  it('reads enabled on every call and draws only while enabled', async () => {
    let on = false;
    const random = vi.fn(() => 0);
    const store = chaosStore(new ToyStore(), { rate: 0.5, random, enabled: () => on });
    await store.put('a', '1');
    on = true;
    await expect(store.read('a')).rejects.toThrow(StoreUnavailableError);
    expect(random).toHaveBeenCalledTimes(1);
  });
});

describe('chaosStore (stall)', () => {
  it("hangs for the store's own timeoutMs on the clock, then rejects; nothing is left waiting", async () => {
    const clock = new FakeClock();
    const toy = new ToyStore();
    const store = chaosStore(toy, { rate: 1, mode: 'stall', clock });
    let settled: unknown;
    const call = outcomeOf(store.put('a', '1')).then((error) => {
      settled = error;
    });
    await clock.advance(99);
    expect(settled).toBeUndefined();
    await clock.advance(1);
    await call;
    expect(isStoreUnavailableError(settled)).toBe(true);
    expect((settled as Error).message).toBe(
      'chaosStore: the store call "put" did not answer within 100 ms (injected)',
    );
    expect(toy.size).toBe(0);
    expect(clock.pendingTimers).toBe(0);
  });

  it('stallMs overrides the deadline; Infinity never settles and holds no timer', async () => {
    const clock = new FakeClock();
    const short = chaosStore(new ToyStore(), { rate: 1, mode: 'stall', stallMs: 5, clock });
    const rejected = expect(short.read('a')).rejects.toThrow('within 5 ms');
    await clock.advance(5);
    await rejected;

    const forever = chaosStore(new ToyStore(), {
      rate: 1,
      mode: 'stall',
      stallMs: Number.POSITIVE_INFINITY,
      clock,
    });
    let settled = false;
    void forever.read('a').finally(() => {
      settled = true;
    });
    await clock.advance(1_000_000);
    expect(settled).toBe(false);
    expect(clock.pendingTimers).toBe(0);
  });

  it('a stalled lock store fails withLock with a StoreUnavailableError once the stall ends', async () => {
    const clock = new FakeClock();
    const store = chaosStore(memoryLockStore({ clock }), { rate: 1, mode: 'stall', stallMs: 50, clock });
    const fn = vi.fn();
    const locks = distributedLock({ store, clock });
    const call = outcomeOf(locks.withLock('k', fn, { ttlMs: 1_000, waitMs: 0 }));
    await clock.advance(50);
    expect(isStoreUnavailableError(await call)).toBe(true);
    expect(fn).not.toHaveBeenCalled();
    await clock.advance(1_000);
    expect(clock.aliveTimers).toBe(0);
  });
});

describe('chaosStore with the patterns', () => {
  it('idempotency: a store that is down rejects with StoreUnavailableError and the handler never runs', async () => {
    const clock = new FakeClock();
    const store = chaosStore(memoryIdempotencyStore({ clock }), { rate: 1 });
    const orders = idempotency({ store, leaseMs: 5_000, ttlMs: 60_000, clock });
    const handler = vi.fn(() => 'charged');
    await expect(orders.execute('order-1', { amount: 5 }, handler)).rejects.toThrow(StoreUnavailableError);
    expect(handler).not.toHaveBeenCalled();
  });

  it("rate limit: a wrapped in-memory store is a remote one, and storeFailure: 'fail-open' admits", async () => {
    const clock = new FakeClock();
    const store = chaosStore(memoryRateLimitStore({ clock }), { rate: 1 });
    const limiter = rateLimiter({ limit: 10, periodMs: 1_000, store, storeFailure: 'fail-open', clock });
    await expect(limiter.take('user-1')).resolves.toMatchObject({ allowed: true, fallback: 'fail-open' });
    expect(() => limiter.takeSync('user-1')).toThrow(/in-memory store/);
  });
});

describe('chaosStore options', () => {
  it.each([
    [
      'a store that is not an object',
      () => chaosStore(5 as never, { rate: 1 }),
      '"store" to be a store object, got 5',
    ],
    [
      'no rate',
      () => chaosStore(new ToyStore(), {} as never),
      '"rate" to be a number from 0 to 1, got undefined',
    ],
    [
      'a bad mode',
      () => chaosStore(new ToyStore(), { rate: 1, mode: 'hang' as never }),
      '"mode" to be one of "throw", "stall", got "hang"',
    ],
    [
      'a negative stallMs',
      () => chaosStore(new ToyStore(), { rate: 1, mode: 'stall', stallMs: -1 }),
      '"stallMs" to be a non-negative number or Infinity, got -1',
    ],
    [
      'a stall on a store without a deadline',
      () => chaosStore(memoryIdempotencyStore(), { rate: 1, mode: 'stall' }),
      'expected "stallMs" to be given: the store has no positive "timeoutMs" to stall for, got undefined',
    ],
    [
      'a stall on an in-memory lock store (timeoutMs 0)',
      () => chaosStore(memoryLockStore(), { rate: 1, mode: 'stall' }),
      'got 0',
    ],
    [
      'stallMs without a stall',
      () => chaosStore(new ToyStore(), { rate: 1, stallMs: 5 }),
      `"stallMs" only with mode: 'stall', got 5 with 'throw'`,
    ],
    [
      'methods naming no method',
      () => chaosStore(new ToyStore(), { rate: 1, methods: ['timeoutMs'] }),
      '"methods" to name methods of the store, got "timeoutMs"',
    ],
    [
      'methods not an array',
      () => chaosStore(new ToyStore(), { rate: 1, methods: 'put' as never }),
      '"methods" to be an array of method names',
    ],
    [
      'a string error',
      () => chaosStore(new ToyStore(), { rate: 1, error: 'down' as never }),
      '"error" to be an error (an object)',
    ],
    [
      'random and seed',
      () => chaosStore(new ToyStore(), { rate: 1, seed: 1, random: () => 0 }),
      '"random" or "seed", not both',
    ],
    [
      'a misspelled option',
      () => chaosStore(new ToyStore(), { rate: 1, stall: 5 } as never),
      'unknown option "stall" in chaosStore options; did you mean "stallMs"?',
    ],
  ])('%s is a TypeError', (_name, make, message) => {
    expect(make).toThrow(TypeError);
    expect(make).toThrow(message);
  });
});
