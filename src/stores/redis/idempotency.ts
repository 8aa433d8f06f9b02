import { randomUUID } from 'node:crypto';
import { positiveInteger, show } from '../../core/validate.js';
import type { ClaimResult, IdempotencyStore } from '../../idempotency/store.js';
import type { StoreDeadline } from './deadline.js';
import { claimScript, completeScript, releaseScript, renewScript } from './idempotency-scripts.js';
import { redisKey } from './keys.js';
import { RedisScript, type ScriptClient } from './script.js';

const claimLua = new RedisScript(claimScript);
const completeLua = new RedisScript(completeScript);
const releaseLua = new RedisScript(releaseScript);
const renewLua = new RedisScript(renewScript);

/** A connection's socket, as far as unref'ing it goes. */
interface Socket {
  readonly stream?: { unref?(): unknown } | undefined;
}

/** The part of an ioredis `Redis` or `Cluster` the subscriber uses (a `duplicate()` of the client). */
interface Subscriber extends Socket {
  readonly status?: string | undefined;
  on(event: string, listener: (...args: never[]) => void): unknown;
  subscribe(channel: string): Promise<unknown>;
  connect(): Promise<unknown>;
  disconnect(): void;
}

/** A client the idempotency store can use: runs scripts, reports its status, can be duplicated. */
export interface IdempotencyRedisClient extends ScriptClient {
  readonly status?: string | undefined;
  /** ioredis `duplicate()`: a new connection with the same options (for the wake subscriber). */
  duplicate?(): unknown;
}

/** One `watch` registration (an object, so the same function watched twice is two watchers). */
interface Watcher {
  readonly wake: () => void;
}

const noop = (): void => {};

/** Unrefs a connection's socket, so that it never keeps the process alive on its own. */
function unref(connection: Socket | undefined): void {
  connection?.stream?.unref?.();
}

/** A whole number of milliseconds Redis can take (`PEXPIRE`): a positive safe integer. */
function wholeMs(name: string, value: unknown): number {
  positiveInteger(name, value);
  if ((value as number) > Number.MAX_SAFE_INTEGER)
    throw new TypeError(`expected "${name}" to be a positive safe integer, got ${show(value)}`);
  return value as number;
}

/** A string Redis keeps byte for byte: well-formed UTF-16 (a lone surrogate would become U+FFFD). */
function text(name: string, value: unknown): string {
  if (typeof value !== 'string') throw new TypeError(`expected "${name}" to be a string, got ${show(value)}`);
  if (!(value as string & { isWellFormed(): boolean }).isWellFormed())
    throw new TypeError(
      `expected "${name}" to be well-formed UTF-16 (no lone surrogate), got ${show(value)}`,
    );
  return value;
}

/** A bulk string reply as a string (ioredis gives strings; a Buffer is decoded as UTF-8 alike). */
function replyText(value: unknown): string | undefined {
  if (typeof value === 'string') return value;
  if (value instanceof Uint8Array) return Buffer.from(value).toString('utf8');
  return undefined;
}

/**
 * The Redis idempotency store (`redisStores(client).idempotency`): one hash per key under
 * `<prefix>idem:{<key>}` (the user's key is its own hash tag, so Redis Cluster routes it), one Lua
 * script per operation, one round trip each (`EVALSHA`, reloaded on `NOSCRIPT`). Leases and
 * retention are the key's `PEXPIRE`, on the server's clock: an expired lease or retention is a free
 * key, and the client's clock is never read for a decision. Tokens are `crypto.randomUUID()`.
 *
 * Every call has the store deadline (`timeoutMs`, default 100 ms) and fails with
 * `StoreUnavailableError` (a dead, paused or reconnecting Redis); bad input rejects with a
 * `TypeError` before any call: an empty key or one with a lone surrogate, a fingerprint or result
 * that is not a well-formed string, a `leaseMs`/`ttlMs` that is not a positive safe integer. A call
 * that missed its deadline may still run on the server later; each is safe to land late (a late
 * claim holds the key only for its lease, as a crashed owner would).
 *
 * `complete` and `release` publish the key on `<prefix>idem:wake` in the same script; {@link watch}
 * listens on one subscriber connection per store set (see there).
 *
 * @example
 * const stores = redisStores(new Redis(process.env.REDIS_URL), { prefix: 'shop:' });
 * const payments = idempotency({ store: stores.idempotency, leaseMs: 10_000, ttlMs: 86_400_000 });
 * // at shutdown: await stores.close();
 */
export class RedisIdempotencyStore implements IdempotencyStore {
  /** The channel `complete` and `release` publish the user's key on: `<prefix>idem:wake`. */
  readonly channel: string;
  private readonly head: string;
  private readonly watchers = new Map<string, Set<Watcher>>();
  private subscriber: Subscriber | undefined;
  private closed = false;

  /** Use `redisStores(client, options).idempotency`. */
  constructor(
    private readonly client: IdempotencyRedisClient,
    prefix: string,
    private readonly deadline: StoreDeadline,
  ) {
    this.head = `${prefix}idem:{`;
    this.channel = `${prefix}idem:wake`;
  }

  /**
   * The Redis key holding `key`'s record, `<prefix>idem:{<key>}` (for tests and operations). Throws
   * a `TypeError` for a key that is not a non-empty, well-formed string.
   */
  keyOf(key: string): string {
    return redisKey(this.head, key);
  }

  /**
   * Claims `key` for `fingerprint` for `leaseMs` (the claim script: free → in progress with a fresh
   * token; else completed, in progress with its `PTTL`, or mismatch). See `IdempotencyStore.claim`.
   */
  claim(key: string, fingerprint: string, leaseMs: number): Promise<ClaimResult> {
    let args: (string | number)[];
    let record: string;
    try {
      record = this.keyOf(key);
      args = [text('fingerprint', fingerprint), randomUUID(), wholeMs('leaseMs', leaseMs)];
    } catch (error) {
      return Promise.reject(error);
    }
    return this.call(claimLua, record, args).then((reply) => {
      const claim = toClaim(reply, args[1] as string);
      if (claim === undefined) throw this.unexpected('claim', reply);
      return claim;
    });
  }

  /**
   * Stores `result` for `ttlMs` if `token` owns the key's live lease, and publishes the key on
   * {@link channel}, in one script. See `IdempotencyStore.complete`.
   */
  complete(key: string, token: string, result: string, ttlMs: number): Promise<boolean> {
    return this.owner('complete', completeLua, key, token, () => [
      text('result', result),
      wholeMs('ttlMs', ttlMs),
      this.channel,
      key,
    ]);
  }

  /**
   * Deletes the key if `token` owns its live lease, and publishes the key on {@link channel}, in
   * one script. See `IdempotencyStore.release`.
   */
  release(key: string, token: string): Promise<boolean> {
    return this.owner('release', releaseLua, key, token, () => [this.channel, key]);
  }

  /** `PEXPIRE`s the key to `leaseMs` if `token` owns its live lease. See `IdempotencyStore.renew`. */
  renew(key: string, token: string, leaseMs: number): Promise<boolean> {
    return this.owner('renew', renewLua, key, token, () => [wholeMs('leaseMs', leaseMs)]);
  }

  /**
   * Calls `wake` (later, never synchronously) each time `key` is completed or released by any
   * process publishing on this prefix; returns the unsubscribe function (idempotent). Never throws:
   * a bad key or `wake`, a client without `duplicate()`, or a closed store set gives a watch that
   * never wakes, and a throwing `wake` is ignored.
   *
   * The first watch opens the store set's one subscriber connection, `client.duplicate()` (a
   * subscribed connection cannot send commands), subscribed to `<prefix>idem:wake`; its socket is
   * unref'd, so it never keeps the process alive on its own (while it reconnects, ioredis's retry
   * timer does: `close()` the store set at shutdown). It stays open until `close()`. A notification
   * is a hint: one published while the subscriber is down or reconnecting is lost, so callers poll
   * as well. On Redis Cluster, `PUBLISH` is broadcast to every node, which costs cluster-bus traffic
   * but is correct wherever the subscriber is connected.
   */
  watch(key: string, wake: () => void): () => void {
    if (this.closed || typeof key !== 'string' || key === '' || typeof wake !== 'function') return noop;
    const watcher: Watcher = { wake };
    let watchers = this.watchers.get(key);
    if (watchers === undefined) {
      watchers = new Set();
      this.watchers.set(key, watchers);
    }
    watchers.add(watcher);
    try {
      this.listen();
    } catch {
      // No subscriber (e.g. duplicate() threw): waiters poll.
    }
    return () => {
      const current = this.watchers.get(key);
      if (current?.delete(watcher) === true && current.size === 0) this.watchers.delete(key);
    };
  }

  /**
   * Disconnects the subscriber connection, if {@link watch} opened one, and drops every watcher;
   * later watches never wake. The store's other calls go on working (they use the caller's client,
   * which is never closed here). Idempotent.
   */
  close(): void {
    this.closed = true;
    this.watchers.clear();
    const subscriber = this.subscriber;
    this.subscriber = undefined;
    subscriber?.disconnect();
  }

  /** Opens the subscriber connection, once. */
  private listen(): void {
    if (this.subscriber !== undefined) return;
    // Stryker disable next-line ConditionalExpression: without duplicate() the call below throws, and watch catches that alike
    if (typeof this.client.duplicate !== 'function') return;
    const subscriber = this.client.duplicate() as Subscriber;
    this.subscriber = subscriber;
    const channel = this.channel;
    subscriber.on('error', noop);
    subscriber.on('message', (from: string, message: string) => {
      if (from === channel) this.dispatch(message);
    });
    subscriber.on('connect', () => unref(subscriber));
    // A Cluster: each node connection, and the one it subscribes on (ioredis's own, private).
    subscriber.on('+node', (node: Subscriber) => node.on('connect', () => unref(node)));
    // Subscribed on every ready (after each reconnect too): an earlier SUBSCRIBE may have failed
    // (offline queue off, retries exhausted); SUBSCRIBE of a subscribed channel is a no-op.
    subscriber.on('ready', () => {
      unref(subscriber);
      subscriber.subscribe(channel).then(() => {
        const inner = (subscriber as { subscriber?: { getInstance?(): Socket } }).subscriber;
        unref(inner?.getInstance?.());
      }, noop);
    });
    if (subscriber.status === 'wait') subscriber.connect().catch(noop);
  }

  private dispatch(key: string): void {
    const watchers = this.watchers.get(key);
    if (watchers === undefined) return;
    for (const watcher of [...watchers]) {
      try {
        watcher.wake();
      } catch {
        // A throwing waker must not break the others, nor ioredis's event loop.
      }
    }
  }

  /** An owner operation: a compare-and-set on `token`, replying 1 (done) or 0 (not the owner). */
  private owner(
    what: string,
    script: RedisScript,
    key: string,
    token: string,
    argsOf: () => (string | number)[],
  ): Promise<boolean> {
    let record: string;
    let args: (string | number)[];
    try {
      record = this.keyOf(key);
      args = [text('token', token), ...argsOf()];
    } catch (error) {
      return Promise.reject(error);
    }
    return this.call(script, record, args).then((reply) => {
      if (reply === 1) return true;
      if (reply === 0) return false;
      throw this.unexpected(what, reply);
    });
  }

  private call(script: RedisScript, record: string, args: readonly (string | number)[]): Promise<unknown> {
    return this.deadline.run(this.client, () => script.run(this.client, [record], args));
  }

  private unexpected(what: string, reply: unknown): Error {
    return this.deadline.failure(new TypeError(`unexpected ${what} script reply: ${show(reply)}`));
  }
}

/** The claim script's reply as a result (`token` is the one sent), or undefined if malformed. */
function toClaim(reply: unknown, token: string): ClaimResult | undefined {
  if (!Array.isArray(reply)) return undefined;
  const status = replyText(reply[0]);
  if (status === 'claimed') return { status, token };
  if (status === 'mismatch') return { status };
  if (status === 'completed') {
    const result = replyText(reply[1]);
    return result === undefined ? undefined : { status, result };
  }
  if (status === 'in_progress' && Number.isFinite(reply[1]))
    return { status, retryAfterMs: Math.max(1, Math.ceil(reply[1])) };
  return undefined;
}
