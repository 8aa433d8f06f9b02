/**
 * The declared options of `rateLimiter()`: its rule (see rule.ts), its store and how it behaves
 * when the store fails, read once at construction.
 */
import {
  clockField,
  oneOf,
  optional,
  positiveInt,
  type ReadOptions,
  readOptions,
  type Schema,
  withDefault,
} from '../core/read-options.js';
import { show } from '../core/validate.js';
import type { RateLimiterOptions, StoreFailureMode } from './rate-limiter.js';
import { ruleSchema } from './rule.js';
import type { RateLimitStore } from './store.js';

/** Any object with `take`, `peek` and `reset`. */
function rateLimitStore(name: string, value: unknown): RateLimitStore {
  const store = value as Partial<RateLimitStore> | null;
  if (
    store === null ||
    typeof store !== 'object' ||
    typeof store.take !== 'function' ||
    typeof store.peek !== 'function' ||
    typeof store.reset !== 'function'
  ) {
    throw new TypeError(`expected "${name}" to be a RateLimitStore (take, peek, reset), got ${show(value)}`);
  }
  return value as RateLimitStore;
}

const rateLimiterSchema = {
  ...ruleSchema,
  store: optional(rateLimitStore),
  maxKeys: withDefault(10_000, positiveInt),
  clock: clockField,
  storeFailure: withDefault<StoreFailureMode>('fail-closed', oneOf(['fail-open', 'fail-closed', 'local'])),
  instances: withDefault(1, positiveInt),
} satisfies Schema<RateLimiterOptions>;

/** Reads `rateLimiter` options; a `TypeError` names the first bad one. */
export function readRateLimiterOptions(options: RateLimiterOptions): ReadOptions<typeof rateLimiterSchema> {
  return readOptions('rateLimiter options', options, rateLimiterSchema);
}
