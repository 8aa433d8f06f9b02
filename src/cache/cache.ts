/**
 * `readThroughCache()`: a value per key, kept in a local layer (L1) and optionally a remote one
 * (L2), loaded once per key per process on a miss (callers share the load, each free to leave),
 * served stale within grace when loading fails, and kept in step across processes.
 */
import { randomUUID } from 'node:crypto';
import { type Disposer, type Listener, Listeners } from '../core/events.js';
import { countEvent } from '../core/telemetry.js';
import { show } from '../core/validate.js';
import { type SharedCallContext, SharedCalls } from '../sharing/shared-calls.js';
import { type Fallback, LocalEntries } from './entries.js';
import {
  type CacheGetOptions,
  type CacheSetOptions,
  type LayerErrorEvent,
  type ReadCacheOptions,
  type ReadThroughCacheOptions,
  readCacheOptions,
  readGetOptions,
  readSetOptions,
} from './options.js';
import { type ReadTicket, ReadTickets } from './read-tickets.js';
import { type RemoteHit, RemoteTier } from './remote-tier.js';
import type { LocalCacheLayer } from './store.js';

/** What a loader gets. */
export type LoadContext = SharedCallContext;

/** A read-through cache, from {@link readThroughCache}. */
export interface ReadThroughCache {
  /** The `name` option. */
  readonly name: string;
  /** The `namespace` option: every key of this cache belongs to it. */
  readonly namespace: string;
  /**
   * The value of `key`: from L1 if fresh there (without touching L2), else from L2 if fresh there
   * (copied into L1 for what is left of its TTL), else from `loader({ signal })`, written to every
   * layer. Concurrent misses of a key in this process share one load; each caller may leave with
   * its own `signal` (rejecting with its reason), and the load's signal aborts when all have left.
   * An `undefined` from the loader is "not found": returned, not cached (unless `cacheNotFound`).
   *
   * Rejects with the loader's error, unless a stale value within grace can be served instead (then
   * the loader is not called again for `graceBackoffMs`). L2 never fails a read: its errors count
   * as misses and are reported through `onLayerError`. Rejects with a `TypeError` for a key that is
   * not a string, a loader that is not a function, or bad options.
   */
  get<T>(
    key: string,
    loader: (context: LoadContext) => T | PromiseLike<T>,
    options?: CacheGetOptions,
  ): Promise<T>;
  /**
   * Writes `value` to every layer and tells the other processes to drop their L1 copy. A load of
   * `key` already in flight will not write over it. Rejects when L2 fails (after L1 was written),
   * with a `TypeError` for a bad key or option.
   */
  set(key: string, value: unknown, options?: CacheSetOptions): Promise<void>;
  /** Drops `key` from every layer, here and in the other processes' L1; rejects when L2 fails. */
  delete(key: string): Promise<void>;
  /**
   * Drops every key of `namespace` (this cache's by default) from every layer: L2's keys carry the
   * namespace's version, which this bumps (one command, no `SCAN`); every process drops its L1
   * copies. Rejects when L2 fails (after L1 was cleared).
   */
  clear(namespace?: string): Promise<void>;
  /** Subscribes to layer failures; returns the disposer. */
  onLayerError(listener: Listener<LayerErrorEvent>): Disposer;
  /** Stops listening to the other processes (L2's messages). Reads and writes go on working. */
  close(): void;
}

const noop = (): void => {};
const noHooks = { shared: noop, cancelled: noop };

class Cache implements ReadThroughCache {
  readonly name: string;
  readonly namespace: string;
  private readonly l1: LocalCacheLayer;
  private readonly l2: RemoteTier | undefined;
  private readonly loads = new SharedCalls(noHooks, {});
  private readonly tickets = new ReadTickets();
  private readonly layerErrors = new Listeners<LayerErrorEvent>();
  private readonly entries: LocalEntries;
  /** Every L1 key of this cache starts with it: the namespace and a NUL. */
  private readonly prefix: string;

  constructor(private readonly o: ReadCacheOptions) {
    this.name = o.name;
    this.namespace = o.namespace;
    this.prefix = `${o.namespace}\u0000`;
    this.l1 = o.layers[0];
    this.entries = new LocalEntries(o);
    if (o.onLayerError) this.layerErrors.add(o.onLayerError);
    const remote = o.layers[1];
    this.l2 =
      remote === undefined
        ? undefined
        : new RemoteTier(remote, o, (operation, key, error) => this.reportLayerError(operation, key, error), {
            key: (key) => this.invalidate(this.prefix + key),
            version: () => this.invalidateAll(),
            reset: () => this.invalidateAll(),
          });
  }

  get<T>(
    key: string,
    loader: (context: LoadContext) => T | PromiseLike<T>,
    options?: CacheGetOptions,
  ): Promise<T> {
    if (typeof key !== 'string')
      return Promise.reject(new TypeError(`expected "key" to be a string, got ${show(key)}`));
    if (typeof loader !== 'function')
      return Promise.reject(new TypeError(`expected "loader" to be a function, got ${show(loader)}`));
    let ttlMs = this.o.ttlMs;
    let signal: AbortSignal | undefined;
    // Stryker disable next-line ConditionalExpression: (true) readOptions reads undefined as no options; the check only skips that work on the hot path
    if (options !== undefined) {
      try {
        const read = readGetOptions(options);
        ttlMs = read.ttlMs ?? ttlMs;
        signal = read.signal;
      } catch (error) {
        return Promise.reject(error);
      }
    }
    const id = this.prefix + key;
    const now = this.o.clock.now();
    const entry = this.l1.get(id, now);
    if (entry !== undefined && entry.staleAt > now) {
      countEvent('cache_hit', 'cache', this.name);
      if (entry.refreshAt <= now)
        this.loads.run(id, (c) => this.fill(key, id, loader, ttlMs, c), undefined).catch(noop);
      return signal?.aborted ? Promise.reject(signal.reason) : Promise.resolve(entry.value as T);
    }
    countEvent('cache_miss', 'cache', this.name);
    return this.loads.run(id, (c) => this.fill(key, id, loader, ttlMs, c), signal);
  }

  async set(key: string, value: unknown, options?: CacheSetOptions): Promise<void> {
    const id = this.prefix + checkKey(key);
    const ttlMs = readSetOptions(options).ttlMs ?? this.o.ttlMs;
    this.invalidate(id);
    await this.keep(key, id, value, ttlMs, true);
  }

  async delete(key: string): Promise<void> {
    this.invalidate(this.prefix + checkKey(key));
    await this.l2?.delete(key);
  }

  async clear(namespace: string = this.namespace): Promise<void> {
    if (typeof namespace !== 'string' || namespace === '' || namespace.includes('\u0000'))
      throw new TypeError(
        `expected "namespace" to be a non-empty string without NUL, got ${show(namespace)}`,
      );
    this.l1.deletePrefix(`${namespace}\u0000`);
    if (namespace === this.namespace) this.tickets.invalidateAll();
    await this.l2?.clear(namespace);
  }

  onLayerError(listener: Listener<LayerErrorEvent>): Disposer {
    return this.layerErrors.add(listener);
  }

  close(): void {
    this.l2?.close();
  }

  /** One load of `key` for every caller sharing it: L2, then (fleet-wide, maybe) the loader. */
  private async fill<T>(
    key: string,
    id: string,
    loader: (context: LoadContext) => T | PromiseLike<T>,
    ttlMs: number,
    context: LoadContext,
  ): Promise<T> {
    const ticket = this.tickets.begin(id);
    let claim: string | undefined;
    try {
      const now = this.o.clock.now();
      const local = this.l1.get(id, now);
      let fallback: Fallback | undefined = local && { value: local.value, local, expiresAt: local.expiresAt };
      if (this.l2 !== undefined) {
        const hit = await this.l2.read(key);
        if (hit !== undefined) {
          // A value another process refreshed is news; our own copy, due for refresh, is not.
          if (hit.freshForMs > this.entries.refreshLeadMs(ttlMs))
            return this.adopt(id, ticket, hit, ttlMs) as T;
          const expiresAt = this.o.clock.now() + hit.remainingMs;
          // Stryker disable next-line EqualityOperator: (>=) of two that end together, either will do
          if (fallback === undefined || expiresAt > fallback.expiresAt)
            fallback = { value: hit.value, local: undefined, expiresAt };
        }
        if (this.o.fleetLoadWaitMs !== undefined) {
          const owner = randomUUID();
          if (await this.l2.claim(key, owner, this.o.fleetLoadWaitMs)) claim = owner;
          else {
            const loaded = await this.awaitFleet(key, id, ticket, ttlMs, context);
            if (loaded !== undefined) return loaded.value as T;
          }
        }
      }
      let value: T;
      countEvent('load', 'cache', this.name);
      try {
        value = await loader(context);
      } catch (error) {
        if (fallback === undefined) throw error;
        if (!ticket.stale) this.l1.set(id, this.entries.backedOff(fallback, this.o.clock.now()));
        return fallback.value as T;
      }
      if ((value !== undefined || this.o.cacheNotFound) && !ticket.stale)
        await this.keep(key, id, value, ttlMs, false);
      return value;
    } finally {
      this.tickets.end(id, ticket);
      if (claim !== undefined) this.l2!.release(key, claim);
    }
  }

  /**
   * Another process claimed the load: polls L2 for its value until `fleetLoadWaitMs` has passed.
   * Resolves the value when it came, undefined when it did not (then load it here).
   */
  private async awaitFleet(key: string, id: string, ticket: ReadTicket, ttlMs: number, context: LoadContext) {
    const { clock } = this.o;
    const until = clock.now() + this.o.fleetLoadWaitMs!;
    for (let delay = 10; clock.now() < until; delay = Math.min(delay * 2, 200)) {
      await clock.sleep(Math.min(delay, until - clock.now()), context.signal);
      const hit = await this.l2!.read(key);
      // Stryker disable next-line EqualityOperator: (>= 0) a value whose TTL ends this very ms; taking it or waiting on are both right
      if (hit !== undefined && hit.freshForMs > 0) return { value: this.adopt(id, ticket, hit, ttlMs) };
    }
    return undefined;
  }

  /** An L2 hit: copied into L1 for what is left of its times (unless invalidated meanwhile). */
  private adopt(id: string, ticket: ReadTicket, hit: RemoteHit, ttlMs: number): unknown {
    if (ticket.stale) return hit.value;
    const value = this.entries.kept(hit.value);
    const now = this.o.clock.now();
    this.l1.set(id, this.entries.adopted(value, now, hit.freshForMs, hit.remainingMs, ttlMs));
    return value;
  }

  /** Writes `value` to L1 and L2 (telling the other processes when `notify`: an explicit `set`). */
  private async keep(key: string, id: string, value: unknown, ttlMs: number, notify: boolean): Promise<void> {
    const ttl = this.entries.jitter(ttlMs);
    this.l1.set(id, this.entries.fresh(this.entries.kept(value), this.o.clock.now(), ttl));
    await this.l2?.write(key, value, ttl, this.o.graceMs, notify, notify);
  }

  /** `id` changed elsewhere: dropped from L1, and no read in flight writes it back. */
  private invalidate(id: string): void {
    this.l1.delete(id);
    this.tickets.invalidate(id);
  }

  /** The whole namespace changed (a clear), or messages may have been lost: L1 starts over. */
  private invalidateAll(): void {
    this.l1.deletePrefix(this.prefix);
    this.tickets.invalidateAll();
  }

  private reportLayerError(operation: LayerErrorEvent['operation'], key: string, error: unknown): void {
    // Stryker disable next-line ConditionalExpression: (true) emitting with no listener does nothing; the check only skips building the event
    if (this.layerErrors.active)
      this.layerErrors.emit({ policy: this.name, layer: 'remote', operation, key, error });
  }
}

function checkKey(key: unknown): string {
  if (typeof key !== 'string') throw new TypeError(`expected "key" to be a string, got ${show(key)}`);
  return key;
}

/**
 * A read-through cache over `layers`: `[memoryLayer({ maxEntries })]`, or with a remote layer
 * `[memoryLayer({ maxEntries }), redisStores(client).cacheLayer]`. See {@link ReadThroughCache}
 * and docs/cache.md. Throws a `TypeError` for a bad, missing or unknown option.
 *
 * @example
 * const users = readThroughCache({ layers: [memoryLayer({ maxEntries: 10_000 }), stores.cacheLayer], ttlMs: 60_000, graceMs: 600_000 });
 * const user = await users.get(`user:${id}`, ({ signal }) => db.findUser(id, { signal }), { signal: request.signal });
 */
export function readThroughCache(options: ReadThroughCacheOptions): ReadThroughCache {
  return new Cache(readCacheOptions(options));
}
