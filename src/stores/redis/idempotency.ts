import { randomUUID } from 'node:crypto';
import type { ClaimResult, IdempotencyStore } from '../../idempotency/store.js';
import type { StoreDeadline } from './deadline.js';
import {
  claimScript,
  completeScript,
  markScript,
  releaseScript,
  renewScript,
} from './idempotency-scripts.js';
import { redisKey } from './keys.js';
import { RedisScript } from './script.js';
import { ScriptRunner, type ScriptRunnerClient } from './script-runner.js';
import { replyText, text, wholeMs } from './values.js';
import { RedisWakeups, type WakeupClient } from './wakeups.js';

const claimLua = new RedisScript(claimScript);
const completeLua = new RedisScript(completeScript);
const releaseLua = new RedisScript(releaseScript);
const renewLua = new RedisScript(renewScript);
const markLua = new RedisScript(markScript);
const noop = (): void => {};

/** A client the idempotency store can use: runs scripts, reports its status, can be duplicated. */
export interface IdempotencyRedisClient extends ScriptRunnerClient, WakeupClient {}

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
 * `complete` and `release` publish the key on `<prefix>idem:wake` in the same script when a
 * waiting duplicate marked the record (see `idempotency-scripts.ts`): {@link watch} marks it and
 * listens on one subscriber connection per store set, and while this process watches a key each
 * claim that finds it in progress marks it too. A request nobody waits for publishes nothing.
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
  private readonly scripts: ScriptRunner;

  /** Use `redisStores(client, options).idempotency`. */
  constructor(
    client: IdempotencyRedisClient,
    prefix: string,
    deadline: StoreDeadline,
    private readonly wakeups: RedisWakeups = new RedisWakeups(client),
  ) {
    this.scripts = new ScriptRunner(client, deadline);
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
    const token = randomUUID();
    return this.scripts.run(
      claimLua,
      1,
      () => {
        const sent = [this.keyOf(key), text('fingerprint', fingerprint), token, wholeMs('leaseMs', leaseMs)];
        // A duplicate of this process waits: a record still in progress is marked as awaited.
        if (this.wakeups.watching(this.channel, key)) sent.push('1');
        return sent;
      },
      (reply) => {
        const claim = toClaim(reply, token);
        if (claim === undefined) throw this.scripts.unexpected('claim', reply);
        return claim;
      },
    );
  }

  /**
   * Stores `result` for `ttlMs` if `token` owns the key's live lease, and publishes the key on
   * {@link channel} if a waiter marked it, in one script. See `IdempotencyStore.complete`.
   */
  complete(key: string, token: string, result: string, ttlMs: number): Promise<boolean> {
    return this.scripts.owned('complete', completeLua, () => [
      this.keyOf(key),
      text('token', token),
      text('result', result),
      wholeMs('ttlMs', ttlMs),
      this.channel,
      key,
    ]);
  }

  /**
   * Deletes the key if `token` owns its live lease, and publishes the key on {@link channel} if a
   * waiter marked it, in one script. See `IdempotencyStore.release`.
   */
  release(key: string, token: string): Promise<boolean> {
    return this.scripts.owned('release', releaseLua, () => [
      this.keyOf(key),
      text('token', token),
      this.channel,
      key,
    ]);
  }

  /** `PEXPIRE`s the key to `leaseMs` if `token` owns its live lease. See `IdempotencyStore.renew`. */
  renew(key: string, token: string, leaseMs: number): Promise<boolean> {
    return this.scripts.owned('renew', renewLua, () => [
      this.keyOf(key),
      text('token', token),
      wholeMs('leaseMs', leaseMs),
    ]);
  }

  /**
   * Calls `wake` (later, never synchronously) each time `key` is completed or released by any
   * process publishing on this prefix; returns the unsubscribe function (idempotent). Never throws:
   * a bad key or `wake`, a client without `duplicate()`, or a closed store set gives a watch that
   * never wakes, and a throwing `wake` is ignored.
   *
   * Marks the key's record in progress as awaited (one script, not awaited: a failure only leaves
   * the waiter to poll), so that its completion or release publishes; a record claimed later is
   * marked by this process's next claim of the key that finds it in progress (the contract
   * promises a wake-up only to a watcher whose claim saw the key in progress, as `idempotency()`
   * watches).
   *
   * The first watch of the store set (this store's or the lock store's) opens its one subscriber
   * connection, `client.duplicate()` (a subscribed connection cannot send commands), which
   * subscribes to `<prefix>idem:wake`; its socket is unref'd, so it never keeps the process alive on
   * its own (while it reconnects, ioredis's retry timer does: `close()` the store set at shutdown).
   * It stays open until `close()`. A notification is a hint: one published while the subscriber is
   * down or reconnecting is lost, so callers poll as well. On Redis Cluster, `PUBLISH` is broadcast
   * to every node, which costs cluster-bus traffic but is correct wherever the subscriber is
   * connected.
   */
  watch(key: string, wake: () => void): () => void {
    const unwatch = this.wakeups.watch(this.channel, key, wake);
    if (this.wakeups.watching(this.channel, key)) {
      this.scripts.run(markLua, 1, () => [this.keyOf(key)], noop).catch(noop);
    }
    return unwatch;
  }

  /**
   * Stops this store's notifications: its watchers are dropped and later watches never wake (the
   * store set's subscriber is disconnected when no other store of the set uses it). The store's
   * other calls go on working (they use the caller's client, which is never closed here).
   * Idempotent.
   */
  close(): void {
    this.wakeups.drop(this.channel);
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
