/**
 * `chaosStore`: any bulwark store, made to fail or hang at a given rate, for testing what one's
 * own code does when its store is down.
 */
import type { Clock } from '../core/clock.js';
import { StoreUnavailableError } from '../core/errors.js';
import {
  type Check,
  clockField,
  oneOf,
  optional,
  readOptions,
  type Schema,
  withDefault,
} from '../core/read-options.js';
import { show } from '../core/validate.js';
import { errorSource, type InjectionOptions, injectionDecider, injectionFields } from './chaos-injection.js';

/** What a faulted store call does: reject at once, or hang and then reject. */
export type ChaosStoreMode = 'throw' | 'stall';

/** Options of {@link chaosStore}. */
export interface ChaosStoreOptions extends InjectionOptions {
  /**
   * `throw`: a faulted call rejects at once. `stall`: it answers nothing for `stallMs`, then
   * rejects, as a store whose server stopped answering does once its own deadline passes.
   * @default 'throw'
   */
  readonly mode?: ChaosStoreMode | undefined;
  /**
   * With `mode: 'stall'` (only), how long a faulted call hangs, on `clock`, before it rejects; `Infinity`
   * hangs for good (the code under test must bound the call itself). Required for a store without
   * a positive `timeoutMs` (the in-memory ones, whose `timeoutMs` is 0 or absent).
   * @default the store's `timeoutMs` (the deadline a Redis or PostgreSQL store puts on every call)
   */
  readonly stallMs?: number | undefined;
  /**
   * What a faulted call rejects with: an error (any object), or a function of the method's name
   * giving one.
   * @default a `StoreUnavailableError` naming the method
   */
  readonly error?: object | ((method: string) => unknown) | undefined;
  /**
   * The methods that fault. Each must name a method of the store.
   * @default every method but the synchronous hooks: `watch`, `subscribe` and names ending in `Sync`
   */
  readonly methods?: readonly string[] | undefined;
  /** The clock a stalled call hangs on. @default systemClock */
  readonly clock?: Clock | undefined;
}

const stallBound: Check<number> = (name, value) => {
  if (typeof value !== 'number' || !(value >= 0)) {
    throw new TypeError(`expected "${name}" to be a non-negative number or Infinity, got ${show(value)}`);
  }
  return value;
};

const methodList: Check<readonly string[]> = (name, value) => {
  if (!Array.isArray(value) || value.some((method) => typeof method !== 'string')) {
    throw new TypeError(`expected "${name}" to be an array of method names, got ${show(value)}`);
  }
  return Object.freeze([...(value as string[])]);
};

const chaosStoreSchema = {
  ...injectionFields,
  mode: withDefault<ChaosStoreMode>('throw', oneOf<ChaosStoreMode>(['throw', 'stall'])),
  stallMs: optional(stallBound),
  error: optional(errorSource),
  methods: optional(methodList),
  clock: clockField,
} satisfies Schema<ChaosStoreOptions>;

/** The store interfaces' synchronous members: they answer at once and are never faulted by default. */
const synchronous = (name: string): boolean =>
  name === 'watch' || name === 'subscribe' || name.endsWith('Sync');

/** Every property of `store`, its own and its classes' (the nearest wins), but `constructor`. */
function propertiesOf(store: object): Map<string | symbol, PropertyDescriptor> {
  const found = new Map<string | symbol, PropertyDescriptor>();
  for (let o: object | null = store; o !== null && o !== Object.prototype; o = Object.getPrototypeOf(o)) {
    for (const key of Reflect.ownKeys(o)) {
      if (key !== 'constructor' && !found.has(key)) found.set(key, Reflect.getOwnPropertyDescriptor(o, key)!);
    }
  }
  return found;
}

/**
 * Wraps any store (rate limit, idempotency, lock, fence, remote cache layer, saga log, outbox,
 * inbox, or your own) so that a share `rate` of the calls to its methods fault, without reaching
 * the store: with `mode: 'throw'` the call rejects at once, with `mode: 'stall'` it hangs for
 * `stallMs` on `clock` and then rejects, as a store does when its server stops answering and the
 * store's own deadline passes. A faulted call rejects with `error` (default a
 * `StoreUnavailableError`, kind `unavailable`, the error every bulwark store fails with), so the
 * pattern using the store reacts as it would to a real outage. Calls not faulted, the synchronous
 * hooks (`watch`, `subscribe`, `…Sync`) and every property that is not a method pass through to the
 * store; `rate`, `seed`, `random` and `enabled` work as in the chaos strategies.
 *
 * A stalled call never hangs past `stallMs` (default the store's own `timeoutMs`): in a test, move
 * the `FakeClock` past it and the call rejects; nothing is left waiting. Only `stallMs: Infinity`
 * leaves it unsettled for good (it holds no timer).
 *
 * The wrapper is a plain object of the store's type, not an instance of the store's class: a rate
 * limiter treats a wrapped in-memory store as a remote one (no `takeSync`), so its `storeFailure`
 * handling is what the test exercises. Throws a `TypeError` naming the first bad or unknown option,
 * a `methods` entry that is not a method of the store, a `stallMs` with `mode: 'throw'`, or a stall
 * with no `stallMs` and a store without a positive `timeoutMs`.
 *
 * A stall starts when the call reaches the store: code that does real asynchronous work first
 * (idempotency hashes the request) must have reached it before the test advances its clock.
 *
 * @example
 * const clock = new FakeClock();
 * const store = chaosStore(memoryRateLimitStore({ clock }), { rate: 1, mode: 'stall', stallMs: 100, clock });
 * const limiter = rateLimiter({ limit: 10, periodMs: 1_000, store, storeFailure: 'fail-open', clock });
 * const decision = limiter.take('user-1');
 * await clock.advance(100); // the stalled take rejects: the limiter admits, with fallback 'fail-open'
 */
export function chaosStore<S extends object>(store: S, options: ChaosStoreOptions): S {
  if (typeof store !== 'object' || store === null) {
    throw new TypeError(`expected "store" to be a store object, got ${show(store)}`);
  }
  const o = readOptions('chaosStore options', options, chaosStoreSchema);
  const inject = injectionDecider(o);
  const properties = propertiesOf(store);
  const isMethod = (key: string | symbol): boolean => typeof properties.get(key)?.value === 'function';
  for (const method of o.methods ?? []) {
    if (!isMethod(method)) {
      throw new TypeError(`expected "methods" to name methods of the store, got ${show(method)}`);
    }
  }
  const faulty = (key: string | symbol): boolean =>
    typeof key === 'string' && (o.methods === undefined ? !synchronous(key) : o.methods.includes(key));
  const fault = faultOf(store, o);
  const wrapper = {};
  for (const [key, descriptor] of properties) {
    const value: unknown = descriptor.value;
    if (typeof value !== 'function') {
      Object.defineProperty(wrapper, key, {
        enumerable: true,
        get: () => (store as Record<PropertyKey, unknown>)[key],
      });
    } else if (!faulty(key)) {
      Object.defineProperty(wrapper, key, { enumerable: true, value: value.bind(store) });
    } else {
      const method = value as (...args: unknown[]) => unknown;
      const name = key as string;
      const call = (...args: unknown[]): unknown => {
        let injected: boolean;
        try {
          injected = inject();
        } catch (error) {
          // A throwing `enabled` fails the call as a store failure would: a rejection, never a throw.
          return Promise.reject(error);
        }
        return injected ? fault(name) : method.apply(store, args);
      };
      Object.defineProperty(wrapper, key, { enumerable: true, value: call });
    }
  }
  return wrapper as S;
}

/** The options {@link faultOf} reads. */
interface FaultSettings {
  readonly mode: ChaosStoreMode;
  readonly stallMs: number | undefined;
  readonly error: object | undefined;
  readonly clock: Clock;
}

/** What a faulted call of the store returns: a promise that rejects at once, or after its stall. */
function faultOf(store: object, settings: FaultSettings): (method: string) => Promise<never> {
  const { error, clock } = settings;
  const rejection = (method: string, what: string): Promise<never> => {
    if (error === undefined) {
      return Promise.reject(
        new StoreUnavailableError(`chaosStore: the store call "${method}" ${what} (injected)`),
      );
    }
    if (typeof error !== 'function') return Promise.reject(error);
    try {
      return Promise.reject((error as (method: string) => unknown)(method));
    } catch (thrown) {
      return Promise.reject(thrown);
    }
  };
  if (settings.mode === 'throw') {
    if (settings.stallMs !== undefined) {
      throw new TypeError(
        `expected "stallMs" only with mode: 'stall', got ${show(settings.stallMs)} with 'throw'`,
      );
    }
    return (method) => rejection(method, 'failed');
  }
  const deadline = (store as { timeoutMs?: unknown }).timeoutMs;
  const stallMs = settings.stallMs ?? (typeof deadline === 'number' && deadline > 0 ? deadline : undefined);
  if (stallMs === undefined) {
    throw new TypeError(
      `expected "stallMs" to be given: the store has no positive "timeoutMs" to stall for, got ${show(deadline)}`,
    );
  }
  if (stallMs === Infinity) return () => new Promise<never>(() => {});
  return (method) =>
    clock.sleep(stallMs).then(() => rejection(method, `did not answer within ${stallMs} ms`));
}
