import { storeKey } from '../../core/validate.js';
import { leaseMs } from '../../lock/memory-store.js';
import type { AcquiredLease, LockStore } from '../../lock/store.js';
import type { StoreDeadline } from './deadline.js';
import { taggedKey } from './keys.js';
import { acquireScript, markScript, releaseScript, renewScript } from './lock-scripts.js';
import { RedisScript } from './script.js';
import { ScriptRunner, type ScriptRunnerClient } from './script-runner.js';
import { replySafeInteger, replyText } from './values.js';
import { RedisWakeups, type WakeupClient } from './wakeups.js';

const acquireLua = new RedisScript(acquireScript);
const renewLua = new RedisScript(renewScript);
const releaseLua = new RedisScript(releaseScript);
const markLua = new RedisScript(markScript);
const noop = (): void => {};

/** A client the lock store can use: runs scripts, reports its status, can be duplicated. */
export interface LockRedisClient extends ScriptRunnerClient, WakeupClient {}

/**
 * The Redis lock store (`redisStores(client).lock`); pass it as `distributedLock({ store })`. Keeps
 * the contract of `LockStore` (see `lock/store.ts`):
 *
 * - **Keys.** The lease is `<prefix>lock:{<key>}` (a string: the owner, the lease its `PEXPIRE`),
 *   the last fence `<prefix>lock:{<key>}:fence` (no TTL). Both carry the user's key as their hash
 *   tag, so Redis Cluster keeps them on one slot.
 * - **Atomicity.** One Lua script per operation, one round trip each (`EVALSHA`, reloaded on
 *   `NOSCRIPT`): `acquire` takes a missing (free or expired) key only; `renew` (`PEXPIRE`) and
 *   `release` (`DEL`) compare the owner first, so a stale owner never touches a successor's lease.
 *   Uncontended, a cycle is two round trips and five commands inside Redis (`SET NX PX`, `TIME`,
 *   `SET … GET` of the fence; `GET` and `DEL`).
 * - **Fences** are `max(last fence + 1, Redis TIME in µs)`, so they keep increasing even after
 *   Redis lost the fence key (a flush, a failover that lost the last write): see
 *   `lock-scripts.ts`. The fence keys are never deleted: one small key per lock key ever used.
 * - **Time** is the server's: `TIME` and `PEXPIRE`. `expiresAt` is on the server's clock.
 * - **Failure.** Every call has the store set's deadline (`timeoutMs`, default 100 ms) and fails
 *   with `StoreUnavailableError` (a dead, paused or reconnecting Redis, a reply of the wrong
 *   shape); bad input rejects with a `TypeError` before any call (an empty or ill-formed key or
 *   owner, a `ttlMs` that is not a positive safe integer). A call that missed its deadline may
 *   still run on the server: a late `acquire` holds the key for one lease under an owner who never
 *   learns of it, like a crashed holder.
 *
 * `release` publishes the lock's Redis key on `<prefix>lock:wake` in the same script, but only when
 * a waiter marked the lease (see `lock-scripts.ts`): {@link watch} marks it and listens on the
 * store set's one subscriber connection, and while this process watches a key each refused
 * `acquire` of it marks the lease it found. A lock nobody waits for publishes nothing.
 *
 * A key beginning with `}` makes an empty hash tag, and Redis Cluster then hashes each of the two
 * keys whole: on a Cluster such a key fails (`CROSSSLOT`, a `StoreUnavailableError`), on a single
 * Redis it works.
 *
 * @example
 * const stores = redisStores(new Redis(process.env.REDIS_URL), { prefix: 'shop:' });
 * const locks = distributedLock({ store: stores.lock });
 * await locks.withLock('report:daily', ({ signal, fence }) => build(signal, fence), { ttlMs: 30_000 });
 * // at shutdown: await stores.close();
 */
export class RedisLockStore implements LockStore {
  /** The store set's deadline of one call, in ms (a lock's `ttlMs` must be at least 3 × this). */
  readonly timeoutMs: number;
  /** The channel `release` publishes an awaited lock's Redis key on: `<prefix>lock:wake`. */
  readonly channel: string;
  private readonly head: string;
  private readonly scripts: ScriptRunner;

  /** Use `redisStores(client, options).lock`. */
  constructor(
    client: LockRedisClient,
    prefix: string,
    deadline: StoreDeadline,
    private readonly wakeups: RedisWakeups = new RedisWakeups(client),
  ) {
    this.scripts = new ScriptRunner(client, deadline);
    this.timeoutMs = deadline.timeoutMs;
    this.head = `${prefix}lock:{`;
    this.channel = `${prefix}lock:wake`;
  }

  /**
   * The Redis key holding `key`'s lease, `<prefix>lock:{<key>}` (for tests and operations; a key
   * starting with `}` or NUL gets a NUL in front, so the lease and its fence share a hash tag: see
   * `taggedKey`); its fence key is this followed by `:fence`. Throws a `TypeError` for a key that is
   * not a non-empty, well-formed string.
   */
  keyOf(key: string): string {
    return taggedKey(this.head, key);
  }

  /**
   * Takes `key` for `owner` for `ttlMs` if no lease is live, with the next fence (one script).
   * Resolves the lease, or `undefined` when it is held (by anyone, `owner` too). See
   * `LockStore.acquire`.
   */
  acquire(key: string, owner: string, ttlMs: number): Promise<AcquiredLease | undefined> {
    return this.scripts.run(
      acquireLua,
      2,
      () => {
        const lock = this.keyOf(key);
        const sent = [lock, `${lock}:fence`, storeKey('owner', owner), leaseMs('ttlMs', ttlMs)];
        // A waiter of this process retries: the lease it is refused by is marked as awaited.
        if (this.wakeups.watching(this.channel, lock)) sent.push(1);
        return sent;
      },
      (reply) => {
        if (reply === 0) return undefined;
        const lease = toLease(reply, ttlMs);
        if (lease === undefined) throw this.scripts.unexpected('acquire', reply);
        return lease;
      },
    );
  }

  /**
   * `PEXPIRE`s the lease to `ttlMs` from now (the server's clock) if `owner` holds it. See
   * `LockStore.renew`.
   */
  renew(key: string, owner: string, ttlMs: number): Promise<boolean> {
    return this.scripts.owned('renew', renewLua, () => [
      this.keyOf(key),
      storeKey('owner', owner),
      leaseMs('ttlMs', ttlMs),
    ]);
  }

  /**
   * Deletes the lease if `owner` holds it, and, if a waiter marked it, publishes its Redis key on
   * {@link channel}, in one script. The fence key stays. See `LockStore.release`.
   */
  release(key: string, owner: string): Promise<boolean> {
    return this.scripts.owned('release', releaseLua, () => [
      this.keyOf(key),
      storeKey('owner', owner),
      this.channel,
    ]);
  }

  /**
   * Calls `wake` (later, never synchronously) each time `key` is released by any process
   * publishing on this prefix; returns the unsubscribe function (idempotent). Never throws: a bad
   * key or `wake`, a client without `duplicate()`, or a closed store gives a watch that never
   * wakes, and a throwing `wake` is ignored.
   *
   * Marks the key's live lease as awaited (one script, not awaited: a failure only leaves the
   * waiter to poll), so that its release publishes; a lease taken later is marked by this
   * process's next refused `acquire` of the key. The first watch of the store set (this store's or
   * the idempotency store's) opens its one subscriber connection, `client.duplicate()`, which
   * subscribes to `<prefix>lock:wake`; its socket is unref'd, so it never keeps the process alive
   * on its own. A notification is a hint: one published while the subscriber is down or
   * reconnecting is lost, and `distributedLock` polls as well.
   */
  watch(key: string, wake: () => void): () => void {
    let lock: string;
    // Stryker disable BlockStatement: (the catch emptied) an undefined key is refused by the wake-ups as well, which then send no mark
    try {
      lock = this.keyOf(key);
    } catch {
      return noop;
    }
    // Stryker restore BlockStatement
    const unwatch = this.wakeups.watch(this.channel, lock, wake);
    if (this.wakeups.watching(this.channel, lock))
      this.scripts.run(markLua, 1, () => [lock], noop).catch(noop);
    return unwatch;
  }

  /**
   * Stops this store's notifications: its watchers are dropped and later watches never wake (the
   * store set's subscriber is disconnected when no other store of the set uses it). The store's
   * other calls go on working. Idempotent.
   */
  close(): void {
    this.wakeups.drop(this.channel);
  }
}

/**
 * The acquire script's `'<fence>:<sec>:<µs>'` as a lease ending `ttlMs` after that server time, or
 * undefined if malformed.
 */
function toLease(reply: unknown, ttlMs: number): AcquiredLease | undefined {
  const text = replyText(reply);
  if (text === undefined) return undefined;
  const first = text.indexOf(':');
  const second = text.indexOf(':', first + 1);
  // Without two colons (with none, both are -1).
  // Stryker disable next-line EqualityOperator: (<= 0) a second colon is never at 0
  if (second < 0) return undefined;
  const fence = replySafeInteger(text.slice(0, first));
  const sec = replySafeInteger(text.slice(first + 1, second));
  const micros = replySafeInteger(text.slice(second + 1));
  // Stryker disable next-line ConditionalExpression: (false) for sec or micros, expiresAt would be NaN and refused below; the other terms are killed by the malformed replies
  if (fence === undefined || fence < 1 || sec === undefined || micros === undefined || micros >= 1e6)
    return undefined;
  const expiresAt = sec * 1_000 + Math.floor(micros / 1_000) + ttlMs;
  return Number.isSafeInteger(expiresAt) ? { fence, expiresAt } : undefined;
}
