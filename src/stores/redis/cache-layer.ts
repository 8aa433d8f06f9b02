import type { RemoteCacheEntry, RemoteCacheLayer } from '../../cache/store.js';
import type { StoreUnavailableError } from '../../core/errors.js';
import { show, storeKey } from '../../core/validate.js';
import { bumpScript, deleteScript, getScript, releaseLoadScript, setScript } from './cache-scripts.js';
import type { StoreDeadline } from './deadline.js';
import { redisAnyKey } from './keys.js';
import { RedisScript } from './script.js';
import { ScriptRunner, type ScriptRunnerClient } from './script-runner.js';
import { replySafeInteger, replyText, text, wholeMs } from './values.js';
import { RedisWakeups, type WakeupClient } from './wakeups.js';

const getLua = new RedisScript(getScript);
const setLua = new RedisScript(setScript);
const deleteLua = new RedisScript(deleteScript);
const bumpLua = new RedisScript(bumpScript);
const releaseLoadLua = new RedisScript(releaseLoadScript);

/**
 * A client the cache layer can use: runs scripts and two plain commands (`GET`, `SET … PX … NX`),
 * reports its status, can be duplicated (for the subscriber).
 */
export interface CacheRedisClient extends ScriptRunnerClient, WakeupClient {
  /** `GET key`: the value, or null. */
  get(key: string): Promise<unknown>;
  /** `SET key value PX ms NX`: `'OK'` when set, null when the key exists. */
  set(key: string, value: string, px: 'PX', ms: number, nx: 'NX'): Promise<unknown>;
}

/**
 * The Redis cache layer (`redisStores(client).cacheLayer`), L2 of a read-through cache: shared by
 * every process of a service, holding serialized payloads. Keeps the contract of
 * `RemoteCacheLayer` (see `cache/store.ts`):
 *
 * - **Keys.** An entry is `<prefix>cache:{<key>}` (a string `<graceMs>:<payload>`, its `PX`
 *   `ttlMs + graceMs`), a namespace's version `<prefix>cache-version:{<namespace>}` (an `INCR`
 *   counter, no TTL), a load claim `<prefix>cache-load:{<key>}` (the owner, the claim its `PX`).
 *   The cache's key is the hash tag; every call touches one key, so any key works on Redis
 *   Cluster, `''` and keys with braces included. Keys and namespaces are any well-formed string
 *   (`''` too); a lone surrogate is a `TypeError`, since the client would write it as U+FFFD and
 *   two keys would share an entry.
 * - **One round trip per call.** `get`, `set`, `delete`, `bumpVersion` and `releaseLoad` are one
 *   script each (`EVALSHA`, reloaded on `NOSCRIPT`; see `cache-scripts.ts`), `version` one `GET`,
 *   `claimLoad` one `SET NX PX`. `get` reads the value and its `PTTL` in one reply.
 * - **Time** is the server's: an entry ends at its `PX`, and `remainingMs` is its `PTTL`.
 * - **Messages** go to `<prefix>cache:bus`, published in the same script as the write they
 *   announce; {@link subscribe} hears them on the store set's one subscriber connection.
 * - **Failure.** Every call has the store set's deadline (`timeoutMs`, default 100 ms) and fails
 *   with `StoreUnavailableError`: a dead, paused or reconnecting Redis, a key of another type, or a
 *   stored value or reply out of shape (never reported as a hit, a miss or a version). Bad input
 *   rejects with a `TypeError` naming the argument before anything is sent. A call that missed its
 *   deadline may still run on the server: a late `set` writes what was asked, a late `claimLoad`
 *   holds the claim for its TTL under an owner who never learns of it (as a crashed loader would).
 *
 * @example
 * const stores = redisStores(new Redis(process.env.REDIS_URL), { prefix: 'shop:' });
 * const cache = readThroughCache({ layers: [memoryLayer({ maxEntries: 10_000 }), stores.cacheLayer], ttlMs: 60_000 });
 * // at shutdown: await stores.close();
 */
export class RedisCacheLayer implements RemoteCacheLayer {
  /** `'remote'`: this is an L2. */
  readonly kind = 'remote' as const;
  /** The store set's deadline of one call, in ms. */
  readonly timeoutMs: number;
  /** The channel every message of this layer is published on: `<prefix>cache:bus`. */
  readonly channel: string;
  private readonly head: string;
  private readonly versionHead: string;
  private readonly claimHead: string;
  private readonly scripts: ScriptRunner;

  /** Use `redisStores(client, options).cacheLayer`. */
  constructor(
    private readonly client: CacheRedisClient,
    prefix: string,
    private readonly deadline: StoreDeadline,
    private readonly wakeups: RedisWakeups = new RedisWakeups(client),
  ) {
    this.scripts = new ScriptRunner(client, deadline);
    this.timeoutMs = deadline.timeoutMs;
    this.head = `${prefix}cache:{`;
    this.versionHead = `${prefix}cache-version:{`;
    this.claimHead = `${prefix}cache-load:{`;
    this.channel = `${prefix}cache:bus`;
  }

  /**
   * The Redis key of `key`'s entry, `<prefix>cache:{<key>}` (for tests and operations). Throws a
   * `TypeError` for a key that is not a well-formed string (`''` is fine).
   */
  keyOf(key: string): string {
    return redisAnyKey(this.head, key);
  }

  /** The Redis key of `namespace`'s version, `<prefix>cache-version:{<namespace>}`; as {@link keyOf}. */
  versionKeyOf(namespace: string): string {
    return redisAnyKey(this.versionHead, namespace, 'namespace');
  }

  /** The Redis key of `key`'s load claim, `<prefix>cache-load:{<key>}`; as {@link keyOf}. */
  claimKeyOf(key: string): string {
    return redisAnyKey(this.claimHead, key);
  }

  /**
   * The entry of `key` with its grace and what is left of it (`PTTL`, the server's clock), read in
   * one script; `undefined` when absent or ended. A stored value that is not `<graceMs>:<payload>`
   * with a TTL rejects with `StoreUnavailableError`, never a hit or a miss.
   */
  get(key: string): Promise<RemoteCacheEntry | undefined> {
    return this.scripts.run(
      getLua,
      1,
      () => [this.keyOf(key)],
      (reply) => {
        if (reply === null) return undefined;
        const entry = toEntry(reply);
        if (entry === undefined) throw this.scripts.unexpected('get', reply);
        return entry;
      },
    );
  }

  /**
   * `SET`s `payload` under `key` with `PX ttlMs + graceMs`, replacing any entry, and publishes
   * `message` (when given) on {@link channel}, in one script. `ttlMs` must be a positive safe
   * integer, `graceMs` a non-negative safe integer (their sum safe too), `payload` and `message`
   * well-formed strings: a `TypeError` otherwise, nothing sent.
   */
  set(key: string, payload: string, ttlMs: number, graceMs: number, message?: string): Promise<void> {
    return this.scripts.run(
      setLua,
      1,
      () => {
        const sent: (string | number)[] = [
          this.keyOf(key),
          `${graceOf(graceMs)}:${text('payload', payload)}`,
          lifetimeOf(ttlMs, graceMs),
        ];
        if (message !== undefined) sent.push(this.channel, text('message', message));
        return sent;
      },
      (reply) => this.done('set', reply),
    );
  }

  /** `DEL`s `key`'s entry and publishes `message` (when given), in one script. */
  delete(key: string, message?: string): Promise<void> {
    return this.scripts.run(
      deleteLua,
      1,
      () =>
        message === undefined ? [this.keyOf(key)] : [this.keyOf(key), this.channel, text('message', message)],
      (reply) => this.done('delete', reply),
    );
  }

  /** The version of `namespace`, one `GET`: 0 while its key is absent. */
  version(namespace: string): Promise<number> {
    return this.command(
      () => {
        const key = this.versionKeyOf(namespace);
        return () => this.client.get(key);
      },
      (reply) => {
        if (reply === null) return 0;
        const version = replySafeInteger(replyText(reply));
        if (version === undefined) throw this.unexpected('version', reply);
        return version;
      },
    );
  }

  /**
   * `INCR`s the version of `namespace` and publishes `message` (when given) on {@link channel}, in
   * one script; resolves the new version. `message` is published as given: a `TypeError` for one
   * that is not a well-formed string, nothing sent.
   */
  bumpVersion(namespace: string, message?: string): Promise<number> {
    return this.scripts.run(
      bumpLua,
      1,
      () => {
        const key = this.versionKeyOf(namespace);
        return message === undefined ? [key] : [key, this.channel, text('message', message)];
      },
      (reply) => {
        const version = replySafeInteger(reply);
        if (typeof reply !== 'number' || version === undefined || version < 1)
          throw this.scripts.unexpected('bumpVersion', reply);
        return version;
      },
    );
  }

  /**
   * Claims the load of `key` for `owner` for `ttlMs`, one `SET NX PX`: true when no live claim
   * existed (this one is now it), false otherwise. `owner` must be a non-empty well-formed string
   * and `ttlMs` a positive safe integer: a `TypeError` otherwise.
   */
  claimLoad(key: string, owner: string, ttlMs: number): Promise<boolean> {
    return this.command(
      () => {
        const claim = this.claimKeyOf(key);
        const who = storeKey('owner', owner);
        const ms = wholeMs('ttlMs', ttlMs);
        return () => this.client.set(claim, who, 'PX', ms, 'NX');
      },
      (reply) => {
        if (reply === 'OK') return true;
        if (reply === null) return false;
        throw this.unexpected('claimLoad', reply);
      },
    );
  }

  /** Ends `owner`'s claim on `key` (a compare-and-delete script); another owner's is left alone. */
  releaseLoad(key: string, owner: string): Promise<void> {
    return this.scripts.run(
      releaseLoadLua,
      1,
      () => [this.claimKeyOf(key), storeKey('owner', owner)],
      (reply) => {
        if (reply !== 1 && reply !== 0) throw this.scripts.unexpected('releaseLoad', reply);
      },
    );
  }

  /**
   * Calls `onMessage` with every message published on {@link channel} (by any process, this one
   * included) and `onReset` each time the channel is (re)subscribed: once the first `SUBSCRIBE`
   * took hold (messages published before it, about one round trip, were not heard), and after each
   * reconnect (messages may have been lost meanwhile); returns the unsubscribe function
   * (idempotent). Listens on the store set's one subscriber connection (`client.duplicate()`,
   * opened by the first subscription or watch, unref'd); the channel stays subscribed until
   * {@link close}. Never throws: a listener that is not a function, or a closed layer, gives a
   * subscription that is never called, and a throwing listener is ignored.
   */
  subscribe(onMessage: (message: string) => void, onReset: () => void): () => void {
    return this.wakeups.listen(this.channel, onMessage, onReset);
  }

  /**
   * Stops this layer's messages: its subscriptions are dropped and later ones are never called
   * (the store set's subscriber is disconnected when no other store of the set uses it). The
   * layer's other calls go on working. Idempotent.
   */
  close(): void {
    this.wakeups.drop(this.channel);
  }

  /** One plain command under the deadline; `prepare` checks the input and returns the call. */
  private command<T>(prepare: () => () => PromiseLike<unknown>, read: (reply: unknown) => T): Promise<T> {
    let call: () => PromiseLike<unknown>;
    try {
      call = prepare();
    } catch (error) {
      return Promise.reject(error);
    }
    return this.deadline.run(this.client, call).then(read);
  }

  /** The failure of a `what` command that replied out of shape (a `StoreUnavailableError`). */
  private unexpected(what: string, reply: unknown): StoreUnavailableError {
    return this.deadline.failure(new TypeError(`unexpected ${what} reply: ${show(reply)}`));
  }

  /** A write script's reply: 1, or the script is out of shape. */
  private done(what: string, reply: unknown): void {
    if (reply !== 1) throw this.scripts.unexpected(what, reply);
  }
}

/** A grace in ms: a non-negative safe integer (0 is an entry with no grace). */
function graceOf(graceMs: unknown): number {
  if (!Number.isSafeInteger(graceMs) || (graceMs as number) < 0)
    throw new TypeError(`expected "graceMs" to be a non-negative safe integer, got ${show(graceMs)}`);
  return graceMs as number;
}

/** An entry's whole life, `ttlMs + graceMs`, as `PX` takes it: a safe integer. */
function lifetimeOf(ttlMs: number, graceMs: number): number {
  const total = wholeMs('ttlMs', ttlMs) + graceMs;
  if (!Number.isSafeInteger(total))
    throw new TypeError(
      `expected "ttlMs" + "graceMs" to be at most ${Number.MAX_SAFE_INTEGER}, got ${ttlMs} + ${graceMs}`,
    );
  return total;
}

/**
 * The get script's `'<remainingMs>:<graceMs>:<payload>'` as an entry, or undefined if malformed
 * (a `remainingMs` below 1, e.g. `-1` for a key without TTL, or a part that is not decimal).
 */
function toEntry(reply: unknown): RemoteCacheEntry | undefined {
  const value = replyText(reply);
  if (value === undefined) return undefined;
  const first = value.indexOf(':');
  const second = value.indexOf(':', first + 1);
  // Without two colons (with none, both are -1).
  // Stryker disable next-line EqualityOperator: (<= 0) a second colon is never at 0
  if (second < 0) return undefined;
  const remainingMs = replySafeInteger(value.slice(0, first));
  const graceMs = replySafeInteger(value.slice(first + 1, second));
  if (remainingMs === undefined || remainingMs < 1 || graceMs === undefined) return undefined;
  return { payload: value.slice(second + 1), graceMs, remainingMs };
}
