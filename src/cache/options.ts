/** The options and events of `readThroughCache()`: types, defaults and validation. */
import type { Clock } from '../core/clock.js';
import type { Listener } from '../core/events.js';
import { cryptoRandom, type Random } from '../core/random.js';
import {
  boolean,
  clockField,
  func,
  listenerField,
  nonEmptyString,
  nonNegativeInt,
  optional,
  positiveFraction,
  positiveInt,
  readOptions,
  required,
  type Schema,
  signal,
  withDefault,
} from '../core/read-options.js';
import { show, storeKey } from '../core/validate.js';
import type { CacheLayer, LocalCacheLayer, RemoteCacheLayer } from './store.js';

/** How values travel to and from the remote layer (L2). */
export interface CacheSerializer {
  /** The value as text. */
  serialize(value: unknown): string;
  /** The value back from what `serialize` gave. */
  deserialize(text: string): unknown;
}

/** JSON, the default serializer: values must be JSON (a `Date` comes back as its ISO string). */
export const jsonSerializer: CacheSerializer = {
  serialize: (value) => JSON.stringify(value),
  deserialize: (text) => JSON.parse(text),
};

/** A layer failed; the cache went on without it (a read counted it as a miss). */
export interface LayerErrorEvent {
  /** The cache's name. */
  readonly policy: string;
  /** Which layer: `'remote'` (L2). */
  readonly layer: 'remote';
  /** What the cache asked of it. */
  readonly operation: 'get' | 'set' | 'delete' | 'version' | 'clear' | 'claim' | 'decode';
  /** The cache's key (the namespace for `version` and `clear`). */
  readonly key: string;
  readonly error: unknown;
}

/** Options of `readThroughCache()`. */
export interface ReadThroughCacheOptions {
  /**
   * The layers, nearest first: a local layer (`memoryLayer(…)`), then optionally a remote one
   * (`redisStores(client).cacheLayer`).
   */
  readonly layers: readonly [LocalCacheLayer] | readonly [LocalCacheLayer, RemoteCacheLayer];
  /** How long a loaded value is fresh, in ms (a `get` may give its own). */
  readonly ttlMs: number;
  /**
   * How long after its TTL a value is still kept, in ms, to be served if loading anew fails
   * (stale-if-error). @default 0
   */
  readonly graceMs?: number | undefined;
  /**
   * After a failed load answered from grace, how long the stale value is served without calling
   * the loader again, in ms. @default 5_000
   */
  readonly graceBackoffMs?: number | undefined;
  /**
   * Refresh in the background once this share of the TTL has passed (0 < x < 1), e.g. 0.8: the
   * first `get` after 80 % of the TTL still answers at once, and starts one load. @default off
   */
  readonly earlyRefresh?: number | undefined;
  /** Each TTL written is shortened by up to this share, at random (0 ≤ x < 1). @default 0 */
  readonly ttlJitter?: number | undefined;
  /** Keys are grouped by namespace; `clear(namespace)` drops a namespace. @default 'default' */
  readonly namespace?: string | undefined;
  /** How values are written to the remote layer. @default JSON */
  readonly serializer?: CacheSerializer | undefined;
  /** Deep-freeze every value the cache keeps in L1 (for development: catches callers mutating it). @default false */
  readonly freeze?: boolean | undefined;
  /** Cache a loader's `undefined` ("not found") like a value. Errors are never cached. @default false */
  readonly cacheNotFound?: boolean | undefined;
  /**
   * Fleet-wide stampede protection: on a key missing from L2, only one process loads it (a short
   * claim on L2) while the others wait for L2 up to this long, in ms, then load themselves. Needs a
   * remote layer. @default off
   */
  readonly fleetLoadWaitMs?: number | undefined;
  /** L2 failures in a row that stop calls to L2 for `remoteResetTimeoutMs`. @default 5 */
  readonly remoteFailureThreshold?: number | undefined;
  /** How long L2 is left alone after `remoteFailureThreshold` failures, in ms. @default 10_000 */
  readonly remoteResetTimeoutMs?: number | undefined;
  /** Names the cache in events. @default 'cache' */
  readonly name?: string | undefined;
  /** Timers and TTLs. @default systemClock */
  readonly clock?: Clock | undefined;
  /** TTL jitter (a function giving [0, 1)). @default crypto */
  readonly random?: Random | undefined;
  /** Subscribes to layer failures, as `.onLayerError(listener)`. */
  readonly onLayerError?: Listener<LayerErrorEvent> | undefined;
}

/** Options of one `get`. */
export interface CacheGetOptions {
  /** This load's TTL, in ms (the first caller's counts when several share a load). */
  readonly ttlMs?: number | undefined;
  /** Cancels this caller's wait; the load stops when every caller has left. */
  readonly signal?: AbortSignal | undefined;
}

/** Options of one `set`. */
export interface CacheSetOptions {
  /** This value's TTL, in ms. */
  readonly ttlMs?: number | undefined;
}

const layersCheck = (name: string, value: unknown) => {
  const layers = value as readonly CacheLayer[];
  const ok =
    Array.isArray(layers) &&
    (layers.length === 1 || layers.length === 2) &&
    layers[0]?.kind === 'local' &&
    (layers.length === 1 || layers[1]?.kind === 'remote');
  if (!ok) {
    throw new TypeError(
      `expected "${name}" to be [a local layer] or [a local layer, a remote layer] (e.g. [memoryLayer({ maxEntries }), stores.cacheLayer]), got ${show(value)}`,
    );
  }
  return layers as unknown as ReadThroughCacheOptions['layers'];
};

const belowOne = (name: string, value: unknown): number => {
  if (typeof value !== 'number' || !(value >= 0 && value < 1))
    throw new TypeError(
      `expected "${name}" to be a number from 0 up to (not including) 1, got ${show(value)}`,
    );
  return value;
};

const earlyRefreshCheck = (name: string, value: unknown): number => {
  const share = positiveFraction(name, value);
  if (share === 1)
    throw new TypeError(`expected "${name}" to be a number between 0 and 1 (exclusive), got 1`);
  return share;
};

const namespaceCheck = (name: string, value: unknown): string => {
  const text = storeKey(name, value);
  if (text.includes('\u0000'))
    throw new TypeError(`expected "${name}" to be a well-formed string without NUL, got ${show(value)}`);
  return text;
};

const serializerCheck = (name: string, value: unknown): CacheSerializer => {
  const s = value as Partial<CacheSerializer> | null;
  if (typeof s?.serialize !== 'function' || typeof s.deserialize !== 'function')
    throw new TypeError(`expected "${name}" to be { serialize, deserialize }, got ${show(value)}`);
  return s as CacheSerializer;
};

const schema = {
  layers: required(layersCheck),
  ttlMs: required(positiveInt),
  graceMs: withDefault(0, nonNegativeInt),
  graceBackoffMs: withDefault(5_000, positiveInt),
  earlyRefresh: optional(earlyRefreshCheck),
  ttlJitter: withDefault(0, belowOne),
  namespace: withDefault('default', namespaceCheck),
  serializer: withDefault(jsonSerializer, serializerCheck),
  freeze: withDefault(false, boolean),
  cacheNotFound: withDefault(false, boolean),
  fleetLoadWaitMs: optional(positiveInt),
  remoteFailureThreshold: withDefault(5, positiveInt),
  remoteResetTimeoutMs: withDefault(10_000, positiveInt),
  name: withDefault('cache', nonEmptyString),
  clock: clockField,
  random: withDefault<Random>(cryptoRandom, func<Random>()),
  onLayerError: listenerField<LayerErrorEvent>(),
} satisfies Schema<ReadThroughCacheOptions>;

/** The options read and checked: every default filled in. */
export type ReadCacheOptions = ReturnType<typeof readCacheOptions>;

/** Reads and checks `options`; a `TypeError` names a bad, missing or unknown option. */
export function readCacheOptions(options: ReadThroughCacheOptions) {
  const o = readOptions('readThroughCache options', options, schema);
  if (o.fleetLoadWaitMs !== undefined && o.layers.length === 1)
    throw new TypeError(
      '"fleetLoadWaitMs" needs a remote layer (layers: [memoryLayer(…), stores.cacheLayer])',
    );
  return o;
}

const getSchema = {
  ttlMs: optional(positiveInt),
  signal: optional(signal),
} satisfies Schema<CacheGetOptions>;
const setSchema = { ttlMs: optional(positiveInt) } satisfies Schema<CacheSetOptions>;

/** One `get`'s options; a `TypeError` for a bad or unknown option. */
export function readGetOptions(options: CacheGetOptions) {
  return readOptions('get options', options, getSchema);
}

/** One `set`'s options; a `TypeError` for a bad or unknown option. */
export function readSetOptions(options: CacheSetOptions | undefined) {
  return readOptions('set options', options, setSchema);
}
